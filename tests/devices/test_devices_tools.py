"""The device service tests on the real drivers: the lamp walk and the button test on
gpiozero's mock pins, the serial loopback through a pty with a loopback plug at its end."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory, MockPin

from devices.base import DeviceEvent as Event
from devices.errors import DeviceError
from devices.proto.wire_sim import LoopbackPlug
from devices.sensors.config import GpioConfig
from devices.sensors.gpio import GpioSensors
from devices.shaker.driver import SerialShaker
from devices.shaker.wire import PtyShakerSim
from devices.tools.buttons import prompt, prompts, wait_for_press
from devices.tools.lamps import lamp_walk
from devices.tools.loopback import PATTERN, line_of, loopback
from tests.support.devices import run, serial_cfg, until

LAMPS = (12, 13, 14)


async def uth_sensors(events: list[Event]) -> tuple[GpioSensors, MockFactory]:
    factory = MockFactory()
    cfg = GpioConfig(
        pin_factory="mock", bet_sensor=(4, 5, 6), lamp=LAMPS,
        keypad=MappingProxyType({"deal": 20}), table_closed=27, debounce_ms=10,
    )  # fmt: skip
    dev = GpioSensors(cfg, boxes=3, factory=factory)
    await dev.start(events.append)
    await asyncio.sleep(0.05)
    events.clear()  # the open key switch at start
    return dev, factory


# --- lamp walk ----------------------------------------------------------------------------------


def test_the_lamp_walk_lights_each_lamp_alone_and_restores_them() -> None:
    async def go() -> None:
        dev, factory = await uth_sensors([])
        await dev.command("lamps", {"box": 2, "state": "bet"})
        seen: list[list[int]] = []

        async def look(_: float) -> None:  # the pins themselves, at each step of the walk
            seen.append([p for p in LAMPS if factory.pin(p).state])

        walk = await lamp_walk(dev, 0.05, sleep=look)
        assert seen == [[12], [13], [14]]
        assert walk["ok"] and [s["box"] for s in walk["steps"]] == [1, 2, 3]
        assert [s["pin"] for s in walk["steps"]] == list(LAMPS)
        assert walk["restored"] == {"1": "idle", "2": "bet", "3": "idle"}
        assert [p for p in LAMPS if factory.pin(p).state] == [13]  # as before the walk
        await dev.stop()

    run(go)


def test_a_lamp_whose_pin_does_not_follow_fails_the_walk() -> None:
    async def go() -> None:
        dev, _ = await uth_sensors([])
        dev._lamp_devices[3].on = lambda: None  # a dead lamp driver: asked, never driven
        walk = await lamp_walk(dev, 0.05, sleep=lambda _: asyncio.sleep(0))
        assert [s["ok"] for s in walk["steps"]] == [True, True, False]
        assert walk["steps"][2]["lit"] == [] and not walk["ok"]
        await dev.stop()

    run(go)


class CrossedPin(MockPin):
    """A lamp wire crossed onto another lamp's: driving this pin drives that lamp too."""

    other: MockPin | None = None

    def _change_state(self, value: bool) -> bool:
        if self.other is not None:
            self.other._state = value
        return super()._change_state(value)


async def walk_while_wagers_come_in(dev: GpioSensors) -> dict[str, Any]:
    """The lamp walk on a table taking wagers: at every step of the walk the game lights a bet
    lamp (as a wager on that box does), through the driver's `lamps` command."""
    placed = iter([(3, "bet"), (1, "bet"), (2, "locked")])

    async def a_wager_meanwhile(_: float) -> None:
        box, state = next(placed)
        await dev.command("lamps", {"box": box, "state": state})

    return await lamp_walk(dev, 0.05, sleep=a_wager_meanwhile)


def test_the_lamp_walk_holds_the_games_lamps_while_wagers_come_in() -> None:
    async def go() -> None:
        dev, factory = await uth_sensors([])
        walk = await walk_while_wagers_come_in(dev)
        assert [s["lit"] for s in walk["steps"]] == [[1], [2], [3]], walk["steps"]
        assert walk["ok"] and walk["held_writes"] == 3
        # After the walk the lamps are as the game last asked: the wagers' lamps lit.
        assert walk["restored"] == {"1": "bet", "2": "locked", "3": "bet"}
        assert factory.pin(12).state and factory.pin(14).state
        # Outside a walk the game's writes drive the pins at once.
        await dev.command("lamps", {"box": 1, "state": "idle"})
        assert not factory.pin(12).state
        await dev.stop()

    run(go)


