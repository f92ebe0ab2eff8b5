"""SimShuffler: shuffle -> ready, dispensing, two decks alternating, deck check, faults."""

from __future__ import annotations

import asyncio
import itertools
import random
import secrets

import pytest

from controller.games.uth.cards import parse_cards
from devices.base import DeviceError, State
from devices.base import DeviceEvent as Event
from devices.shuffler import STANDARD_DECK, check_deck
from devices.shuffler.interface import retry_delay
from devices.shuffler.sim import SimShuffler


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


class Table:
    """A started shuffler with the events it emitted."""

    def __init__(self, shuffler: SimShuffler) -> None:
        self.shuffler = shuffler
        self.events: list[Event] = []

    async def __aenter__(self) -> Table:
        await self.shuffler.start(self.events.append)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shuffler.stop()

    async def do(self, command: str, **args: object) -> list[Event]:
        start = len(self.events)
        await self.shuffler.command(command, args)
        await settle()
        return self.events[start:]

    async def deal(self, n: int) -> list[Event]:
        start = len(self.events)
        for _ in range(n):
            self.shuffler.dispense()
        await settle()
        return self.events[start:]


def test_shuffle_then_every_card_dispensed_in_order() -> None:
    async def main() -> None:
        async with Table(SimShuffler(rng=random.Random(1))) as t:
            assert await t.do("shuffle") == [Event("shuffler.ready", {"deck": 1})]
            dealt = await t.deal(52)
            assert [e.kind for e in dealt] == ["card.dispensed"] * 52
            assert [e.data["index"] for e in dealt] == list(range(52))
            cards = [e.data["card"] for e in dealt]
            parse_cards(cards, count=52)  # 52 distinct cards in "As Td" notation
            assert sorted(cards) == sorted(STANDARD_DECK)
            assert cards != list(STANDARD_DECK)
            assert await t.deal(1) == [Event("shuffler.fault", {"reason": "deck exhausted"})]
            assert t.shuffler.health().counters["cards"] == 52

    asyncio.run(main())


def test_reshuffle_restarts_the_index() -> None:
    async def main() -> None:
        async with Table(SimShuffler(rng=random.Random(2))) as t:
            await t.do("shuffle")
            await t.deal(5)
            await t.do("shuffle")
            assert (await t.deal(1))[0].data["index"] == 0

    asyncio.run(main())


def test_two_decks_alternate_rule_4_2() -> None:
    async def main() -> None:
        async with Table(SimShuffler(decks=2, rng=random.Random(3))) as t:
            decks = []
            for _ in range(4):
                (ready,) = await t.do("shuffle")
                decks.append(ready.data["deck"])
            assert decks == [1, 2, 1, 2]
            assert await t.do("shuffle", deck=2) == [Event("shuffler.ready", {"deck": 2})]
            with pytest.raises(DeviceError, match=r"deck 3 outside 1..2"):
                await t.do("shuffle", deck=3)

    asyncio.run(main())
    with pytest.raises(DeviceError, match="decks must be 1 or 2"):
        SimShuffler(decks=3)


def test_one_deck_always_deck_1() -> None:
    async def main() -> None:
        async with Table(SimShuffler(rng=random.Random(4))) as t:
            for _ in range(3):
                assert (await t.do("shuffle"))[0].data == {"deck": 1}
            with pytest.raises(DeviceError, match=r"outside 1..1"):
                await t.do("shuffle", deck=2)

    asyncio.run(main())


def test_deck_check_clean() -> None:
    async def main() -> None:
        async with Table(SimShuffler(rng=random.Random(5))) as t:
            (check,) = await t.do("deck_check")
            assert check == Event(
                "deck.check",
                {
                    "deck": 1,
                    "ok": True,
                    "count": 52,
                    "missing": [],
                    "extra": [],
                    "duplicate": [],
                    "unreadable": 0,
                },
            )

    asyncio.run(main())


def test_deck_check_detects_missing_foreign_duplicate_unreadable() -> None:
    async def main() -> None:
        shuffler = SimShuffler(rng=random.Random(6))
        async with Table(shuffler) as t:
            assert shuffler.inject_missing("As") == "As"
            shuffler.inject_foreign("Jk")
            shuffler.inject_duplicate("Td")
            (check,) = await t.do("deck_check")
            assert check.data["ok"] is False
            assert check.data["missing"] == ["As"]
            assert check.data["extra"] == ["Jk"]
            assert check.data["duplicate"] == ["Td"]
            assert check.data["count"] == 53
            shuffler.restore_deck()
            shuffler.inject_unreadable()
            (check,) = await t.do("deck_check")
            assert check.data["unreadable"] == 1 and len(check.data["missing"]) == 1
            assert shuffler.health().counters["deck_check_failed"] == 2
            shuffler.restore_deck()
            assert (await t.do("deck_check"))[0].data["ok"] is True

    asyncio.run(main())


