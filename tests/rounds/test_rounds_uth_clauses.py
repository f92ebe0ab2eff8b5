"""Issue 30's last UTH clauses: the Play area's own maximum (6.1, 6.3, 11.8.2) and a round whose
outcome a supervisor invalidates (13.9-13.10)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from controller.games.uth.settlement import Limits, SettlementRules, Spot, settle_hands
from controller.games.uth.wagers import BoxPlay, BoxWagers, Decision
from controller.meters import Figures
from controller.rounds.base import Effect, Event
from controller.rounds.uth import UthConfig
from tests.support.uth_cards import cards
from tests.support.uth_table import POOL, Table, of, played_four_times, texts

ANTE = Limits(1000, 5000)  # the sign: Ante (and Blind, 5.3) $10 to $50
OPERATOR = {"uid": 1001, "user": "sam"}  # what the control socket adds: who asked
# Three nines against the dealer's pair of kings: Ante and Play win, Blind stands off (10.7.3.7).
BOARD, PLAYER, DEALER = "9c 9d 4h Kc 2s", "9h 5s", "Kd Qc"


def settle_box(ante: int, multiple: int, rules: SettlementRules) -> Any:
    play = BoxPlay(1, BoxWagers(ante, ante), Decision.play(multiple))
    result = settle_hands(cards(f"{DEALER} {BOARD}"), {1: (cards(f"{PLAYER} {BOARD}"), play)},
                          rules)
    (box,) = result.boxes
    return box


# -- 6.1, 6.3, 11.8.2: the Play area's maximum ---------------------------------------------------
def test_a_4x_play_on_an_ante_over_the_maximum_is_settled_to_the_play_areas_maximum() -> None:
    # $60 Ante on a $50 sign, 4x Play ($240): Ante paid to $50, Play to 4 x $50 = $200 (today's
    # main paid the whole $240: +$290 where the sign's maximum gives +$250; the issue's
    # +$29,000 / +$25,000 at 100 times the stakes).
    rules = SettlementRules(limits={Spot.ANTE: ANTE, Spot.BLIND: ANTE})
    box = settle_box(6000, 4, rules)
    play = next(s for s in box.spots if s.spot is Spot.PLAY)
    assert (play.placed, play.stake, play.won, play.returned) == (24000, 20000, 20000, 44000)
    assert box.net == 25000
    # A sign with a Play maximum of its own (the table's `play_max`) settles to that.
    own = SettlementRules(limits={Spot.ANTE: ANTE, Spot.BLIND: ANTE, Spot.PLAY: Limits(0, 30000)})
    assert settle_box(6000, 4, own).net == 29000


@given(ante=st.integers(1, 400).map(lambda n: n * 100), multiple=st.sampled_from([1, 2, 3, 4]),
       ante_max=st.integers(10, 200).map(lambda n: n * 100))
def test_the_play_is_settled_to_four_times_the_ante_maximum(
    ante: int, multiple: int, ante_max: int
) -> None:
    # 6.3/11.8.2: a wager over the stated maximum is paid to the maximum; the Play area's is
    # 4 x the Ante's (the largest Play, 9.1.2) unless the sign states another.
    sign = Limits(0, ante_max)
    rules = SettlementRules(limits={Spot.ANTE: sign, Spot.BLIND: sign})
    play = next(s for s in settle_box(ante, multiple, rules).spots if s.spot is Spot.PLAY)
    placed = ante * multiple
    assert play.placed == placed and play.stake == min(placed, 4 * ante_max)
    assert play.returned == placed + play.stake  # a win: the excess back untouched, the stake paid


def test_the_round_record_shows_the_play_settled_to_its_maximum() -> None:
    rules = SettlementRules(limits={Spot.ANTE: ANTE, Spot.BLIND: ANTE})
    play = played_four_times(Table(UthConfig(pool=POOL, rules=rules)), 3, 6000)
    assert (play["placed"], play["stake"]) == (24000, 20000)


# -- 13.9-13.10: a supervisor invalidates the outcome --------------------------------------------
def at_the_river(jackpot: bool = False) -> Table:
    t = Table()
    t.deal_round({2: (1000, 500), 5: (2000, 0)}, jackpot=[2, 5] if jackpot else [])
    t.step("dealer.decision", box=2, action="play4")
    t.step("dealer.flop")
    t.step("dealer.turn_river")
    assert t.state.phase == "river"
    return t


def invalidate(t: Table, **data: Any) -> list[Effect]:
    return t.event(Event("dealer.void", {"kind": "invalidated", **data}))


def test_a_supervisor_invalidates_the_outcome_with_its_clause_and_name() -> None:
    # Today: `dealer.void` records whatever `rule` was typed (13.9 by default), and nobody.
    for cause, rule in (("disruption", "13.9.1, 13.10"), ("fraud", "13.9.2, 13.10")):
        t = at_the_river()
        out = invalidate(t, cause=cause, reason="robbery at the pit", operator=OPERATOR)
        (record,) = of(out, "round")
        summary = record["summary"]
        assert record["status"] == "voided" and summary["rule"] == rule
        assert (summary["kind"], summary["cause"], summary["voided_by"]) == (
            "invalidated", cause, OPERATOR)
        assert [(w["box"], w["ante"], w["play"]) for w in summary["returned"]] == [
            (2, 1000, 4000), (5, 2000, 0)]  # refunded (13.10), the Play too
        assert "forfeited" not in summary and t.state.phase == "betting"


def test_13_10_the_fraudsters_wagers_forfeited_their_jackpot_wager_returned() -> None:
    t = at_the_river(jackpot=True)
    out = invalidate(t, cause="fraud", reason="past-posting", forfeit=[2], operator=OPERATOR)
    summary = of(out, "round")[0]["summary"]
    assert summary["forfeited"] == [{"box": 2, "ante": 1000, "blind": 1000, "trips": 500,
                                     "play": 4000}]
    assert summary["returned"] == [
        {"box": 2, "ante": 0, "blind": 0, "trips": 0, "play": 0, "jackpot": 100},  # 15.3.1
        {"box": 5, "ante": 2000, "blind": 2000, "trips": 0, "play": 0, "jackpot": 100},
    ]
    assert summary["house_net"] == 6500
    figures = Figures()
    figures.add(1, "voided", summary)
    assert figures.house_win == 6500


def test_the_invalidation_needs_a_named_supervisor_a_cause_and_fraud_to_forfeit() -> None:
    refused = [
        ({"cause": "fraud", "reason": "r"}, "supervisor"),  # from the keypad: nobody named
        ({"cause": "fire", "reason": "r", "operator": OPERATOR}, "cause"),
        ({"cause": "disruption", "reason": "r", "forfeit": [2], "operator": OPERATOR}, "fraud"),
        ({"cause": "fraud", "reason": "r", "forfeit": [4], "operator": OPERATOR}, "no wager"),
    ]
    for data, why in refused:
        t = at_the_river()
        before = t.state
        out = invalidate(t, **data)
        assert t.state == before and why in texts(out), (data, texts(out))


def test_a_plain_void_names_who_voided_it() -> None:
    t = at_the_river()
    out = t.step("dealer.void", reason="brawl", operator=OPERATOR)
    assert of(out, "round")[0]["summary"]["voided_by"] == OPERATOR
