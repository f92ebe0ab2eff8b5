"""Settlement: a table test for every branch of 10.7, 10.9 and 10.12, limits (6.2-6.3, 11.8),
fold and concession (9.x.1, 10.5), and money properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.games.uth.evaluator import Category, category_of, hand_rank
from controller.games.uth.paytables import BLIND_PAYTABLE, TRIPS_PAYTABLE, Odds
from controller.games.uth.settlement import (
    Limits,
    Outcome,
    SettlementRules,
    Spot,
    settle_hands,
)
from controller.games.uth.wagers import Action, BoxPlay, BoxWagers, Decision, Street
from tests.support.uth_cards import cards

W, L, S = Outcome.WIN, Outcome.LOSE, Outcome.STAND_OFF
C = Category


def settle(board, player, dealer, wagers, decision=None, rules=None):
    decision = decision or Decision.play(4)
    play = BoxPlay(1, wagers, decision)
    result = settle_hands(
        cards(dealer + " " + board), {1: (cards(player + " " + board), play)}, rules
    )
    (box,) = result.boxes
    return result, box, {s.spot: (s.outcome, s.won) for s in box.spots}


def cat(text: str) -> Category:
    return category_of(hand_rank(cards(text)))


# (id, board, player hole, dealer hole, player category, dealer category, expected spots)
# Wagers: Ante 1000, Blind 1000, Play 4x = 4000, Trips 500.
CASES = [
    (
        "10.7.3.5+10.12.6 straight beats a qualifying dealer (10.2, dealer 10.1.2, player 10.6.1);"
        " 10.7.3.1+10.11 Ante and 10.7.2.1+10.10 Play 1 to 1; 10.9.6 Trips 4 to 1",
        "6c 7d 8h Kc 2d",
        "9s Ts",
        "Kh 3c",
        C.STRAIGHT,
        C.ONE_PAIR,
        {Spot.ANTE: (W, 1000), Spot.BLIND: (W, 1000), Spot.PLAY: (W, 4000), Spot.TRIPS: (W, 2000)},
    ),
    (
        "10.12.5 flush pays 3 to 2; 10.9.5 Trips 7 to 1",
        "2h 7h 9h Kc 4d",
        "Ah 5h",
        "Kd Qc",
        C.FLUSH,
        C.ONE_PAIR,
        {Spot.ANTE: (W, 1000), Spot.BLIND: (W, 1500), Spot.PLAY: (W, 4000), Spot.TRIPS: (W, 3500)},
    ),
    (
        "10.12.4 full house 3 to 1; 10.9.4 Trips 8 to 1",
        "9c 9d 4h Kc 2s",
        "9h 4s",
        "Kd Qc",
        C.FULL_HOUSE,
        C.TWO_PAIR,
        {Spot.ANTE: (W, 1000), Spot.BLIND: (W, 3000), Spot.PLAY: (W, 4000), Spot.TRIPS: (W, 4000)},
    ),
    (
        "10.12.3 quads 10 to 1; 10.9.3 Trips 30 to 1",
        "9c 9d 4h Kc 2s",
        "9h 9s",
        "Kd Kh",
        C.FOUR_OF_A_KIND,
        C.FULL_HOUSE,
        {
            Spot.ANTE: (W, 1000),
            Spot.BLIND: (W, 10000),
            Spot.PLAY: (W, 4000),
            Spot.TRIPS: (W, 15000),
        },
    ),
    (
        "10.12.2 straight flush 50 to 1; 10.9.2 Trips 40 to 1",
        "5s 6s 7s Kc 2d",
        "8s 9s",
        "Kd Kh",
        C.STRAIGHT_FLUSH,
        C.THREE_OF_A_KIND,
        {
            Spot.ANTE: (W, 1000),
            Spot.BLIND: (W, 50000),
            Spot.PLAY: (W, 4000),
            Spot.TRIPS: (W, 20000),
        },
    ),
    (
        "10.12.1 royal flush 500 to 1; 10.9.1 Trips 50 to 1",
        "Ts Js Qs 2c 3d",
        "Ks As",
        "2d 2h",
        C.ROYAL_FLUSH,
        C.THREE_OF_A_KIND,
        {
            Spot.ANTE: (W, 1000),
            Spot.BLIND: (W, 500000),
            Spot.PLAY: (W, 4000),
            Spot.TRIPS: (W, 25000),
        },
    ),
    (
        "10.7.3.7/10.12.7 win with trips: Blind stands off; 10.9.7 Trips 3 to 1",
        "9c 9d 4h Kc 2s",
        "9h 5s",
        "Kd Qc",
        C.THREE_OF_A_KIND,
        C.TWO_PAIR,
        {Spot.ANTE: (W, 1000), Spot.BLIND: (S, 0), Spot.PLAY: (W, 4000), Spot.TRIPS: (W, 1500)},
    ),
    (
        "10.7.3.8/10.12.8 tie: Ante (10.7.3.3), Blind, Play (10.7.2.3) stand off; 10.7.1.1 Trips"
        " wins on the board (both play the board: 10.1.3, 10.6.3)",
        "Ac Kd Qh Js Tc",
        "2c 3d",
        "4c 5d",
        C.STRAIGHT,
        C.STRAIGHT,
        {Spot.ANTE: (S, 0), Spot.BLIND: (S, 0), Spot.PLAY: (S, 0), Spot.TRIPS: (W, 2000)},
    ),
    (
        "10.7.3.2, 10.7.3.6/10.12.9, 10.7.2.2 lower than a qualifying dealer; 10.7.1.2 Trips loses",
        "9c 7d 4h Kc 2s",
        "Ks 3s",
        "Kd Ac",
        C.ONE_PAIR,
        C.ONE_PAIR,
        {Spot.ANTE: (L, 0), Spot.BLIND: (L, 0), Spot.PLAY: (L, 0), Spot.TRIPS: (L, 0)},
    ),
    (
        "10.7.3.4 dealer does not qualify: Ante stands off (10.3.1), Blind stands off (10.7.3.7),"
        " Play wins (10.3.2)",
        "9c 7d 4h Kc 2s",
        "As 3s",
        "Qd Jc",
        C.HIGH_CARD,
        C.HIGH_CARD,
        {Spot.ANTE: (S, 0), Spot.BLIND: (S, 0), Spot.PLAY: (W, 4000), Spot.TRIPS: (L, 0)},
    ),
    (
        "10.3/10.7.3.4 non-qualifying dealer still beats the player: Blind and Play lose",
        "9c 7d 4h Kc 2s",
        "Qs 3s",
        "Ad Jc",
        C.HIGH_CARD,
        C.HIGH_CARD,
        {Spot.ANTE: (S, 0), Spot.BLIND: (L, 0), Spot.PLAY: (L, 0), Spot.TRIPS: (L, 0)},
    ),
    (
        "10.7.3.5 straight and dealer does not qualify: Blind still wins, Ante stands off",
        "6c 7d 8h Kc 2d",
        "9s Ts",
        "Ah 3c",
        C.STRAIGHT,
        C.HIGH_CARD,
        {Spot.ANTE: (S, 0), Spot.BLIND: (W, 1000), Spot.PLAY: (W, 4000), Spot.TRIPS: (W, 2000)},
    ),
    (
        "10.7.1 Trips wins regardless of the dealer: player's trips lose to a full house",
        "9c 9d 4h Kc 2s",
        "9h 5s",
        "Kd Kh",
        C.THREE_OF_A_KIND,
        C.FULL_HOUSE,
        {Spot.ANTE: (L, 0), Spot.BLIND: (L, 0), Spot.PLAY: (L, 0), Spot.TRIPS: (W, 1500)},
    ),
    (
        "10.7.1.2 Trips loses with two pair (player 10.6.2) though the player beats the dealer"
        " (10.1.1)",
        "9c 9d 4h Kc 2s",
        "4s 5s",
        "Qd Jc",
        C.TWO_PAIR,
        C.ONE_PAIR,
        {Spot.ANTE: (W, 1000), Spot.BLIND: (S, 0), Spot.PLAY: (W, 4000), Spot.TRIPS: (L, 0)},
    ),
]


@pytest.mark.parametrize(
    ("board", "player", "dealer", "pcat", "dcat", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_settlement_table(board, player, dealer, pcat, dcat, expected):
    # UTH 10.7-10.7.3, 10.8: losing wagers collected, winning ones paid by 10.9-10.12.
    assert (cat(player + " " + board), cat(dealer + " " + board)) == (pcat, dcat)
    _, box, spots = settle(board, player, dealer, BoxWagers(1000, 1000, trips=500))
    assert spots == expected
    assert box.net == sum(won for o, won in expected.values()) - sum(
        placed
        for placed, (o, _) in zip((1000, 1000, 4000, 500), expected.values(), strict=True)
        if o is L
    )


@pytest.mark.parametrize("street", list(Street))
def test_fold_forfeits_ante_blind_and_trips_rule_9_x_1(street):
    # UTH 9.1.1, 9.2.1, 9.3.1: a fold on any street forfeits Ante, Blind and Trips.
    # a royal flush folded still loses everything at the table (10.4.1)
    _, box, spots = settle(
        "Ts Js Qs 2c 3d",
        "Ks As",
        "2d 2h",
        BoxWagers(1000, 1000, trips=500),
        Decision(Action.FOLD, street),
    )
    assert spots == {Spot.ANTE: (L, 0), Spot.BLIND: (L, 0), Spot.TRIPS: (L, 0)}
    assert box.net == -2500


def test_concession_after_dealer_hand_collects_every_wager_rule_10_5():
    concede = Decision(Action.CONCEDE, Street.FLOP, 2)
    _, box, spots = settle("9c 9d 4h Kc 2s", "9h 5s", "Kd Kh", BoxWagers(1000, 1000, 500), concede)
    assert spots == {Spot.ANTE: (L, 0), Spot.BLIND: (L, 0), Spot.PLAY: (L, 0), Spot.TRIPS: (L, 0)}
    assert box.net == -(1000 + 1000 + 2000 + 500)


@pytest.mark.parametrize("multiple", [4, 3, 2, 1])
def test_play_wager_is_ante_times_multiple_paid_1_to_1(multiple):
    # UTH 9.1.2, 9.2.3, 9.3.2: 4x or 3x before the flop, 2x on the flop, 1x on the river; 10.10.
    _, box, _ = settle(
        "6c 7d 8h Kc 2d", "9s Ts", "Kh 3c", BoxWagers(700, 700), Decision.play(multiple)
    )
    play = next(s for s in box.spots if s.spot is Spot.PLAY)
    assert (play.placed, play.won) == (700 * multiple, 700 * multiple)


def test_over_maximum_paid_and_collected_to_maximum_rule_6_3_and_11_8_2():
    # UTH 6.3, 11.8.2
    rules = SettlementRules(limits={Spot.TRIPS: Limits(500, 2500)})
    _, box, _ = settle("9c 9d 4h Kc 2s", "9h 5s", "Kd Qc", BoxWagers(1000, 1000, 4000), rules=rules)
    trips = next(s for s in box.spots if s.spot is Spot.TRIPS)
    assert (trips.stake, trips.won, trips.returned) == (2500, 7500, 4000 + 7500)
    _, box, _ = settle("9c 7d 4h Kc 2s", "Ks 3s", "Kd Ac", BoxWagers(1000, 1000, 4000), rules=rules)
    trips = next(s for s in box.spots if s.spot is Spot.TRIPS)
    assert (trips.outcome, trips.returned, trips.net) == (L, 1500, -2500)  # excess goes back


def test_under_minimum_found_after_the_deal_is_valid_rule_6_2_and_11_8_1():
    # UTH 6.2, 11.8.1
    rules = SettlementRules(limits={Spot.TRIPS: Limits(500, 2500)})
    _, box, _ = settle("9c 9d 4h Kc 2s", "9h 5s", "Kd Qc", BoxWagers(1000, 1000, 100), rules=rules)
    trips = next(s for s in box.spots if s.spot is Spot.TRIPS)
    assert (trips.stake, trips.won, trips.below_minimum) == (100, 300, True)


def test_blind_3_to_2_rounds_down_to_the_cent():
    _, _, spots = settle("2h 7h 9h Kc 4d", "Ah 5h", "Kd Qc", BoxWagers(1001, 1001))
    assert spots[Spot.BLIND] == (W, 1501)


def test_pay_tables_are_configurable():
    rules = SettlementRules(
        trips={**TRIPS_PAYTABLE, C.THREE_OF_A_KIND: Odds(5)},
        blind={**BLIND_PAYTABLE, C.STRAIGHT: Odds(2)},
    )
    _, _, spots = settle(
        "6c 7d 8h Kc 2d", "9s Ts", "Kh 3c", BoxWagers(1000, 1000, 500), rules=rules
    )
    assert spots[Spot.BLIND] == (W, 2000)
    _, _, spots = settle(
        "9c 9d 4h Kc 2s", "9h 5s", "Kd Qc", BoxWagers(1000, 1000, 500), rules=rules
    )
    assert spots[Spot.TRIPS] == (W, 2500)


def test_settlement_order_starts_at_the_dealers_right_rule_10_4():
    board = cards("9c 9d 4h Kc 2s")
    hole = {1: "Ah 5s", 3: "Qh Jd", 6: "3c 3d"}
    result = settle_hands(
        cards("Kd Qc") + board,
        {
            b: (cards(h) + board, BoxPlay(b, BoxWagers(100, 100), Decision.play(3)))
            for b, h in hole.items()
        },
    )
    assert [b.box for b in result.boxes] == [6, 3, 1]


# --- properties --------------------------------------------------------------------------------

decisions = st.sampled_from(
    [Decision.play(m) for m in (4, 3, 2, 1)]
    + [Decision(Action.FOLD, s) for s in Street]
    + [Decision(Action.CONCEDE, Street.PREFLOP, 4)]
)


@settings(max_examples=400)
@given(
    st.permutations(range(52)),
    st.integers(1, 100_000),
    st.sampled_from([0, 1, 499, 500, 2500]),
    decisions,
)
def test_settlement_properties(deck, ante, trips, decision):
    board, player, dealer = deck[:5], deck[5:7], deck[7:9]
    wagers = BoxWagers(ante, ante, trips)
    play = BoxPlay(2, wagers, decision)
    result = settle_hands(dealer + board, {2: (player + board, play)})
    (box,) = result.boxes
    spots = {s.spot: s for s in box.spots}
    pr, dr = hand_rank(player + board), hand_rank(dealer + board)
    staked = ante * 2 + trips + ante * decision.multiple
    assert result.house_net == -box.net  # money is conserved
    assert box.net >= -staked
    if decision.action is not Action.PLAY:
        assert all(s.outcome is L for s in box.spots)
        return
    assert spots[Spot.BLIND].outcome is not W or (pr > dr and category_of(pr) >= C.STRAIGHT)
    if dr < hand_rank(cards("2c 2d 3h 4s 5c")):  # dealer short of a pair
        assert spots[Spot.ANTE].outcome is S
    assert spots[Spot.PLAY].outcome is {True: W, False: L}.get(pr > dr if pr != dr else None, S)
    if trips:
        # Trips ignores the dealer: another dealer hand gives the same Trips result.
        other = settle_hands(deck[9:11] + board, {2: (player + board, play)})
        assert {s.spot: s for s in other.boxes[0].spots}[Spot.TRIPS] == spots[Spot.TRIPS]