def test_check_deck_pure() -> None:
    deck = list(STANDARD_DECK)
    assert check_deck(deck).ok
    deck[0] = "Ah"  # 2c replaced by a second Ah
    result = check_deck([*deck, None])
    assert result.missing == ("2c",) and result.duplicate == ("Ah",) and result.unreadable == 1
    assert not result.ok


def test_foreign_and_duplicate_cards_are_dispensed() -> None:
    async def main() -> None:
        shuffler = SimShuffler(rng=random.Random(7))
        shuffler.inject_foreign("Jk")
        shuffler.inject_duplicate("Qh")
        async with Table(shuffler) as t:
            await t.do("shuffle")
            cards = [e.data["card"] for e in await t.deal(54)]
            assert cards.count("Jk") == 1 and cards.count("Qh") == 2
            assert shuffler.health().counters["foreign_cards"] == 1

    asyncio.run(main())


def test_missing_card_is_never_dispensed() -> None:
    async def main() -> None:
        shuffler = SimShuffler(rng=random.Random(8))
        async with Table(shuffler) as t:
            missing = shuffler.inject_missing()
            await t.do("shuffle")
            dealt = await t.deal(52)
            cards = [e.data["card"] for e in dealt if e.kind == "card.dispensed"]
            assert len(cards) == 51 and missing not in cards
            assert dealt[-1] == Event("shuffler.fault", {"reason": "deck exhausted"})

    asyncio.run(main())


def test_unreadable_card_is_a_fault() -> None:
    async def main() -> None:
        shuffler = SimShuffler(rng=random.Random(9))
        shuffler.contents[1][:] = [None] * 52
        async with Table(shuffler) as t:
            await t.do("shuffle")
            assert await t.deal(1) == [
                Event("shuffler.fault", {"reason": "unreadable card at index 0"})
            ]

    asyncio.run(main())


def test_jam_at_shuffle_and_fault_mid_round() -> None:
    async def main() -> None:
        shuffler = SimShuffler(rng=random.Random(10))
        async with Table(shuffler) as t:
            shuffler.fail_next("jam", at="shuffle", reason="incomplete shuffle")
            assert await t.do("shuffle") == [
                Event("shuffler.jam", {"reason": "incomplete shuffle"})
            ]
            assert shuffler.health().state == State.FAULT
            with pytest.raises(DeviceError, match="no shuffled deck ready"):
                shuffler.dispense()
            assert (await t.do("shuffle"))[0].kind == "shuffler.ready"
            assert shuffler.health().ok
            await t.deal(3)
            shuffler.fail_next("fault", at="dispense", reason="card path blocked")
            assert await t.deal(1) == [Event("shuffler.fault", {"reason": "card path blocked"})]
            health = shuffler.health()
            assert health.counters["jams"] == 1 and health.counters["faults"] == 1
            assert health.last_error == "card path blocked"
            with pytest.raises(DeviceError, match="cannot inject"):
                shuffler.fail_next("smoke")

    asyncio.run(main())


def test_no_answer() -> None:
    async def main() -> None:
        shuffler = SimShuffler(rng=random.Random(11), answer_timeout_s=0.01)
        async with Table(shuffler) as t:
            shuffler.no_answer = True
            await shuffler.command("shuffle", {})
            await asyncio.sleep(0.03)
            await settle()
            assert t.events == [Event("shuffler.fault", {"reason": "no answer"})]
            health = shuffler.health()
            assert health.state == State.OFFLINE and health.counters["timeouts"] == 1
            assert (await shuffler.selftest())["ok"] is False

    asyncio.run(main())


def test_unknown_command_csprng_and_selftest() -> None:
    async def main() -> None:
        shuffler = SimShuffler()
        assert isinstance(shuffler.rng, secrets.SystemRandom)
        async with Table(shuffler) as t:
            with pytest.raises(DeviceError, match="unknown command 'cut'"):
                await t.do("cut")
            result = await shuffler.selftest()
            assert result["ok"] and result["deck_check"]["count"] == 52
            assert t.events == []

    asyncio.run(main())


def test_dispense_command_deals_count_cards() -> None:
    async def main() -> None:
        shuffler = SimShuffler(decks=2, rng=random.Random(12))
        async with Table(shuffler) as t:
            # Before any shuffle: reported as a fault, not raised (e.g. after a restart).
            (fault,) = await t.do("dispense", count=2)
            assert fault.kind == "shuffler.fault" and "no shuffled deck" in fault.data["reason"]
            await t.do("shuffle")
            dealt = await t.do("dispense", count=16, deck=1)
            assert [e.data["index"] for e in dealt] == list(range(16))
            assert await t.do("dispense", count=1, deck=2) == [
                Event("shuffler.fault", {"reason": "deck 2 is not in play (deck 1 is)"})
            ]
            with pytest.raises(DeviceError, match="missing argument 'count'"):
                await t.do("dispense")

    asyncio.run(main())