def test_the_lamp_walk_on_a_table_taking_wagers_finds_a_crossed_lamp_wire() -> None:
    async def go() -> None:
        factory = MockFactory()
        crossed = factory.pin(LAMPS[1], pin_class=CrossedPin)
        cfg = GpioConfig(pin_factory="mock", bet_sensor=(4, 5, 6), lamp=LAMPS,
                         keypad=MappingProxyType({"deal": 20}), table_closed=27, debounce_ms=10)
        dev = GpioSensors(cfg, boxes=3, factory=factory)
        await dev.start(lambda e: None)
        crossed.other = factory.pin(LAMPS[2])  # lamp 2's wire also lights lamp 3
        walk = await walk_while_wagers_come_in(dev)
        assert [s["ok"] for s in walk["steps"]] == [True, False, True]
        assert walk["steps"][1]["lit"] == [2, 3] and not walk["ok"]
        await dev.stop()

    run(go)


def test_a_lamp_walk_needs_lamps_and_a_sane_step() -> None:
    async def go() -> None:
        cfg = GpioConfig(pin_factory="mock", chung=(4,), off=(5,))
        dev = GpioSensors(cfg, boxes=1, factory=MockFactory())
        await dev.start(lambda e: None)
        with pytest.raises(DeviceError, match="no lamps wired"):
            await lamp_walk(dev, 0.5)
        with pytest.raises(DeviceError, match="outside"):
            await lamp_walk(dev, 60.0)
        await dev.stop()

    run(go)


# --- button test --------------------------------------------------------------------------------


async def tap(dev: GpioSensors, name: str, *, after: float = 0.1, hold: float = 0.1) -> None:
    await asyncio.sleep(after)
    dev.press(name)
    await asyncio.sleep(hold)
    dev.release(name)


def test_a_pressed_button_passes_and_is_never_played() -> None:
    async def go() -> None:
        daemon: list[Event] = []
        dev, _ = await uth_sensors(daemon)
        task = asyncio.create_task(tap(dev, "keypad.deal"))
        result = await wait_for_press(dev, "keypad.deal", 3.0)
        await task
        assert result["ok"] and result["pressed"] and result["released"]
        assert result["prompt"] == "press the dealer's deal button" and result["pin"] == 20
        assert result["events"] == [{"kind": "dealer.deal", "data": {}}]
        assert daemon == []  # the round machine never heard the press
        # After the test the sensors report to the daemon again.
        await tap(dev, "bet_sensor1", after=0)
        await until(lambda: [e.kind for e in daemon] == ["bet.on", "bet.off"])
        await dev.stop()

    run(go)


def test_the_wrong_button_is_named_and_the_right_one_times_out() -> None:
    async def go() -> None:
        dev, _ = await uth_sensors([])
        task = asyncio.create_task(tap(dev, "bet_sensor3"))
        result = await wait_for_press(dev, "bet_sensor1", 1.0)
        await task
        assert not result["ok"] and result["error"] == "not pressed within 1 s"
        assert result["seen"] == ["bet_sensor3"]
        dev.press("bet_sensor2")
        await asyncio.sleep(0.1)
        held = await wait_for_press(dev, "bet_sensor2", 1.0)
        assert not held["ok"] and "already active" in held["error"]
        with pytest.raises(DeviceError, match="no input 'chung9'"):
            await wait_for_press(dev, "chung9", 1.0)
        await dev.stop()

    run(go)


