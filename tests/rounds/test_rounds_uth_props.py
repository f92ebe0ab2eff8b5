"""Properties of the UTH round machine under random event sequences: simulated play interleaved
with junk events (any kind, any fields) and clock jumps. `step` never raises, a refused event
changes nothing, round numbers are contiguous, every completed round conserves money, every
void returns exactly what was wagered, and replaying the journal rebuilds the same state."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.games.uth.cards import format_card, full_deck
from controller.rounds.base import Event
from controller.rounds.uth import EVENT_KINDS, UthConfig
from controller.sim.uth import UthSim
from tests.support.uth_table import POOL, Table, money_conserved, replay

TOKENS = [format_card(c) for c in full_deck()] + ["Jk", "", "10h"]
FIELDS = [
    "box",
    "ante",
    "blind",
    "trips",
    "card",
    "index",
    "deck",
    "action",
    "reason",
    "ok",
    "missing",
    "extra",
    "unreadable",
    "round",
    "payouts",
    "pool",
    "amount",
    "version",
    "rule",
]
VALUES = st.one_of(
    st.integers(-2, 12),
    st.integers(0, 10**6),
    st.sampled_from(TOKENS),
    st.sampled_from(
        [
            "play4",
            "play3",
            "play2",
            "play1",
            "check",
            "fold",
            "uth",
            "p1",
            "dealer_revealed",
            "cards_revealed",
        ]
    ),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, width=16),
    st.lists(st.sampled_from(TOKENS[:5]), max_size=2),
    st.lists(
        st.fixed_dictionaries({"box": st.integers(0, 8), "amount": st.integers(-1, 500)}),
        max_size=2,
    ),
)
JUNK = st.tuples(
    st.just("junk"),
    st.sampled_from([*sorted(EVENT_KINDS), "dealer.dance"]),
    st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=4),
)
# Mostly simulated play, so that rounds complete; now and then junk or a clock jump. The roll
# picks the action before its fields are drawn: drawing a junk event and a jump for every action
# and keeping one in five cost more than playing the rounds.
BY_ROLL = [st.just(("sim",))] * 16 + [JUNK] * 3 + [st.tuples(st.just("tick"), st.integers(0, 7000))]
ACTIONS = st.lists(
    st.integers(0, 19).flatmap(lambda roll: BY_ROLL[roll]),
    min_size=80,
    max_size=250,
)
LINKED = UthConfig(pool=POOL, linked=True, pool_id="uth", pool_timeout_ms=5000)


def drive(table: Table, sim: UthSim, actions: list[tuple[Any, ...]], *, strict: bool) -> None:
    queued: list[Event] = []
    for action in actions:
        if action[0] == "tick":
            table.ms += action[1]
            table.step("tick")
            continue
        if action[0] == "sim":
            if not queued:
                queued = sim.next_events(table.seat_view())
            if not queued:
                continue
            event = queued.pop(0)
        else:
            event = Event(action[1], action[2])
        before = table.state
        out = table.event(event)
        texts = [str(e.data.get("text", "")) for e in out]
        assert not any("internal error" in t for t in texts), texts
        if strict and texts and texts[0].startswith(f"{event.kind} refused"):
            assert table.state == before, event  # standalone: no clock-driven change either
        table.pump()


def check(table: Table) -> None:
    numbers = [r["number"] for r in table.rounds]
    assert numbers == list(range(1, len(numbers) + 1))
    assert table.state.round == len(numbers) + 1
    for r in table.rounds:
        if r["status"] == "completed":
            assert money_conserved(r["summary"])
    full, _ = replay(table.machine, table.machine.initial(), table.journal)
    assert full == table.state
    # JSON of the final state and status are plain JSON.
    json.dumps(table.machine.to_json(table.state))
    json.dumps(table.machine.status(table.state))


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(seed=st.integers(0, 2**16), actions=ACTIONS)
def test_random_sequences_standalone(seed: int, actions: list[tuple[Any, ...]]) -> None:
    table = Table(seed=seed)
    drive(table, UthSim(random.Random(seed), misdeal_rate=0.1), actions, strict=True)
    check(table)


@SETTINGS
@given(seed=st.integers(0, 2**16), actions=ACTIONS)
def test_random_sequences_linked(seed: int, actions: list[tuple[Any, ...]]) -> None:
    table = Table(LINKED, seed=seed)
    table.step("ho.pool", pool="uth", amount=5_000_000, version=0)
    drive(table, UthSim(random.Random(seed)), actions, strict=False)
    check(table)


@SETTINGS
@given(seed=st.integers(0, 2**16), actions=ACTIONS)
def test_voids_return_exactly_what_was_wagered(seed: int, actions: list[tuple[Any, ...]]) -> None:
    table = Table(seed=seed)
    keyed: dict[int, tuple[int, int, int]] = {}
    jackpot: list[int] = []
    plays: dict[int, int] = {}

    def watch(event: Event) -> None:
        # What the machine says is on the layout just before a void.
        keyed.clear()
        keyed.update(table.state.box_wagers())
        jackpot[:] = table.state.jackpot_boxes
        if not table.state.in_round and table.state.jackpot["online"]:
            # This event may be the first card: it locks the sensed chips on hands (5.5).
            jackpot[:] = [b for b in table.state.sensors if b in keyed]
        plays.clear()
        for box, d in table.state.decisions.items():
            multiple = int(d[:-1]) if d.endswith("x") else 0
            plays[int(box)] = multiple * keyed[int(box)][0]

    original = table.event

    def event(e: Event):
        watch(e)
        out = original(e)
        for r in (dict(x.data) for x in out if x.kind == "round" and x.data["status"] == "voided"):
            returned = {x["box"]: x for x in r["summary"]["returned"]}
            assert set(returned) == set(keyed)
            for box, (ante, blind, trips) in keyed.items():
                jp = table.config.jackpot_wager if box in jackpot else 0
                got = returned[box]
                assert (got["ante"], got["blind"], got["trips"], got["jackpot"]) == (
                    ante,
                    blind,
                    trips,
                    jp,
                )
                assert got["play"] == plays.get(box, 0)
        return out

    table.event = event  # type: ignore[method-assign]
    drive(table, UthSim(random.Random(seed), misdeal_rate=0.2), actions, strict=True)
    check(table)
