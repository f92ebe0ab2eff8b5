"""SimShaker: shake -> dice events, fault injection, health, CSPRNG default."""

from __future__ import annotations

import asyncio
import random
import secrets

import pytest

from devices.base import DeviceError, State
from devices.base import DeviceEvent as Event
from devices.shaker.sim import SimShaker


async def settle() -> None:
    """Let queued loop callbacks (device answers, then event hand-over) run."""
    for _ in range(5):
        await asyncio.sleep(0)


async def _run(shaker: SimShaker, shakes: int = 1, wait: float = 0.0) -> list[Event]:
    events: list[Event] = []
    await shaker.start(events.append)
    for _ in range(shakes):
        await shaker.command("shake", {})
        await asyncio.sleep(wait)
        await settle()
    return events


def test_shake_reports_three_dice_and_no_cut_die() -> None:
    events = asyncio.run(_run(SimShaker(rng=random.Random(1)), shakes=20))
    assert len(events) == 20
    for e in events:
        assert e.kind == "dice.result"
        assert len(e.data["box_dice"]) == 3
        assert all(1 <= d <= 6 for d in e.data["box_dice"])
        assert e.data["cut_die"] is None


def test_nsw_cut_die() -> None:
    events = asyncio.run(_run(SimShaker(cut_die=True, rng=random.Random(2)), shakes=10))
    assert all(1 <= e.data["cut_die"] <= 6 for e in events)


def test_seeded_rng_is_reproducible_and_default_is_csprng() -> None:
    a = asyncio.run(_run(SimShaker(rng=random.Random(7)), shakes=5))
    b = asyncio.run(_run(SimShaker(rng=random.Random(7)), shakes=5))
    assert [e.data for e in a] == [e.data for e in b]
    assert isinstance(SimShaker().rng, secrets.SystemRandom)


def test_event_is_delivered_through_the_loop_not_inside_the_command() -> None:
    async def main() -> tuple[int, int]:
        events: list[Event] = []
        shaker = SimShaker(rng=random.Random(3))
        await shaker.start(events.append)
        await shaker.command("shake", {})
        during = len(events)
        await settle()
        return during, len(events)

    assert asyncio.run(main()) == (0, 1)


def test_not_flat_injection_and_probability() -> None:
    shaker = SimShaker(rng=random.Random(4))
    shaker.not_flat_next()
    events = asyncio.run(_run(shaker, shakes=2))
    assert [e.kind for e in events] == ["dice.not_flat", "dice.result"]
    assert events[0].data == {}
    always = SimShaker(rng=random.Random(4), not_flat_probability=1.0)
    assert {e.kind for e in asyncio.run(_run(always, shakes=5))} == {"dice.not_flat"}
    assert always.health().counters["not_flat"] == 5


def test_fault_next_shake_then_recovers() -> None:
    shaker = SimShaker(rng=random.Random(5))
    shaker.fail_next("cover open")

    async def main() -> list[Event]:
        events = await _run(shaker, shakes=1)
        health = shaker.health()
        assert not health.ok and health.state == State.FAULT
        assert health.last_error == "cover open"
        await shaker.command("shake", {})
        await settle()
        return events

    events = asyncio.run(main())
    assert events[0] == Event("shaker.fault", {"reason": "cover open"})
    assert events[1].kind == "dice.result"
    health = shaker.health()
    assert health.ok and health.state == State.READY
    assert health.counters["faults"] == 1
    assert health.counters["shakes"] == 2
    assert health.counters["events"] == 2


def test_no_answer_reported_after_timeout() -> None:
    shaker = SimShaker(rng=random.Random(6), answer_timeout_s=0.01)
    shaker.no_answer = True
    events = asyncio.run(_run(shaker, shakes=1, wait=0.05))
    assert events == [Event("shaker.fault", {"reason": "no answer"})]
    health = shaker.health()
    assert health.state == State.OFFLINE and not health.ok
    assert health.counters["timeouts"] == 1


def test_shake_while_busy_and_unknown_command() -> None:
    async def main() -> None:
        shaker = SimShaker(rng=random.Random(8), shake_time_s=0.05)
        await shaker.start(lambda e: None)
        await shaker.command("shake", {})
        with pytest.raises(DeviceError, match="already in progress"):
            await shaker.command("shake", {})
        with pytest.raises(DeviceError, match="'roll'"):
            await shaker.command("roll", {})
        await shaker.stop()

    asyncio.run(main())


def test_command_before_start_and_selftest() -> None:
    async def main() -> None:
        shaker = SimShaker(rng=random.Random(9))
        with pytest.raises(DeviceError, match="not started"):
            await shaker.command("shake", {})
        events: list[Event] = []
        await shaker.start(events.append)
        result = await shaker.selftest()
        assert result["ok"] and len(result["box_dice"]) == 3
        await settle()
        assert events == []  # a self-test never emits game events
        shaker.no_answer = True
        assert (await shaker.selftest())["ok"] is False

    asyncio.run(main())


def test_stop_cancels_pending_answer() -> None:
    async def main() -> list[Event]:
        events: list[Event] = []
        shaker = SimShaker(rng=random.Random(10), shake_time_s=0.01)
        await shaker.start(events.append)
        await shaker.command("shake", {})
        await shaker.stop()
        await asyncio.sleep(0.03)
        assert shaker.health().state == State.STOPPED
        return events

    assert asyncio.run(main()) == []