def test_every_input_has_a_prompt() -> None:
    async def go() -> None:
        dev, _ = await uth_sensors([])
        asked = {p["input"]: p["prompt"] for p in prompts(dev)}
        assert asked == {
            "bet_sensor1": "cover the bet sensor on box 1",
            "bet_sensor2": "cover the bet sensor on box 2",
            "bet_sensor3": "cover the bet sensor on box 3",
            "keypad.deal": "press the dealer's deal button",
            "table_closed": "turn the table key switch to closed",
        }
        assert prompt("chung3") == "press the chung button on box 3"
        assert prompt("off2") == "press the OFF button on box 2"
        await dev.stop()

    run(go)


# --- serial loopback ----------------------------------------------------------------------------


def test_a_loopback_plug_returns_the_pattern() -> None:
    async def go() -> None:
        plug = LoopbackPlug()
        await plug.start()
        result = await loopback(plug.path, 115200, 2.0)
        assert result["ok"] and result["received"] == result["sent"] == len(PATTERN)
        assert result["sent_hex"] == result["received_hex"] and result["error"] is None
        plug.corrupt_next()
        bad = await loopback(plug.path, 115200, 2.0)
        assert not bad["ok"] and bad["first_mismatch"] is not None
        assert bad["error"].startswith(f"byte {bad['first_mismatch']} differs")
        plug.no_answer = True
        silent = await loopback(plug.path, 115200, 0.3)
        assert not silent["ok"] and silent["received"] == 0 and "nothing" in silent["error"]
        await plug.close()

    run(go)


def test_a_port_that_cannot_be_opened_is_named(tmp_path: Path) -> None:
    async def go() -> None:
        result = await loopback(str(tmp_path / "ttyUSB9"), 9600, 0.3)
        assert not result["ok"] and "cannot open" in result["error"]
        assert result["sent"] == result["received"] == 0

    run(go)


def test_a_device_lets_go_of_its_port_for_the_plug_and_takes_it_back(tmp_path: Path) -> None:
    async def go() -> None:
        link = str(tmp_path / "tablectl-shaker")
        sim, plug = PtyShakerSim(), LoopbackPlug()
        await sim.start()
        await plug.start()
        sim.plug_at(link)
        events: list[Event] = []
        # (a patient driver: this test is about the port, not about answer times under load)
        dev = SerialShaker(serial_cfg(link, answer_timeout_ms=3000), poll_s=0)
        await dev.start(events.append)
        line = line_of(dev)
        # The shaker itself at the end of the cable is not a loopback: it does not echo.
        async with dev.released():
            assert not dev.started
            not_a_plug = await loopback(line.port, line.baud, 0.3)
        assert not not_a_plug["ok"]
        # The technician puts the plug where the shaker's cable was.
        os.replace(_symlink(plug.path, tmp_path), link)
        async with dev.released():
            result = await loopback(line.port, line.baud, 2.0)
            os.replace(_symlink(sim.path, tmp_path), link)  # and the shaker's cable back
        assert result["ok"]
        # The driver, started again on its port, shakes as before.
        assert dev.started
        await until(lambda: dev.health().state == "ready", 5)
        await dev.command("shake")
        await until(lambda: [e.kind for e in events][-1:] == ["dice.result"], 5)
        await dev.stop()
        await sim.close()
        await plug.close()

    run(go)


def test_a_device_released_during_its_self_test_answers_the_self_test() -> None:
    # A loopback on the shaker's port while its self-test waits for the dice (the daemon's
    # start-up self-test, say): the test is answered "port closed". A cancelled answer unwound
    # the self-test's caller as if it were cancelled, and took the whole daemon down with it.
    async def go() -> None:
        sim = PtyShakerSim()
        await sim.start()
        sim.delay_s = 30.0  # the dice come long after the port is let go
        dev = SerialShaker(serial_cfg(sim.path, answer_timeout_ms=5000), poll_s=0)
        await dev.start(lambda _e: None)
        selftest = asyncio.create_task(dev.selftest())
        await until(lambda: "TEST" in sim.received, 5)
        assert not selftest.done()
        async with dev.released():
            assert not dev.started
        result = await selftest
        assert result == {"ok": False, "error": "shaker: port closed"}
        assert dev.started
        await dev.stop()
        await sim.close()

    run(go)


def _symlink(target: str, tmp_path: Path) -> str:
    tmp = str(tmp_path / "next-link")
    os.symlink(target, tmp)
    return tmp
