"""GPIO sensors through gpiozero's MockFactory, with the debounce clock driven by hand."""

from __future__ import annotations

import asyncio
from types import MappingProxyType

from gpiozero.pins.mock import MockFactory

from devices.base import DeviceEvent as Event
from devices.sensors.config import GpioConfig
from devices.sensors.debounce import CHATTER, LEVEL, STUCK, Change, Debouncer
from devices.sensors.gpio import GpioSensors
from tests.support.devices import run


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def sensors(clock: Clock, **kw) -> GpioSensors:  # type: ignore[no-untyped-def]
    cfg = GpioConfig(
        pin_factory="mock",
        chung=(4, 5, 6),
        off=(12, 13, 14),
        keypad=MappingProxyType({"shake": 20, "void": 21}),
        table_closed=27,
        debounce_ms=20,
    )
    return GpioSensors(cfg, boxes=3, factory=MockFactory(), clock=clock, stuck_s=2.0, **kw)


async def started() -> tuple[Clock, GpioSensors, list[Event]]:
    """A started GpioSensors on mock pins, its clock, and the events it emits from now on
    (what it reports about the levels it found at start is cleared)."""
    clock = Clock()
    dev = sensors(clock)
    events: list[Event] = []
    await dev.start(events.append)
    await asyncio.sleep(0)
    events.clear()
    return clock, dev, events


async def step(dev: GpioSensors, clock: Clock, dt: float) -> None:
    """Let gpiozero's hand-overs run, move the clock, look at the inputs."""
    await asyncio.sleep(0)
    clock.t += dt
    dev.poll_inputs()
    await asyncio.sleep(0)
    await asyncio.sleep(0)


def test_debouncer_settles_and_reports_chatter_and_stuck() -> None:
    d = Debouncer(0.02, initial=False, now=0.0, chatter_edges=4, chatter_window_s=1.0,
                  quiet_s=0.5, stuck_s=3.0)  # fmt: skip
    d.feed(True, 1.0)
    assert d.poll(1.01) == []
    assert d.poll(1.02) == [Change(LEVEL, True)]
    assert d.poll(4.02) == [Change(STUCK, True)]
    d.feed(False, 5.0)
    assert d.poll(5.03) == [Change(LEVEL, False), Change(STUCK, False)]
    for i, level in enumerate([True, False, True, False]):
        d.feed(level, 6.0 + i * 0.01)
    assert d.poll(6.1) == [Change(CHATTER, True)]
    assert d.poll(6.4) == []
    assert d.poll(6.6) == [Change(CHATTER, False)]  # quiet, and back where it was: no level


def test_a_clean_press_and_release_are_edges_once() -> None:
    async def go() -> None:
        clock = Clock()
        dev = sensors(clock)
        events: list[Event] = []
        await dev.start(events.append)
        await asyncio.sleep(0)
        events.clear()  # the key switch's initial "open"
        pin = dev.pin_of("chung2")
        pin.drive_low()  # a switch to ground closes
        await step(dev, clock, 0.005)
        pin.drive_high()  # ...bounces open
        await step(dev, clock, 0.005)
        pin.drive_low()  # ...and closes for good
        await step(dev, clock, 0.01)
        assert events == []  # nothing before it held 20 ms
        await step(dev, clock, 0.02)
        assert events == [Event("chung.on", {"box": 2})]
        dev.release("chung2")
        await step(dev, clock, 0.03)
        assert events[-1] == Event("chung.off", {"box": 2})
        assert dev.inputs()["chung"] == []
        await dev.stop()

    run(go)


def test_keypad_acts_on_release_and_never_when_stuck() -> None:
    async def go() -> None:
        clock, dev, events = await started()
        dev.press("keypad.shake")
        await step(dev, clock, 0.1)
        assert events == []
        dev.release("keypad.shake")
        await step(dev, clock, 0.03)
        assert events == [Event("dealer.shake", {})]
        dev.press("keypad.void")  # held down: stuck, or leaned on
        await step(dev, clock, 0.03)
        await step(dev, clock, 2.5)
        assert dev.problems == {"keypad.void": "stuck"} and dev.counters["stuck"] == 1
        dev.release("keypad.void")
        await step(dev, clock, 0.03)
        assert events == [Event("dealer.shake", {})]  # the stuck void was never acted on
        assert dev.problems == {}
        await dev.stop()

    run(go)


def test_a_chattering_sensor_is_reported_and_not_acted_on() -> None:
    async def go() -> None:
        clock, dev, events = await started()
        for _ in range(10):  # a loose wire: 20 edges in 200 ms, each held 10 ms
            dev.press("off1")
            await step(dev, clock, 0.01)
            dev.release("off1")
            await step(dev, clock, 0.01)
        dev.press("off1")  # ...it ends up pressed
        await step(dev, clock, 0.05)
        assert events == [] and dev.problems == {"off1": "chattering"}
        assert dev.selftest is not None and not (await dev.selftest())["ok"]
        await step(dev, clock, 1.5)  # quiet for a second: it counts now, once
        assert events == [Event("off.pressed", {"box": 1})]
        assert dev.problems == {}
        await dev.stop()

    run(go)


def test_key_switch_opens_at_start_and_closes_the_table() -> None:
    async def go() -> None:
        clock = Clock()
        dev = sensors(clock)
        events: list[Event] = []
        await dev.start(events.append)
        await asyncio.sleep(0)
        assert events == [Event("table.open", {})]
        dev.press("table_closed")
        await step(dev, clock, 0.05)
        assert events[-1] == Event("table.close", {}) and dev.table_open is False
        await dev.stop()

    run(go)


def test_lamps_drive_their_pins() -> None:
    async def go() -> None:
        clock = Clock()
        cfg = GpioConfig(pin_factory="mock", bet_sensor=(4, 5), lamp=(6, 7), debounce_ms=20)
        dev = GpioSensors(cfg, boxes=2, factory=MockFactory(), clock=clock)
        await dev.start(lambda e: None)
        await dev.command("lamps", {"box": 1, "state": "bet"})
        await dev.command("lamps", {"box": 2, "state": "idle"})
        leds = dev._lamp_devices
        assert leds[1].pin.state and not leds[2].pin.state
        await dev.command("lamps", {"state": "win"})  # every lamp blinks
        assert dev.lamps == {1: "win", 2: "win"}
        # gpiozero blinks from a thread of its own: wait for it to switch (a loaded machine
        # starts that thread late), with a bound; a lamp that stays lit never gets there.
        for _ in range(200):
            if len(leds[1].pin.states) > 3 and len(leds[2].pin.states) > 3:
                break
            await asyncio.sleep(0.05)
        assert len(leds[1].pin.states) > 3 and len(leds[2].pin.states) > 3  # switching
        await dev.stop()

    run(go)


def test_edges_from_another_thread_reach_the_loop() -> None:
    async def go() -> None:
        clock, dev, events = await started()
        await asyncio.to_thread(dev.press, "chung3")  # as gpiozero's callback thread would
        await step(dev, clock, 0.05)
        assert events == [Event("chung.on", {"box": 3})]
        await dev.stop()

    run(go)
