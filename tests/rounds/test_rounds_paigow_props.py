"""Properties of the Pai Gow round machine and full simulated sessions.

- random event sequences (sensible ones from PaiGowSim mixed with arbitrary ones) never make
  `step` raise; round numbers stay contiguous; every completed settlement conserves money;
  every step replays identically from the state's JSON snapshot (step_checked);
- 200 simulated rounds per profile complete with contiguous numbers, bank round limits kept
  (NSW 6.7, NZ 5.4, ACT 6.7), voids and OFF draws included;
- the OFF-box draw never removes the bank's box (NSW 15.9.4, NZ 12.10).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.games.paigow.dice import first_box
from controller.games.paigow.profiles import Profile
from controller.rounds.base import EFFECT_KINDS, Effect, Event
from controller.rounds.paigow import PaiGowConfig, PaiGowMachine
from controller.sim.paigow import PaiGowSim
from tests.support.paigow_table import (
    Table,
    device_events,
    session,
    step_checked,
)

BOX = st.integers(-1, 10)
DIE = st.one_of(st.integers(0, 7), st.just("not_flat"), st.none())
TILE = st.sampled_from(["6-6", "1-1", "4-4", "1-3", "5-5", "3-3", "2-2", "4-5", "1-2", "7-7"])
JUNK = st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=5),
                                                       st.none(), st.lists(st.integers())),
                       max_size=3)
HAND = st.one_of(
    st.lists(TILE, min_size=4, max_size=4).map(lambda t: f"{t[0]} {t[1]} / {t[2]} {t[3]}"),
    st.lists(TILE, min_size=3, max_size=5).map(lambda t: {"tiles": t}),
    st.just({"conceded": True}),
    st.integers(),
)
DATA: dict[str, st.SearchStrategy[Any]] = {
    "table.open": st.just({}),
    "table.close": st.just({}),
    "chung.on": st.fixed_dictionaries({"box": BOX}),
    "chung.off": st.fixed_dictionaries({"box": BOX}),
    "off.pressed": st.fixed_dictionaries({"box": BOX}),
    "off.released": st.fixed_dictionaries({"box": BOX}),
    "dealer.off_clear": st.one_of(st.just({}), st.fixed_dictionaries({"box": BOX})),
    "dealer.off_draw": st.just({}),
    "dealer.off_cancel": st.just({}),
    "dealer.bank": st.fixed_dictionaries({
        "box": BOX, "holder": st.sampled_from(["player", "co-bank", "house", "x"]),
        "funds": st.one_of(st.none(), st.integers(-5, 10**6)),
        "player": st.sampled_from(["p2", "p3", "p5", "roamer"]),
    }),
    "dealer.house_bank": st.just({}),
    "dealer.wager": st.fixed_dictionaries({
        "box": BOX, "player": st.sampled_from(["p2", "p3", "p5", "q5", "r5", "s5", "", 7]),
        "amount": st.sampled_from([-100, 0, 1000, 1050, 2000, 600_000, "10"]),
        "seated": st.booleans(),
    }),
    "dealer.wager_remove": st.fixed_dictionaries({"box": BOX, "player": st.just("p2")}),
    "dealer.cut": st.fixed_dictionaries({
        "cut": st.sampled_from(["Cup Say", "China Bank", "Dai Pin", "Nope", "Sydney Tower"]),
        "options": st.lists(st.sampled_from(["right", "left", "top", "up"]), max_size=2),
        "by": st.sampled_from(["banker", "supervisor", "dog"]),
    }),
    "cut.selected": st.fixed_dictionaries({
        "cut": st.sampled_from(["Cup Say", "China Bank", "Pong Yun"]),
        "options": st.lists(st.sampled_from(["right", "left", "top", "bottom"]), max_size=2),
    }),
    "dealer.steal": st.fixed_dictionaries({"value": st.one_of(st.integers(-6, 6), st.text())}),
    "dealer.no_more_bets": st.just({}),
    "dealer.shake": st.just({}),
    "dice.not_flat": st.just({}),
    "dice.result": st.fixed_dictionaries({
        "box_dice": st.one_of(st.lists(DIE, min_size=2, max_size=4), st.text(max_size=3)),
        "cut_die": DIE,
    }),
    "shaker.fault": st.fixed_dictionaries({"reason": st.text(max_size=5)}),
    "dealer.delivered": st.just({}),
    "dealer.result": st.fixed_dictionaries({
        "hands": st.dictionaries(st.sampled_from(["1", "2", "3", "5", "x"]), HAND, max_size=3),
        "bank_hand": HAND,
    }),
    "dealer.void": st.fixed_dictionaries({"reason": st.text(max_size=5),
                                          "kind": st.sampled_from(["distribution", "tile", "z"])}),
    "tick": st.just({}),
    "bet.on": st.fixed_dictionaries({"box": BOX}),
    "weird.kind": JUNK,
}
RANDOM_EVENT = st.sampled_from(sorted(DATA)).flatmap(
    lambda kind: st.one_of(DATA[kind], JUNK).map(lambda data: Event(kind, data))
)


class Ledger:
    """What every sequence of effects must respect."""

    def __init__(self) -> None:
        self.next_number = 1

    def check(self, effects: list[Effect]) -> None:
        for effect in effects:
            assert effect.kind in EFFECT_KINDS
            json.dumps(effect.as_json())  # effects are journaled and sent as JSON
            if effect.kind != "round":
                continue
            assert effect.data["number"] == self.next_number  # contiguous from 1
            self.next_number += 1
            summary = effect.data["summary"]
            settlement = summary.get("settlement")
            if settlement is not None:
                assert settlement["conserved"]
                net = settlement["players_net"] + settlement["banker_net"]
                assert net + settlement["house_net"] == 0
                assert sum(r["net"] for r in settlement["results"]) == settlement["players_net"]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(list(Profile)), st.integers(0, 2**16))
def test_random_event_sequences(data: st.DataObject, profile: Profile, seed: int) -> None:
    m = PaiGowMachine(PaiGowConfig(profile))
    state = m.initial()
    sim = PaiGowSim(random.Random(seed), profile)
    devices = random.Random(seed + 1)
    ledger = Ledger()
    for _ in range(data.draw(st.integers(5, 60), label="turns")):
        status = m.status(state)
        json.dumps(status)
        if data.draw(st.integers(0, 3), label="sensible") > 0:
            events = device_events(status, devices, profile) or sim.next_events(status)
        else:
            events = [data.draw(RANDOM_EVENT, label="event")]
        for event in events:
            state, effects = step_checked(m, state, event)
            ledger.check(effects)
            assert state.number == ledger.next_number  # the open round is the next to record
        json.dumps([e.as_json() for e in m.resume(state)])


@pytest.mark.parametrize("profile", list(Profile))
def test_two_hundred_simulated_rounds(profile: Profile) -> None:
    records, effects, _, _ = session(profile, 200, seed=7, replay_check=True)
    Ledger().check(effects)
    assert [r["number"] for r in records] == list(range(1, 201))
    statuses = {r["status"] for r in records}
    assert statuses == {"completed", "voided"}
    completed = [r["summary"] for r in records if r["status"] == "completed"]
    assert sum(1 for s in completed if s["settlement"]) > 150
    holders = {s["banker"]["holder"] for s in completed}
    assert "player" in holders and "house" in holders
    _check_bank_limits(completed)
    if profile is not Profile.ACT:  # ACT has no OFF-box rule
        offs = [e.data for e in effects if e.kind == "display" and e.data["text"].endswith("OFF")]
        assert offs and all(d["box"] != 1 for d in offs if profile is Profile.NSW)


def _check_bank_limits(completed: list[dict[str, Any]]) -> None:
    """No box holds a player bank for more than 2 consecutive completed rounds (NSW 6.7 with one
    bank per area, NZ 5.4, ACT 6.7); a first round in the bank is rounds_in_bank 0."""
    run_box, run = None, 0
    for s in completed:
        banker = s["banker"]
        if banker["holder"] == "house":
            run_box, run = None, 0
            continue
        run = run + 1 if banker["box"] == run_box else 1
        run_box = banker["box"]
        assert run <= 2, s["number"]
        assert banker["rounds_in_bank"] <= 1


def test_fewer_boxes_and_a_second_seed() -> None:
    records, effects, _, _ = session(Profile.NZ, 60, seed=11, boxes=6)
    Ledger().check(effects)
    assert [r["number"] for r in records] == list(range(1, 61))
    for r in records:
        assert all(int(b) <= 6 for b in r["summary"].get("outcomes", {}))


def test_sessions_are_deterministic_for_a_seed() -> None:
    a = session(Profile.NSW, 30, seed=3)[1]
    b = session(Profile.NSW, 30, seed=3)[1]
    c = session(Profile.NSW, 30, seed=4)[1]
    assert [e.as_json() for e in a] == [e.as_json() for e in b]
    assert [e.as_json() for e in a] != [e.as_json() for e in c]


def test_sim_waits_for_devices_and_opens_a_closed_table() -> None:
    sim = PaiGowSim(random.Random(1), Profile.NSW)
    t = Table(Profile.NSW)
    assert [e.kind for e in sim.next_events(t.status)] == ["table.open"]
    t.send("table.open")
    t.send("dealer.no_more_bets")
    assert sim.next_events(t.status) == []  # the shaker is due, not people


def test_sim_result_after_a_restart_mid_round() -> None:
    t = Table(Profile.ACT)
    t.send("table.open")
    t.to_shaking(p2=1000, p4=1000)
    t.dice(1, 2, 2)
    t.send("dealer.delivered")
    fresh = PaiGowSim(random.Random(5), Profile.ACT)  # never saw the delivery
    for event in fresh.next_events(t.status):
        t.send(event.kind, **event.data)
    assert t.state.number == 2 and len(t.rounds) == 1


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([Profile.NSW, Profile.NZ]),
       st.lists(st.tuples(*[st.integers(1, 6)] * 3), min_size=1, max_size=8))
def test_off_draw_never_removes_the_bank_box(profile: Profile, shakes: list) -> None:
    t = Table(profile)
    t.send("table.open")
    t.send("dealer.off_draw")
    for dice in shakes:
        t.dice(*dice)
        drawn = first_box(1, sum(dice))  # counted from box 1 (NSW 15.9.3, NZ 12.10)
        if drawn == 1:
            assert t.phase == "off_draw" and t.state.off_boxes == []  # rolled again (NSW 15.9.4)
        else:
            assert t.phase == "betting" and t.state.off_boxes == [drawn]
            break
