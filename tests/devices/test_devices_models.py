"""One hardware model per device, two simulators on it: the in-process simulator and the real
driver against the wire simulator give the same events for the same seed and the same injected
faults, and refuse a bad injection with the same error."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from devices.base import Device, DeviceError
from devices.base import DeviceEvent as Event
from devices.shaker.driver import SerialShaker
from devices.shaker.sim import SimShaker
from devices.shaker.wire import PtyShakerSim
from devices.shuffler.driver import SerialShuffler
from devices.shuffler.sim import SimShuffler
from devices.shuffler.wire import PtyShufflerSim
from tests.support.devices import run, serial_cfg, until

WAYS = ("inproc", "wire")
Script = Callable[[Any, Device, list[Event]], Awaitable[None]]


async def shaker(way: str, seed: int) -> tuple[Any, Device, list[Event]]:
    """(the simulator holding the model, the device the daemon would command, its events)."""
    events: list[Event] = []
    if way == "inproc":
        sim = dev = SimShaker(cut_die=True, rng=random.Random(seed))
    else:
        sim = PtyShakerSim(cut_die=True, rng=random.Random(seed))
        await sim.start()
        dev = SerialShaker(serial_cfg(sim.path), cut_die=True, poll_s=0)
    await dev.start(events.append)
    return sim, dev, events


async def shuffler(way: str, seed: int) -> tuple[Any, Device, list[Event]]:
    events: list[Event] = []
    if way == "inproc":
        sim = dev = SimShuffler(decks=2, rng=random.Random(seed))
    else:
        sim = PtyShufflerSim(decks=2, rng=random.Random(seed))
        await sim.start()
        dev = SerialShuffler(serial_cfg(sim.path), decks=2, poll_s=0)
    await dev.start(events.append)
    return sim, dev, events


async def stop(sim: Any, dev: Device) -> None:
    await dev.stop()
    if sim is not dev:
        await sim.close()


def events_of(make: Any, way: str, script: Script) -> list[Event]:
    out: list[Event] = []

    async def go() -> None:
        sim, dev, events = await make(way, 11)
        try:
            await script(sim, dev, events)
        finally:
            await stop(sim, dev)
        out.extend(events)

    run(go)
    return out


async def shake_once(dev: Device, events: list[Event]) -> None:
    n = len(events)
    await dev.command("shake")
    await until(lambda: len(events) == n + 1)


async def shaker_script(sim: Any, dev: Device, events: list[Event]) -> None:
    await shake_once(dev, events)
    sim.not_flat_next()
    await shake_once(dev, events)
    sim.fail_next("motor fault")
    await shake_once(dev, events)
    await shake_once(dev, events)
    sim.cover_open = True
    await shake_once(dev, events)
    sim.cover_open = False
    await shake_once(dev, events)


def test_both_shaker_simulators_shake_the_same_dice_and_faults() -> None:
    got = {way: events_of(shaker, way, shaker_script) for way in WAYS}
    assert [e.kind for e in got["inproc"]] == [
        "dice.result", "dice.not_flat", "shaker.fault", "dice.result", "shaker.fault",
        "dice.result",
    ]  # fmt: skip
    assert got["inproc"][2].data == {"reason": "motor fault"}
    assert got["inproc"][4].data == {"reason": "cover open"}
    assert got["inproc"] == got["wire"]


async def shuffler_script(sim: Any, dev: Device, events: list[Event]) -> None:
    n = len(events)
    await dev.command("shuffle")
    await until(lambda: len(events) == n + 1)
    await dev.command("dispense", {"count": 5})
    await until(lambda: len(events) == n + 6)
    missing = sim.inject_missing("As", deck=2)
    sim.inject_duplicate("Kd", deck=2)
    assert missing == "As"
    await dev.command("deck_check", {"deck": 2})
    await until(lambda: len(events) == n + 7)
    sim.fail_next("jam", at="shuffle")
    await dev.command("shuffle")
    await until(lambda: len(events) == n + 8)
    await dev.command("shuffle")
    await until(lambda: len(events) == n + 9)
    sim.fail_next("fault", at="dispense")
    await dev.command("dispense", {"count": 3})
    await until(lambda: len(events) == n + 10)


def test_both_shuffler_simulators_deal_the_same_cards_and_faults() -> None:
    got = {way: events_of(shuffler, way, shuffler_script) for way in WAYS}
    inproc = got["inproc"]
    assert [e.kind for e in inproc] == [
        "shuffler.ready", *["card.dispensed"] * 5, "deck.check", "shuffler.jam",
        "shuffler.ready", "shuffler.fault",
    ]  # fmt: skip
    check = inproc[6].data
    assert check["missing"] == ["As"] and check["duplicate"] == ["Kd"] and not check["ok"]
    assert inproc[-1].data == {"reason": "malfunction"}
    assert inproc == got["wire"]


@pytest.mark.parametrize("way", WAYS)
def test_a_bad_injection_is_the_same_device_error_on_both(way: str) -> None:
    async def go() -> None:
        sim, dev, _ = await shuffler(way, 1)
        try:
            sim.inject_missing("As", deck=1)
            with pytest.raises(DeviceError, match="is not in the deck"):
                sim.inject_missing("As", deck=1)  # an absent card
            with pytest.raises(DeviceError, match="no deck 3"):
                sim.inject_foreign("Jk", deck=3)
            with pytest.raises(DeviceError, match="cannot inject"):
                sim.fail_next("smoke", at="shuffle")
            with pytest.raises(DeviceError, match="repeat"):
                sim.stack_next(["As", "As"])
        finally:
            await stop(sim, dev)

    run(go)


@pytest.mark.parametrize("way", WAYS)
def test_an_open_cover_fails_the_selftest_on_both(way: str) -> None:
    async def go() -> None:
        sim, dev, events = await shaker(way, 1)
        try:
            sim.cover_open = True
            report = await dev.selftest()
            assert not report["ok"] and "cover open" in report["error"]
            sim.cover_open = False
            assert (await dev.selftest())["ok"]
            assert events == []
        finally:
            await stop(sim, dev)

    run(go)
