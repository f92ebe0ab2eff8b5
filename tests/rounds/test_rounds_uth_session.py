"""Whole sessions: UthSim players and dealer, seeded shuffled decks, injected shuffler faults and
foreign cards, and (linked mode) a head office that goes away for a while."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

from controller.games.uth.cards import parse_cards
from controller.games.uth.jackpot import JackpotEntry, PoolState, award, contribute
from controller.rounds.base import Event
from controller.rounds.uth import UthConfig
from controller.rounds.uth.state import pool_state
from controller.sim.uth import UthSim
from tests.support.uth_table import POOL, Table, money_conserved

FAULT_RATE = 0.01


def _inject(table: Table, rng: random.Random) -> None:
    """Now and then: a jam before the deal (12.1), a fault mid-deal (12.2), a foreign card
    (11.7)."""
    r = rng.random()
    cards = [e for e in table.queue if e.kind == "card.dispensed"]
    if not cards or r > 3 * FAULT_RATE:
        return
    table.queue.clear()  # the shuffler stops
    if r < FAULT_RATE and not table.state.in_round:
        table.step("shuffler.jam", reason="card jam")
    elif r < 2 * FAULT_RATE:
        table.step("card.dispensed", card="Jk", index=cards[0].data["index"])
    else:
        table.step("card.dispensed", **cards[0].data)
        table.step("shuffler.fault", reason="motor")


def play(table: Table, sim: UthSim, rounds: int, rng: random.Random, hook=None) -> None:
    while len(table.rounds) < rounds:
        events = sim.next_events(table.seat_view())
        assert events or table.queue, f"stuck: {table.status()}"
        for event in events:
            table.ms += 700
            table.event(event)
            if event.kind == "dealer.deal":
                _inject(table, rng)
            table.pump()
            if hook:
                hook(table)


def check_rounds(table: Table, rounds: int) -> None:
    numbers = [r["number"] for r in table.rounds]
    assert numbers == list(range(1, len(numbers) + 1))
    assert table.state.round == len(numbers) + 1
    statuses = [r["status"] for r in table.rounds]
    assert statuses.count("voided") >= 1 and statuses.count("completed") > rounds // 2
    for r in table.rounds:
        if r["status"] == "completed":
            assert money_conserved(r["summary"]), r
        else:
            assert r["summary"]["rule"] in {"11.1", "11.2", "11.4.1", "11.7", "12.2"}


def jackpot_wagered(table: Table) -> int:
    return sum(
        r["summary"]["jackpot"]["amount"] for r in table.rounds if r["status"] == "completed"
    )


def test_two_hundred_simulated_rounds_standalone() -> None:
    rng = random.Random(2026)
    table = Table(seed=11)
    play(table, UthSim(random.Random(5), misdeal_rate=0.03), 200, rng)
    check_rounds(table, 200)
    assert len(table.rounds) == 200
    ledger = table.state.ledger
    # Only completed rounds' jackpot wagers count: a void cancels them (15.3.1).
    assert ledger["wagered"] == jackpot_wagered(table) > 0
    now = pool_state(table.state.pool)
    rate = POOL.increment + POOL.hidden
    # jackpot.py's conservation: seed money + contributions + house top-ups == pool + paid.
    assert (
        POOL.total + ledger["wagered"] * rate + ledger["from_house"] == now.total + ledger["paid"]
    )
    paid = sum(
        p["amount"]
        for r in table.rounds
        if r["status"] == "completed"
        for p in r["summary"]["jackpot"].get("payouts", [])
    )
    assert paid == ledger["paid"] > 0
    assert any(r["summary"]["rule"] == "11.7" for r in table.rounds if r["status"] == "voided")


class HeadOffice:
    """A reference pool at head office: applies increments, cancels and hits from the outbox and
    answers with ho.pool / ho.award, unless it is down."""

    def __init__(self, pool: PoolState, config: UthConfig) -> None:
        self.pool = pool
        self.config = config
        self.version = 0
        self.paid = 0
        self.house = 0
        self.wagered = 0
        self.down = False
        self.inbox: list[dict[str, Any]] = []  # outbox rows not yet delivered
        self.seen = 0

    def collect(self, table: Table) -> None:
        new = table.effects[self.seen :]
        self.seen = len(table.effects)
        self.inbox += [dict(e.data) for e in new if e.kind == "outbox"]
        if self.down:
            return
        answers = [a for msg in self.inbox for a in self._apply(msg)]
        self.inbox = []
        self.version += 1
        answers.append(
            Event("ho.pool", {"pool": "p1", "amount": self.pool.amount, "version": self.version})
        )
        for event in answers:
            table.event(event)
        self.seen = len(table.effects)

    def _apply(self, msg: dict[str, Any]) -> list[Event]:
        payload = msg["payload"]
        if msg["type"] == "jackpot_increment":
            self.wagered += payload["amount"]
            self.pool = contribute(self.pool, [payload["wager"]] * payload["wagers"])
        elif msg["type"] == "jackpot_cancel":
            self.wagered -= payload["amount"]
            self.pool = contribute(self.pool, [-payload["wager"]] * payload["wagers"])
        elif msg["type"] == "jackpot_hit":
            entries = [
                JackpotEntry(e["box"], parse_cards(e["cards"]), e["wager"], e["folded"])
                for e in payload["entries"]
            ]
            result = award(self.pool, entries, self.config.jackpot_table)
            self.pool = result.state
            self.paid += sum(p.amount for p in result.payouts)
            self.house += result.house_paid
            payouts = [
                {"box": p.box, "award": p.award.value, "amount": p.amount} for p in result.payouts
            ]
            return [Event("ho.award", {"round": payload["round"], "payouts": payouts})]
        return []


def test_linked_session_with_a_head_office_outage() -> None:
    # A small meter and generous increments so that hits are frequent enough to matter.
    pool = PoolState(2000, 2000, increment=Fraction(1, 4), hidden=Fraction(1, 20))
    config = UthConfig(pool=pool, linked=True, pool_id="p1", pool_timeout_ms=5000)
    table = Table(config, seed=3)
    ho = HeadOffice(pool, config)
    ho.collect(table)
    rng = random.Random(9)

    def hook(t: Table) -> None:
        rounds = len(t.rounds)
        ho.down = 40 <= rounds < 60  # head office away for 20 rounds: OFFLINE, hits PENDING
        ho.collect(t)

    statuses: list[str] = []

    def watch(t: Table) -> None:
        hook(t)
        statuses.append(t.status()["jackpot"])

    play(table, UthSim(random.Random(8), jackpot_rate=0.9), 100, rng, watch)
    ho.down = False
    ho.collect(table)
    check_rounds(table, 100)
    assert "offline" in statuses and statuses[-1] == "online"
    assert table.status()["pool"]["pending"] == []
    ledger = table.state.ledger
    assert ledger["wagered"] == ho.wagered == jackpot_wagered(table)
    assert ledger["paid"] == ho.paid > 0
    rate = pool.increment + pool.hidden
    assert pool.total + ho.wagered * rate + ho.house == ho.pool.total + ho.paid
    assert table.status()["pool"]["amount"] == ho.pool.amount
