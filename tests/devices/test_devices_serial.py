"""The serial drivers against their pty simulators: the real wire, faults injected."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from devices.base import DeviceError, State
from devices.base import DeviceEvent as Event
from devices.meter.driver import TEST_PATTERN, AlphaMeter
from devices.meter.wire import PtyMeterSim
from devices.shaker.driver import SerialShaker
from devices.shaker.wire import PtyShakerSim
from devices.shuffler.driver import SerialShuffler
from devices.shuffler.wire import PtyShufflerSim
from tests.support.devices import ANSWER_TIMEOUT_MS as TIMEOUT_MS
from tests.support.devices import run, until
from tests.support.devices import serial_cfg as cfg


async def shaker_pair(**kw: Any) -> tuple[PtyShakerSim, SerialShaker, list[Event]]:
    sim = PtyShakerSim(rng=random.Random(7), **kw)
    await sim.start()
    dev = SerialShaker(cfg(sim.path), cut_die=kw.get("cut_die", False), poll_s=0)
    events: list[Event] = []
    await dev.start(events.append)
    return sim, dev, events


async def close(sim: Any, dev: Any) -> None:
    await dev.stop()
    await sim.close()


# --- shaker -------------------------------------------------------------------------------------


def test_shake_reads_the_dice_and_the_cut_die() -> None:
    async def go() -> None:
        sim, dev, events = await shaker_pair(cut_die=True, shake_time_s=0.45)
        await dev.command("shake")
        assert dev.state == State.BUSY
        await until(lambda: len(events) == 1)
        e = events[0]
        assert e.kind == "dice.result" and len(e.data["box_dice"]) == 3
        assert 1 <= e.data["cut_die"] <= 6
        # A 450 ms shake with a 300 ms answer timeout: the SHAKING progress kept it alive.
        assert dev.counters["timeouts"] == 0 and dev.state == State.READY
        await close(sim, dev)

    run(go)


def test_not_flat_and_faults_are_reported_as_their_events() -> None:
    async def go() -> None:
        sim, dev, events = await shaker_pair()
        sim.not_flat_next()
        await dev.command("shake")
        await until(lambda: len(events) == 1)
        sim.fail_next("motor fault")
        await dev.command("shake")
        await until(lambda: len(events) == 2)
        sim.cover_open = True
        await dev.command("shake")
        await until(lambda: len(events) == 3)
        assert [e.kind for e in events] == ["dice.not_flat", "shaker.fault", "shaker.fault"]
        assert [e.data.get("reason") for e in events[1:]] == ["motor fault", "cover open"]
        assert dev.state == State.FAULT and dev.last_error == "cover open"
        await close(sim, dev)

    run(go)


def test_a_silent_shaker_is_reported_within_the_answer_timeout() -> None:
    async def go() -> None:
        sim, dev, events = await shaker_pair()
        sim.no_answer = True
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await dev.command("shake")
        await until(lambda: len(events) == 1)
        took = loop.time() - t0
        assert events[0] == Event("shaker.fault", {"reason": "no answer"})
        assert dev.state == State.OFFLINE and dev.counters["timeouts"] == 1
        assert took < 3 * TIMEOUT_MS / 1000  # reported, not hung (generous: a loaded CI box)
        # The shaker comes back: the next shake works and the aborted one never lands late.
        sim.no_answer = False
        await dev.command("shake")
        await until(lambda: len(events) == 2)
        await asyncio.sleep(0.2)
        assert [e.kind for e in events] == ["shaker.fault", "dice.result"]
        assert dev.state == State.READY
        await close(sim, dev)

    run(go)


def test_dropped_and_corrupted_answers_are_recovered_and_counted() -> None:
    async def go() -> None:
        sim, dev, events = await shaker_pair()
        for i in range(6):
            (sim.drop_next if i % 2 else sim.corrupt_next)()
            await dev.command("shake")
            await until(lambda n=i: len(events) == n + 1)
        assert [e.kind for e in events] == ["dice.result"] * 6
        assert dev.counters["frames_bad"] >= 3  # the corrupted answers
        assert sim.counters["retries"] >= 6  # the simulator resent what was lost
        assert dev.counters["results"] == 6
        await close(sim, dev)

    run(go)


def test_a_second_shake_before_the_answer_is_refused() -> None:
    async def go() -> None:
        sim, dev, events = await shaker_pair(shake_time_s=0.2)
        await dev.command("shake")
        with pytest.raises(DeviceError, match="already in progress"):
            await dev.command("shake")
        await until(lambda: len(events) == 1)
        assert sim.shakes == 1
        await close(sim, dev)

    run(go)


def test_shaker_selftest_shakes_without_a_game_event() -> None:
    async def go() -> None:
        sim, dev, events = await shaker_pair(cut_die=True)
        report = await dev.selftest()
        assert report["ok"] and len(report["box_dice"]) == 3 and report["cut_die"] is not None
        sim.no_answer = True
        report = await dev.selftest()
        assert not report["ok"] and "no answer" in report["error"]
        await asyncio.sleep(0.05)
        assert events == []
        await close(sim, dev)

    run(go)


# --- shuffler -----------------------------------------------------------------------------------


async def shuffler_pair(decks: int = 2) -> tuple[PtyShufflerSim, SerialShuffler, list[Event]]:
    sim = PtyShufflerSim(decks=decks, rng=random.Random(3))
    await sim.start()
    dev = SerialShuffler(cfg(sim.path), decks=decks, poll_s=0)
    events: list[Event] = []
    await dev.start(events.append)
    return sim, dev, events


def kinds(events: list[Event]) -> list[str]:
    return [e.kind for e in events]


def test_two_decks_alternate_and_every_card_is_reported_in_order() -> None:
    async def go() -> None:
        sim, dev, events = await shuffler_pair()
        for expected_deck in (1, 2, 1):
            events.clear()
            await dev.command("shuffle")
            await until(lambda: kinds(events) == ["shuffler.ready"])
            assert events[0].data == {"deck": expected_deck}
            await dev.command("dispense", {"count": 9})
            await until(lambda: len(events) == 10)
            cards = [e.data for e in events[1:]]
            assert [c["index"] for c in cards] == list(range(9))
            assert cards == [{"card": sim.order[i], "index": i} for i in range(9)]
        await close(sim, dev)

    run(go)


@pytest.mark.parametrize(
    ("inject", "field"),
    [("inject_missing", "missing"), ("inject_foreign", "extra"), ("inject_duplicate", "duplicate")],
)
def test_deck_check_names_what_is_wrong(inject: str, field: str) -> None:
    async def go() -> None:
        sim, dev, events = await shuffler_pair(decks=1)
        card = getattr(sim, inject)()
        await dev.command("deck_check", {"deck": 1})
        await until(lambda: len(events) == 1)
        check = events[0].data
        assert events[0].kind == "deck.check" and not check["ok"]
        assert check[field] == [card]
        sim.restore_deck()
        await dev.command("deck_check", {"deck": 1})
        await until(lambda: len(events) == 2)
        assert events[1].data["ok"] and events[1].data["count"] == 52
        await close(sim, dev)

    run(go)


def test_an_unreadable_card_ends_the_deal_with_a_fault() -> None:
    async def go() -> None:
        sim, dev, events = await shuffler_pair(decks=1)
        await dev.command("shuffle")
        await until(lambda: len(events) == 1)
        sim.order[2] = None
        await dev.command("dispense", {"count": 5})
        await until(lambda: events[-1].kind == "shuffler.fault")
        assert kinds(events) == ["shuffler.ready", "card.dispensed", "card.dispensed",
                                 "shuffler.fault"]  # fmt: skip
        assert events[-1].data["reason"] == "unreadable card at index 2"
        await close(sim, dev)

    run(go)


def test_jam_at_shuffle_and_malfunction_mid_deal() -> None:
    async def go() -> None:
        sim, dev, events = await shuffler_pair(decks=1)
        sim.fail_next("jam", at="shuffle")
        await dev.command("shuffle")
        await until(lambda: len(events) == 1)
        assert events[0] == Event("shuffler.jam", {"reason": "card jam"})
        await dev.command("shuffle")
        await until(lambda: len(events) == 2)
        sim.fail_next("fault", at="dispense")
        await dev.command("dispense", {"count": 3})
        await until(lambda: len(events) == 3)
        assert events[2] == Event("shuffler.fault", {"reason": "malfunction"})
        # No shuffled deck after the fault: a dispense is answered by a fault, not a hang.
        await dev.command("dispense", {"count": 3})
        await until(lambda: len(events) == 4)
        assert events[3].kind == "shuffler.fault"
        await close(sim, dev)

    run(go)


def test_a_shuffler_that_stops_mid_deal_is_reported() -> None:
    async def go() -> None:
        sim, dev, events = await shuffler_pair(decks=1)
        sim.card_time_s = 0.05
        await dev.command("shuffle")
        await until(lambda: len(events) == 1)
        await dev.command("dispense", {"count": 9})
        await until(lambda: len(events) >= 3)
        sim.no_answer = True
        await until(lambda: events[-1].kind == "shuffler.fault", timeout=5)
        assert events[-1].data == {"reason": "no answer"}
        assert dev.state == State.OFFLINE
        await close(sim, dev)

    run(go)


def test_shuffler_selftest_is_a_deck_check_without_events() -> None:
    async def go() -> None:
        sim, dev, events = await shuffler_pair(decks=1)
        sim.inject_foreign("Jk")
        report = await dev.selftest()
        assert not report["ok"] and report["deck_check"]["extra"] == ["Jk"]
        await asyncio.sleep(0.05)
        assert events == []
        await close(sim, dev)

    run(go)


# --- meter --------------------------------------------------------------------------------------


async def meter_pair() -> tuple[PtyMeterSim, AlphaMeter]:
    sim = PtyMeterSim()
    await sim.start()
    dev = AlphaMeter(cfg(sim.path, 9600), min_interval_s=0.02, poll_s=0)
    await dev.start(lambda e: None)
    return sim, dev


def test_meter_paces_coalesces_pool_values_and_never_drops_a_win() -> None:
    async def go() -> None:
        sim, dev = await meter_pair()
        for amount in range(100_000, 100_500, 10):
            await dev.command("pool", {"amount": amount})
        await dev.command("win", {"amount": 100_490, "box": 3})
        await dev.command("pool", {"amount": 500_000, "after_award": True})
        await until(lambda: sim.text == "$5,000.00")
        assert "WIN $1,004.90 BOX 3" in sim.shown
        assert len(sim.shown) < 20  # 52 updates, coalesced
        # Whatever order they were written in, shown pool values never went down before the win.
        pools = [t for t in sim.shown[: sim.shown.index("WIN $1,004.90 BOX 3")] if t[0] == "$"]
        assert pools == sorted(pools)
        assert dev.counters["writes_coalesced"] > 0
        await close(sim, dev)

    run(go)


def test_meter_refuses_a_decrease_without_a_win_on_the_wire_too() -> None:
    async def go() -> None:
        sim, dev = await meter_pair()
        await dev.command("pool", {"amount": 90_000})
        await until(lambda: sim.text == "$900.00")
        await dev.command("pool", {"amount": 80_000})
        await asyncio.sleep(0.1)
        assert sim.text == "$900.00" and dev.counters["decrease_refused"] == 1
        await close(sim, dev)

    run(go)


def test_meter_selftest_flashes_reads_back_and_restores() -> None:
    async def go() -> None:
        sim, dev = await meter_pair()
        await dev.command("closed", {})
        report = await dev.selftest()
        assert report["ok"] and report["read_back"] == TEST_PATTERN
        assert TEST_PATTERN in sim.shown
        await until(lambda: sim.text == "CLOSED")
        sim.no_answer = True
        report = await dev.selftest()
        assert not report["ok"]
        await dev.check()
        assert dev.state == State.OFFLINE
        sim.no_answer = False
        await dev.check()
        assert dev.state == State.READY
        await close(sim, dev)

    run(go)


def test_a_meter_showing_the_wrong_text_is_rewritten() -> None:
    async def go() -> None:
        sim, dev = await meter_pair()
        await dev.command("announce", {"text": "FIRST BOX 5 / CUT TIGER"})
        await until(lambda: sim.text == "FIRST BOX 5 / CUT TIGER")
        sim.text = "GARBLED"  # a power blip on the sign
        await dev.check()
        await until(lambda: sim.text == "FIRST BOX 5 / CUT TIGER")
        assert dev.counters["readback_mismatch"] == 1
        await close(sim, dev)

    run(go)


def test_an_unopenable_port_is_disconnected_naming_it() -> None:
    # Issue 11: no longer a DeviceError at start (the daemon would never reopen it): the device
    # starts `disconnected`, its error names the port, a shake is refused by its fault event.
    async def go() -> None:
        dev = SerialShaker(cfg("/dev/tablectl-no-such-port"), poll_s=0)
        events: list[Event] = []
        await dev.start(events.append)
        health = dev.health()
        assert health.state == State.DISCONNECTED and not health.ok
        assert health.last_error is not None and "tablectl-no-such-port" in health.last_error
        with pytest.raises(DeviceError, match="disconnected"):
            await dev.channel.ask("TEST", answers=frozenset({"TEST"}))
        await dev.stop()

    run(go)