def test_dispense_command_stops_at_a_fault() -> None:
    async def main() -> None:
        shuffler = SimShuffler(rng=random.Random(13))
        async with Table(shuffler) as t:
            await t.do("shuffle")
            shuffler.fail_next("jam", at="dispense", reason="card jam")
            assert await t.do("dispense", count=5) == [
                Event("shuffler.jam", {"reason": "card jam"})
            ]

    asyncio.run(main())


def test_retry_delay_grows_to_its_cap_and_an_answer_ends_it() -> None:
    assert retry_delay(0, 2.0, 60.0) == 0.0
    assert [retry_delay(n, 2.0, 60.0) for n in range(1, 8)] == [2, 4, 8, 16, 32, 60, 60]
    assert retry_delay(10**6, 2.0, 60.0) == 60.0  # no overflow after a long night


def test_a_silent_shuffler_is_asked_again_after_growing_pauses_not_at_once() -> None:
    # The round machine answers each failed shuffle with another (UTH 12.1); here the test does the
    # same. Without the pauses a shuffler that never answers (timeout 10 ms) would fail every
    # ~10 ms; with pauses of 40, 80, 160, 160 ms five failures take at least 0.44 s, each pause
    # at least as long as the one before, and an answer ends the pauses. Only lower bounds on
    # time are asserted: a loaded machine makes every gap longer, never shorter.
    async def main() -> None:
        shuffler = SimShuffler(rng=random.Random(5), answer_timeout_s=0.01)
        shuffler.retry_base_s, shuffler.retry_cap_s = 0.04, 0.16
        faults: list[float] = []
        ready: list[Event] = []
        asked: set[asyncio.Task[None]] = set()
        five = asyncio.Event()
        loop = asyncio.get_running_loop()

        def emit(event: Event) -> None:
            if event.kind == "shuffler.ready":
                ready.append(event)
            elif event.kind == "shuffler.fault":
                faults.append(loop.time())
                if len(faults) >= 5:
                    five.set()
                    return  # the test stops asking: the state settles
                task = loop.create_task(shuffler.command("shuffle", {}))
                asked.add(task)
                task.add_done_callback(asked.discard)

        await shuffler.start(emit)
        shuffler.no_answer = True
        await shuffler.command("shuffle", {})
        await asyncio.wait_for(five.wait(), 30)
        await asyncio.gather(*asked)
        gaps = [b - a for a, b in itertools.pairwise(faults)]
        assert faults[-1] - faults[0] >= 0.04 + 0.08 + 0.16 + 0.16 - 0.01, gaps
        assert gaps[0] >= 0.04 and gaps[1] >= 0.08 and gaps[2] >= 0.16 and gaps[3] >= 0.16, gaps
        health = shuffler.health()
        assert health.state == State.OFFLINE
        assert health.counters["shuffles_delayed"] == len(faults) - 1  # every one after a failure
        # It answers again (repaired): the shuffle asked now waits out the last pause, then
        # succeeds; the pauses are over and the next shuffle is not delayed.
        shuffler.no_answer = False
        await shuffler.command("shuffle", {})
        while not ready:
            await asyncio.sleep(0.01)
        await asyncio.gather(*shuffler._retries)
        assert [e.kind for e in ready] == ["shuffler.ready"]
        assert shuffler.unanswered == 0 and shuffler.health().state == State.READY
        delayed = shuffler.health().counters["shuffles_delayed"]
        await shuffler.command("shuffle", {})
        assert shuffler.health().counters["shuffles_delayed"] == delayed
        await shuffler.stop()

    asyncio.run(main())


def test_stopping_cancels_a_waiting_retry() -> None:
    async def main() -> None:
        shuffler = SimShuffler(rng=random.Random(6), answer_timeout_s=0.01)
        shuffler.retry_base_s = 0.05
        events: list[Event] = []
        await shuffler.start(events.append)
        shuffler.no_answer = True
        await shuffler.command("shuffle", {})
        await asyncio.sleep(0.03)
        shuffler.no_answer = False
        await shuffler.command("shuffle", {})  # waits 50 ms for its retry
        with pytest.raises(DeviceError, match="already in progress"):
            await shuffler.command("shuffle", {})
        await shuffler.stop()
        await asyncio.sleep(0.1)
        assert [e.kind for e in events] == ["shuffler.fault"]  # nothing after the stop

    asyncio.run(main())
