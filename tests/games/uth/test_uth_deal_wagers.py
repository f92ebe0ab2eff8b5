"""Deal mapping (7.2, 7.3, 11.1) and wagers/decisions (5.3-5.5, 9.1-9.3, 10.5, 11.10)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.games.uth.cards import format_cards
from controller.games.uth.deal import (
    DealMethod,
    Misdeal,
    cards_needed,
    deal,
    dealing_order,
)
from controller.games.uth.wagers import (
    Action,
    BoxWagers,
    Decision,
    Round,
    Street,
    WagerLocked,
    run_round,
)
from shared.errors import InputError
from tests.support.uth_cards import cards

ORDER = cards("2c 3c 4c 5c 6c 7c 8c 9c Tc Jc Qc Kc Ac")  # 13 cards: 3 boxes


def test_shuffler_mapping_rules_7_2_1_to_7_2_4():
    d = deal(ORDER, [5, 1, 3], DealMethod.SHUFFLER)  # 3.2.1
    # 7.2.1: five cards stacked on the first Flop box; 7.2.2: bottom three of the stack (first
    # out) the Flop, 4th the Turn, top (5th) the River
    assert format_cards(d.flop) == "2c 3c 4c"
    assert format_cards((d.turn, d.river)) == "5c 6c"
    assert format_cards(d.dealer) == "7c 8c"  # 7.2.3
    # 7.2.4: two at a time, clockwise from the dealer's left (ascending boxes)
    assert {b: format_cards(h) for b, h in d.boxes.items()} == {1: "9c Tc", 3: "Jc Qc", 5: "Kc Ac"}
    assert format_cards(d.jackpot_hand(3)) == "Jc Qc 2c 3c 4c"  # 15.2.6


def test_card_shoe_mapping_rule_7_3():
    d = deal(ORDER, [5, 1, 3], DealMethod.SHOE)  # 3.2, 3.2.2-3.2.3: a shoe or the dealer's hand
    assert format_cards(d.community) == "2c 3c 4c 5c 6c"  # 7.3.1
    # 7.3.2-7.3.5: one to the dealer, one to each box, then the second round
    assert format_cards(d.dealer) == "7c Jc"
    assert {b: format_cards(h) for b, h in d.boxes.items()} == {1: "8c Qc", 3: "9c Kc", 5: "Tc Ac"}


@pytest.mark.parametrize("method", list(DealMethod))
@pytest.mark.parametrize("delta", [-2, -1, 1, 2])
def test_wrong_number_of_cards_is_a_misdeal_rule_11_1(method, delta):
    with pytest.raises(Misdeal, match=r"11\.1"):
        deal(list(range(cards_needed(2) + delta)), [1, 2], method)


def test_duplicate_and_bad_boxes_are_errors():
    with pytest.raises(InputError, match="duplicate"):
        deal([0] * 9, [1], DealMethod.SHOE)
    with pytest.raises(InputError, match="bad box 8"):
        deal(list(range(9)), [8], DealMethod.SHOE)


@given(
    st.permutations(range(52)),
    st.sets(st.integers(1, 7), min_size=1),
    st.sampled_from(list(DealMethod)),
)
def test_deal_places_every_card_once_and_inverts(deck, boxes, method):
    cards_out = deck[: cards_needed(len(boxes))]
    d = deal(cards_out, boxes, method)
    placed = [*d.community, *d.dealer, *(c for h in d.boxes.values() for c in h)]
    assert sorted(placed) == sorted(cards_out)
    assert list(d.boxes) == sorted(boxes)
    assert dealing_order(d, method) == tuple(cards_out)


# --- wagers -------------------------------------------------------------------------------


def test_blind_must_equal_ante_rule_5_3():
    with pytest.raises(InputError, match=r"5\.3"):
        BoxWagers(1000, 500)


def test_trips_only_with_ante_and_blind_rule_5_4_1():
    with pytest.raises(InputError, match=r"5\.4\.1"):
        BoxWagers(0, 0, trips=500)
    assert BoxWagers(500, 500, trips=500).trips == 500


def test_nothing_placed_changed_or_withdrawn_after_first_card_rule_5_5():
    rnd = Round()
    rnd.place(1, BoxWagers(100, 100))
    rnd.place(1, BoxWagers(200, 200, trips=100))  # changing before the deal is fine
    rnd.place(2, BoxWagers(100, 100))
    rnd.withdraw(2)
    assert rnd.start_deal() == (1,)
    with pytest.raises(WagerLocked, match=r"5\.5"):
        rnd.place(1, BoxWagers(200, 200, trips=500))
    with pytest.raises(WagerLocked, match=r"5\.5"):
        rnd.place(3, BoxWagers(200, 200))
    with pytest.raises(WagerLocked, match=r"5\.5"):
        rnd.withdraw(1)


@pytest.mark.parametrize(
    ("street", "ok", "bad"),
    [
        (Street.PREFLOP, (3, 4), (1, 2, 5)),
        (Street.FLOP, (2,), (1, 3, 4)),
        (Street.RIVER, (1,), (2, 3, 4)),
    ],
)
def test_play_multiples_rules_9_1_2_9_2_3_9_3_2(street, ok, bad):
    for m in ok:
        assert Decision(Action.PLAY, street, m).multiple == m
    for m in bad:
        with pytest.raises(InputError, match=r"9\.1\.2"):
            Decision(Action.PLAY, street, m)


def _round_at(phase_steps: int) -> Round:
    rnd = Round()
    rnd.place(1, BoxWagers(100, 100))
    rnd.place(2, BoxWagers(100, 100))
    rnd.start_deal()
    for step in (rnd.reveal_flop, rnd.reveal_river, rnd.reveal_dealer)[:phase_steps]:
        step()
    return rnd


def test_play_once_per_hand_rules_9_2_3_1_and_9_3_2_1():
    rnd = _round_at(0)
    rnd.decide(1, Decision.play(4))
    rnd.reveal_flop()
    with pytest.raises(InputError, match="already decided"):
        rnd.decide(1, Decision.play(2))
    rnd.decide(2, Decision.play(2))
    rnd.reveal_river()
    with pytest.raises(InputError, match="already decided"):
        rnd.decide(2, Decision.play(1))


def test_decision_must_match_the_street():
    rnd = _round_at(1)  # after the flop
    with pytest.raises(InputError, match="not a flop decision"):
        rnd.decide(1, Decision.play(4))  # 4x is only before the flop
    with pytest.raises(InputError, match="not a flop decision"):
        rnd.decide(1, Decision.play(1))


def test_fold_is_final_rule_9_5():
    rnd = _round_at(0)
    rnd.decide(1, Decision(Action.FOLD, Street.PREFLOP))
    rnd.reveal_flop()
    with pytest.raises(InputError, match=r"9\.5"):
        rnd.decide(1, Decision.play(2))


def test_no_decision_on_the_river_is_a_fold_rule_11_10():
    rnd = _round_at(2)
    rnd.decide(1, Decision.play(1))
    rnd.reveal_dealer()
    plays = {p.box: p.decision for p in rnd.plays()}
    assert plays == {1: Decision.play(1), 2: Decision(Action.FOLD, Street.RIVER)}


def test_concession_only_after_the_dealers_hand_and_only_with_a_play_rule_10_5():
    concede = Decision(Action.CONCEDE, Street.PREFLOP, 4)
    rnd = _round_at(0)
    rnd.decide(1, Decision.play(4))
    rnd.decide(2, Decision(Action.FOLD, Street.PREFLOP))
    with pytest.raises(InputError, match=r"10\.5"):
        rnd.decide(1, concede)
    rnd.reveal_flop()
    rnd.reveal_river()
    rnd.reveal_dealer()
    with pytest.raises(InputError, match="no Play"):
        rnd.decide(2, concede)
    rnd.decide(1, concede)
    assert {p.box: p.decision.action for p in rnd.plays()} == {1: Action.CONCEDE, 2: Action.FOLD}


def test_decision_tokens():
    assert Decision.parse("4x") == Decision(Action.PLAY, Street.PREFLOP, 4)
    assert Decision.parse("2x").street is Street.FLOP
    assert Decision.parse("fold-river") == Decision(Action.FOLD, Street.RIVER)
    assert Decision.parse("concede-3x") == Decision(Action.CONCEDE, Street.PREFLOP, 3)
    for bad in ("5x", "fold", "fold-turn", "concede", "x"):
        with pytest.raises(InputError, match=repr(bad)):
            Decision.parse(bad)


def test_run_round_replays_final_decisions_in_street_order():
    w = {1: BoxWagers(100, 100), 4: BoxWagers(100, 100, 50)}
    plays = run_round(w, {1: Decision.parse("concede-2x"), 4: Decision.parse("fold-flop")})
    assert [(p.box, str(p.decision)) for p in plays] == [(1, "concede-2x"), (4, "fold-flop")]
