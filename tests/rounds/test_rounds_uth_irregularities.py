"""UTH irregularities, each cause with its own clause's outcome (issue 13; seed 001, rules 6.1,
10.5, 11.1-11.7, 11.11). Every test fails on the machine before issue 13."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.games.uth.settlement import Limits, SettlementRules, Spot
from controller.rounds.uth import UthConfig
from controller.rounds.uth.state import state_from_json
from tests.support.uth_table import POOL, Table, lamps, of, texts

# Shuffler order (7.2): flop x3, turn, river, dealer x2, then two per box in ascending order.
DECK = "Ah Kh Qh 2c 7d 3s 4s Jh Th 9c 9d"


def _voided(out: list, rule: str) -> dict:
    (rnd,) = of(out, "round")
    assert rnd["status"] == "voided" and rnd["summary"]["rule"] == rule
    return rnd["summary"]


def _at_flop(*, play: str | None = None) -> Table:
    t = Table()
    t.stack(DECK)
    t.deal_round({2: (1000, 0)})
    t.step("dealer.decision", box=2, action="check")
    t.step("dealer.flop")
    if play:
        t.step("dealer.decision", box=2, action=play)
    return t


# -- 11.1 / 11.3 wrong number of cards --------------------------------------------------------
def test_wrong_count_after_the_flop_and_a_play_wager_still_voids_everything() -> None:
    t = _at_flop(play="play2")  # 11.4.2's exception does not reach a wrong count
    summary = _voided(t.step("dealer.misdeal", reason="wrong_count"), "11.1")
    assert summary["returned"] == [
        {"box": 2, "ante": 1000, "blind": 1000, "trips": 0, "play": 2000, "jackpot": 0}
    ]  # 11.3: all wagers void, the Play wager included


# -- 11.2 a card revealed during the deal -------------------------------------------------------
def test_a_card_revealed_during_the_deal_is_a_misdeal_but_not_after_the_first_decision() -> None:
    t = Table()
    t.deal_round({1: (500, 0)})
    _voided(t.step("dealer.misdeal", reason="cards_revealed"), "11.2")
    t.pump()
    t.deal_round({1: (500, 0)})
    t.step("dealer.decision", box=1, action="check")
    before = t.state
    out = t.step("dealer.misdeal", reason="cards_revealed")
    assert t.state == before and "11.2" in texts(out) and not of(out, "round")


# -- 11.4 the dealer's hole cards -----------------------------------------------------------------
def test_dealer_hole_card_with_the_flop_showing_and_no_play_wager_is_a_misdeal() -> None:
    t = _at_flop()  # issue 13: refused after the flop before
    _voided(t.step("dealer.misdeal", reason="dealer_revealed"), "11.4.1")


def test_dealer_hole_card_on_the_river_with_no_play_wager_is_a_misdeal() -> None:
    t = _at_flop()
    t.step("dealer.decision", box=2, action="check")
    t.step("dealer.turn_river")
    _voided(t.step("dealer.misdeal", reason="dealer_revealed"), "11.4.1")


def test_dealer_hole_card_after_a_play_wager_play_continues() -> None:
    t = _at_flop(play="play2")
    before = t.state
    out = t.step("dealer.misdeal", reason="dealer_revealed")
    assert t.state == before and of(out, "alarm")[0]["rule"] == "11.4.2"


def test_the_other_reading_counts_only_play_wagers_made_before_the_flop() -> None:
    # "If no play wagers have been made prior to the revealing of the flop cards" (11.4.1),
    # read as: a 2x on the flop does not count. A profile option (docs/rounds-uth.md).
    t = Table(UthConfig(pool=POOL, exposure_preflop_only=True))
    t.stack(DECK)
    t.deal_round({2: (1000, 0)})
    t.step("dealer.decision", box=2, action="check")
    t.step("dealer.flop")
    t.step("dealer.decision", box=2, action="play2")
    _voided(t.step("dealer.misdeal", reason="dealer_revealed"), "11.4.1")


# -- 11.5 a community card revealed early ------------------------------------------------------
def test_a_community_card_revealed_early_keeps_the_players_options() -> None:
    t = Table()
    t.deal_round({1: (500, 0)})
    before = t.state
    out = t.step("dealer.misdeal", reason="community_revealed")
    assert t.state == before and of(out, "alarm")[0]["rule"] == "11.5"
    t.step("dealer.decision", box=1, action="play4")  # the option stands
    assert t.state.decisions == {"1": "4x"}


# -- 11.6 a hand dealt to a box without Ante and Blind -----------------------------------------
def test_a_hand_on_a_box_without_wagers_voids_the_round_if_nobody_handled_cards() -> None:
    t = Table()
    t.deal_round({1: (500, 0)})
    _voided(t.step("dealer.misdeal", reason="no_wager_hand", box=4, handled=False), "11.6.1")


def test_a_hand_on_a_box_without_wagers_is_void_alone_once_cards_were_handled() -> None:
    t = Table()
    t.stack(DECK)
    t.deal_round({2: (1000, 0)})
    out = t.step("dealer.misdeal", reason="no_wager_hand", box=4, handled=True)
    assert of(out, "alarm")[0]["rule"] == "11.6.2" and not of(out, "round")
    assert t.state.void_hands == [4] and t.state.phase == "preflop"
    again = t.step("dealer.misdeal", reason="no_wager_hand", box=4, handled=True)
    assert "already void" in texts(again)
    wagered = t.step("dealer.misdeal", reason="no_wager_hand", box=2, handled=True)
    assert "has an Ante and a Blind" in texts(wagered)
    t.step("dealer.decision", box=2, action="play4")
    t.step("dealer.flop")
    t.step("dealer.turn_river")
    (rnd,) = of(t.step("dealer.dealer_hand"), "round")
    assert rnd["status"] == "completed" and rnd["summary"]["void_hands"] == [4]
    assert t.state.void_hands == []  # the next round starts clean


def test_an_unknown_misdeal_cause_is_refused_not_guessed() -> None:
    t = Table()
    t.deal_round({1: (500, 0)})
    before = t.state
    out = t.step("dealer.misdeal", reason="bad_vibes")
    assert t.state == before and "wrong_count" in texts(out)


# -- 11.7.3 the deck is checked before it is used again ------------------------------------------
@pytest.mark.parametrize("how", ["shuffler", "dealer"])
def test_a_deck_that_gave_a_foreign_card_waits_for_a_check(how: str) -> None:
    t = Table(UthConfig(pool=POOL, decks=(1,)), auto=False)
    t.step("shuffler.ready", deck=1)
    t.step("dealer.wager", box=2, ante=1000)
    t.step("dealer.deal")
    t.step("card.dispensed", card="As", index=0)
    out = t.step("card.dispensed", card="Jk", index=1)
    assert "11.7.3" in texts(out) and t.state.suspect == [1]
    t.step("shuffler.ready", deck=1)  # the reshuffle after the void
    t.step("dealer.wager", box=2, ante=1000)
    refused = t.step("dealer.deal")
    assert "11.7.3" in texts(refused) and t.state.phase == "betting"
    if how == "shuffler":
        out = t.step("deck.check", deck=1, ok=True)
    else:
        out = t.step("dealer.deck_confirmed", deck=1)
        assert "confirmed by the dealer" in texts(out)
    assert t.state.suspect == [] and of(out, "device", command="shuffle")  # 4.7
    t.step("shuffler.ready", deck=1)
    t.step("dealer.deal")
    assert t.state.phase == "dealing"


def test_the_dealer_confirms_only_a_flagged_deck() -> None:
    t = Table()
    before = t.state
    out = t.step("dealer.deck_confirmed", deck=1)
    assert t.state == before and "11.7.3" in texts(out)


# -- 10.5 concession from the keypad ------------------------------------------------------------
def test_a_conceding_player_loses_every_wager_after_the_dealers_hand() -> None:
    t = Table()
    t.stack(DECK)
    t.deal_round({2: (1000, 500), 5: (500, 0)})
    t.step("dealer.decision", box=2, action="play4")
    t.step("dealer.flop")
    t.step("dealer.turn_river")
    t.step("dealer.decision", box=5, action="fold")
    out = t.step("dealer.dealer_hand", conceded=[2])
    (rnd,) = of(out, "round")
    box2 = next(b for b in rnd["summary"]["boxes"] if b["box"] == 2)
    # Box 2 holds a royal flush, yet conceded: Ante, Blind, Play and Trips are collected.
    assert box2["decision"] == "concede-4x" and box2["net"] == -(1000 + 1000 + 4000 + 500)


def test_a_box_without_a_play_wager_cannot_concede() -> None:
    t = Table()
    t.stack(DECK)
    t.deal_round({2: (1000, 0), 5: (500, 0)})
    t.step("dealer.decision", box=2, action="play4")
    t.step("dealer.flop")
    t.step("dealer.turn_river")
    t.step("dealer.decision", box=5, action="fold")
    before = t.state
    out = t.step("dealer.dealer_hand", conceded=[5])
    assert t.state == before and "10.5" in texts(out)
    assert not of(out, "round")


# -- 6.1 the chip unit ---------------------------------------------------------------------------
def test_wagers_above_the_minimum_go_in_the_signs_unit() -> None:
    rules = SettlementRules(limits={Spot.ANTE: Limits(1000, 100_000),
                                    Spot.TRIPS: Limits(500, 50_000)})
    t = Table(UthConfig(pool=POOL, rules=rules, chip_unit=500))
    for ante, trips, ok in [(1000, 0, True), (1500, 0, True), (1200, 0, False),
                            (1000, 700, False), (1000, 1000, True)]:
        out = t.step("dealer.wager", box=1, ante=ante, trips=trips)
        assert (t.state.wagers.get("1") == [ante, ante, trips]) is ok, (ante, trips)
        assert ok or "6.1" in texts(out)


# -- 11.11 a failed meter command -----------------------------------------------------------------
def test_a_failed_meter_command_takes_the_jackpot_offline_until_the_meter_is_back() -> None:
    t = Table()
    out = t.step("meter.command_failed", command="show", reason="no answer")
    rules = [a.get("rule") for a in of(out, "alarm")]
    assert rules.count("11.11") >= 1 and t.state.jackpot["online"] is False
    assert of(out, "display") == [{"mode": "offline", "pool": "uth"}]
    t.step("bet.on", box=3)
    assert t.state.lamps == {}  # no jackpot wager while the meter cannot show the pool
    out = t.step("meter.ready")
    assert t.state.jackpot["online"] is True and lamps(out) == {3: "bet"}


# -- snapshots ---------------------------------------------------------------------------------
def test_snapshots_of_ordinary_play_keep_their_fields_and_old_ones_load() -> None:
    t = Table()
    snap = t.machine.to_json(t.state)
    assert "void_hands" not in snap  # unchanged bytes for journals of ordinary play
    assert state_from_json(snap) == t.state


# -- the meter shows the current pool (2.3, 2.4.3, 15.1.3) -------------------------------------
LINKED = UthConfig(pool=POOL, linked=True, pool_id="p1", pool_timeout_ms=5000)


def test_a_void_on_a_standalone_table_lowers_the_meter_at_once() -> None:
    t = Table()
    t.deal_round({2: (1000, 0)}, jackpot=[2])
    assert t.state.display["amount"] == POOL.amount + 10  # the contribution shown
    out = t.step("dealer.void", reason="brawl")
    # The meter refuses a lower figure unless told it may go down (devices/meter.py).
    assert of(out, "display") == [
        {"mode": "pool", "pool": "uth", "amount": POOL.amount, "after_award": True}
    ]


def test_another_tables_hit_lowers_this_tables_meter_as_soon_as_known() -> None:
    t = Table(LINKED)
    t.step("ho.pool", pool="p1", amount=500_200, version=3, awards=0)
    out = t.step("ho.pool", pool="p1", amount=500_000, version=4, awards=1)
    assert of(out, "display") == [
        {"mode": "pool", "pool": "p1", "amount": 500_000, "after_award": True}
    ]
    assert not of(out, "alarm")
    out = t.step("ho.pool", pool="p1", amount=499_000, version=5, awards=1)
    # Never more than the pool, even without an award (another table's void cancelled its
    # jackpot wagers, 15.3.1): shown at once and logged, not alarmed (every linked void does it).
    assert of(out, "display")[0]["amount"] == 499_000
    assert not of(out, "alarm")
    assert any("with no award" in e["text"] for e in of(out, "log")), of(out, "log")


def test_a_pool_with_another_qualifying_wager_takes_no_jackpot_wagers() -> None:
    t = Table(LINKED)  # the table's jackpot wager is 100 c
    out = t.step("ho.pool", pool="p1", amount=500_000, version=1, wager=200)
    assert of(out, "alarm")[0]["rule"] == "15.2.5.3" and t.state.jackpot["online"] is False
    t.step("bet.on", box=2)
    assert t.state.lamps == {}
    t.step("ho.pool", pool="p1", amount=500_000, version=2, wager=100)
    assert t.state.jackpot["online"] is True and t.state.lamps == {"2": "bet"}


# -- 12.2.3 carrying on with a shoe or by hand ---------------------------------------------
@pytest.mark.parametrize("method", ["shoe", "hand"])
def test_a_supervisor_carries_on_without_the_shuffler(method: str) -> None:
    t = Table()
    t.deal_round({2: (1000, 0)})
    out = t.step("shuffler.fault", reason="motor")  # 12.2: mid-round, the round is void
    assert of(out, "round")[0]["summary"]["rule"] == "12.2"
    t.queue.clear()  # the broken shuffler answers nothing more
    out = t.step("dealer.deal_method", method=method)
    assert of(out, "alarm")[0]["rule"] == "12.2.3" and t.state.dealt_by == method
    t.step("dealer.wager", box=2, ante=1000)
    out = t.step("dealer.deal")
    assert not of(out, "device") and t.state.phase == "dealing"  # no shuffler command
    refused = t.step("card.dispensed", card="As", index=0)
    assert "12.2.3" in texts(refused) and t.state.cards == []
    # The dealer enters the cards in deal order; the mapping is 7.3: the five community cards,
    # one to the dealer, one to each box, the dealer's second, each box's second (under 7.2
    # box 2 would hold 4s 9c).
    for card in ["Ah", "Kh", "Qh", "2c", "7d", "Jh", "Th", "4s", "9c"]:
        t.step("dealer.card", card=card)
    assert t.state.phase == "preflop" and t.seat_view()["boxes"][0]["hole"] == ["Th", "9c"]
    t.step("dealer.decision", box=2, action="play4")
    t.step("dealer.flop")
    t.step("dealer.turn_river")
    (rnd,) = of(t.step("dealer.dealer_hand"), "round")
    assert rnd["status"] == "completed" and rnd["summary"]["dealt_by"] == method
    assert rnd["summary"]["community"] == ["Ah", "Kh", "Qh", "2c", "7d"]
    assert t.state.dealt_by == method  # until the supervisor says otherwise


def test_back_to_the_shuffler_shuffles_first_and_dealer_cards_are_refused() -> None:
    t = Table()
    t.step("dealer.deal_method", method="hand")
    out = t.step("dealer.deal_method", method="shuffler")
    assert of(out, "device", command="shuffle") and t.state.dealt_by is None
    out = t.step("dealer.card", card="As")
    assert "12.2.3" in texts(out)
    assert "one of" in texts(t.step("dealer.deal_method", method="telepathy"))


# -- 15.2.1.1 a jackpot wager on another player's box ----------------------------------------
def test_a_jackpot_wager_on_another_players_box_is_recorded_with_its_owner() -> None:
    t = Table()
    t.stack(DECK)  # box 2: royal flush on hole + flop
    t.step("dealer.wager", box=2, ante=1000)
    refused = t.step("dealer.jackpot_other", box=5, player="bo")
    assert "15.2.1" in texts(refused) and t.state.jackpot_owners == {}
    t.step("dealer.jackpot_other", box=2, player="bo")
    t.step("dealer.wager", box=4, ante=1000)
    twice = t.step("dealer.jackpot_other", box=4, player="bo")
    assert "5.6" in texts(twice)
    t.step("bet.on", box=2)
    t.run("dealer.deal")
    t.step("dealer.decision", box=2, action="play4")
    t.step("dealer.decision", box=4, action="fold")
    t.step("dealer.flop")
    t.step("dealer.turn_river")
    (rnd,) = of(t.step("dealer.dealer_hand"), "round")
    jp = rnd["summary"]["jackpot"]
    assert jp["owners"] == {"2": "bo"} and [p["box"] for p in jp["payouts"]] == [2]
    assert t.state.jackpot_owners == {}


# -- properties ---------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    pre=st.lists(st.sampled_from(["play4", "play3", "check"]), min_size=2, max_size=2),
    flop=st.lists(st.sampled_from(["play2", "check"]), min_size=2, max_size=2),
    at_flop=st.booleans(),
    preflop_only=st.booleans(),
    cause=st.sampled_from(["dealer_revealed", "wrong_count"]),
)
def test_a_misdeal_cause_decides_void_or_play_on(
    pre: list[str], flop: list[str], at_flop: bool, preflop_only: bool, cause: str
) -> None:
    """11.1/11.3: a wrong count voids whatever was played; 11.4.1/11.4.2: the dealer's card
    voids exactly when no Play wager counts (by the table's reading)."""
    t = Table(UthConfig(pool=POOL, exposure_preflop_only=preflop_only))
    t.deal_round({1: (500, 0), 2: (500, 0)})
    for box, action in zip((1, 2), pre, strict=True):
        t.step("dealer.decision", box=box, action=action)
    played_pre = any(a != "check" for a in pre)
    played = played_pre
    if at_flop:
        t.step("dealer.flop")
        for box, action in zip((1, 2), flop, strict=True):
            if pre[box - 1] == "check":
                t.step("dealer.decision", box=box, action=action)
                played = played or action != "check"
    before = t.state
    out = t.step("dealer.misdeal", reason=cause)
    counts = played_pre if preflop_only else played
    voided = bool(of(out, "round"))
    if cause == "wrong_count":
        assert voided and of(out, "round")[0]["summary"]["rule"] == "11.1"
    else:
        assert voided is (not counts)
        assert voided or t.state == before
