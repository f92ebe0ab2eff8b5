"""Evaluator: rule 8 examples, oracles (treys, pokerkit), exhaustive 5-card counts, properties."""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations, pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.games.uth import tables_file
from controller.games.uth.cards import format_card, parse_card, parse_cards
from controller.games.uth.evaluator import (
    MAX_RANK,
    Category,
    best_five,
    category_of,
    evaluate,
    hand_rank,
    nonflush_rank,
)
from shared.errors import InputError
from tests.support.uth_cards import cards, five_card_rank_counts, rank, to_text

# --- notation --------------------------------------------------------------------------------


def test_ten_may_be_written_10_or_T():
    assert parse_card("10h") == parse_card("Th") == parse_card("th")
    assert format_card(parse_card("10d")) == "Td"


@pytest.mark.parametrize("token", ["1h", "Tx", "A", "10", "Ahh", "11c", ""])
def test_bad_card_error_names_the_token(token):
    with pytest.raises(InputError) as err:
        parse_card(token)
    assert repr(token) in str(err.value)


def test_duplicate_card_is_an_error_rule_3_1():
    with pytest.raises(InputError, match="duplicate card '10s'"):
        parse_cards("As Ts Kd 10s")
    with pytest.raises(InputError, match="duplicate"):
        evaluate([0, 1, 2, 3, 3])


def test_evaluate_needs_five_to_seven_cards():
    for n in (4, 8):
        with pytest.raises(InputError):
            evaluate(list(range(n)))


# --- rule 8.2 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hand", "category"),
    [
        ("As Ks Qs Js Ts", Category.ROYAL_FLUSH),  # 8.2(a)
        ("9h 8h 7h 6h 5h", Category.STRAIGHT_FLUSH),  # 8.2(b)
        ("5d 4d 3d 2d Ad", Category.STRAIGHT_FLUSH),  # 8.2(b): ace low
        ("Kc Kd Kh Ks 5c", Category.FOUR_OF_A_KIND),  # 8.2(c): K,K,K,K,5 is a Quad
        ("Kc Kd Qh 10s 5c", Category.ONE_PAIR),  # 8.2(c): K,K,Q,10,5 is not
        ("3c 3d 3h 2s 2c", Category.FULL_HOUSE),  # 8.2(d)
        ("Ah Jh 8h 4h 2h", Category.FLUSH),  # 8.2(e)
        ("Ac Kd Qh Js Tc", Category.STRAIGHT),  # 8.2(f), 3.3.1.1: ace high
        ("5c 4d 3h 2s Ac", Category.STRAIGHT),  # 8.2(f), 3.3.1.2: ace low
        ("Qc Qd Qh 3s 4c", Category.THREE_OF_A_KIND),  # 8.2(g): Q,Q,Q,3,4 is Trips
        ("Qc Qd Jh 3s 4c", Category.ONE_PAIR),  # 8.2(g): Q,Q,J,3,4 is not
        ("Jc Jd 4h 4s Ac", Category.TWO_PAIR),  # 8.2(h)
        ("9c 9d Ah 7s 2c", Category.ONE_PAIR),  # 8.2(i)
        ("Kc Jd 9h 6s 3c", Category.HIGH_CARD),  # 8.2(j)
        ("Qc Kd Ah 2s 3c", Category.HIGH_CARD),  # 8.1: no wrap-around straight
    ],
)
def test_rule_8_2_categories(hand, category):
    assert evaluate(cards(hand)).category is category


@pytest.mark.parametrize(
    ("higher", "lower"),
    [
        ("As Ks Qs Js Ts", "Kh Qh Jh Th 9h"),  # 8.2(a) over (b)
        ("6d 5d 4d 3d 2d", "5c 4c 3c 2c Ac"),  # 8.2(b): highest card designates; wheel lowest
        ("Ac Ad Ah As 2c", "Kc Kd Kh Ks Ac"),  # 8.2(c): four aces the highest quads
        ("Kc Kd Kh Ks 3c", "Kc Kd Kh Ks 2c"),  # 8.2(c): same quads, kicker decides
        ("3c 3d 3h 2s 2c", "2c 2d 2h As Ac"),  # 8.2(d): the three cards have priority
        ("Ah 9h 8h 4h 2h", "Kc Qc Jc 9c 7c"),  # 8.2(e): highest card first
        ("Ah Kh 8h 4h 3h", "Ac Kc 8c 4c 2c"),  # 8.2(e): then next highest ...
        ("Ac Kd Qh Js Tc", "Kc Qd Jh Ts 9c"),  # 8.2(f)
        ("6c 5d 4h 3s 2c", "5c 4d 3h 2s Ac"),  # 8.2(f): the wheel is the lowest straight
        ("Ac Ad Ah 2s 3c", "Kc Kd Kh As Qc"),  # 8.2(g): three aces highest trips
        ("Jc Jd 4h 4s 2c", "Tc Td 9h 9s Ac"),  # 8.2(h): highest pair has priority
        ("Jc Jd 5h 5s 2c", "Jh Js 4h 4c Ac"),  # 8.2(h): then the low pair
        ("Jc Jd 4h 4s 3c", "Jh Js 4c 4d 2c"),  # 8.2(h): then the remaining card
        ("9c 9d 2h 3s 4c", "8c 8d Ah Ks Qc"),  # 8.2(i): higher pair beats lower
        ("9c 9d Ah 7s 3c", "9h 9s Ad 7c 2c"),  # 8.2(i): then kickers in descending order
        ("Ac 7d 5h 4s 2c", "Kc Qd Jh 9s 7c"),  # 8.2(j)
        ("Kc Jd 9h 6s 3c", "Kd Jh 9s 6c 2d"),  # 8.2(j): down to the last card
        ("2c 2d 3h 4s 5c", "Ac Kd Qh Js 9c"),  # one pair over no pair
    ],
)
def test_rule_8_2_ordering(higher, lower):
    assert rank(higher) > rank(lower)


def test_rule_8_1_no_suit_ranks_higher():
    # UTH 3.3: all suits have the same rank.
    assert rank("As Ks Qs Js Ts") == rank("Ah Kh Qh Jh Th") == MAX_RANK
    assert rank("Ac Kd 8h 4s 3c") == rank("Ah Ks 8c 4d 3d")


def test_card_values_run_from_ace_down_to_two():
    # UTH 3.3.1: ace, king, queen, jack, 10, 9, ... 2, highest to lowest (a pair of each, with
    # the same kind of kickers, ranks in that order).
    order = ["A", "K", "Q", "J", "T", "9", "8", "7", "6", "5", "4", "3", "2"]
    pairs = []
    for v in order:
        k1, k2, k3 = [k for k in "QJT98" if k != v][:3]
        pairs.append(rank(f"{v}c {v}d {k1}h {k2}s {k3}c"))
    assert pairs == sorted(pairs, reverse=True) and len(set(pairs)) == len(pairs)


def test_rule_10_1_3_board_plays_when_best():
    # UTH 10.1.3 (the dealer) and 10.6.3 (a player): the five community cards play.
    board = "Ac Kd Qh Js Tc"
    assert rank(board + " 2c 3d") == rank(board)
    assert rank(board + " 2c 3d") == rank(board + " 4h 5s")


# --- exhaustive -------------------------------------------------------------------------------

KNOWN_FIVE = {
    Category.ROYAL_FLUSH: 4,
    Category.STRAIGHT_FLUSH: 36,
    Category.FOUR_OF_A_KIND: 624,
    Category.FULL_HOUSE: 3_744,
    Category.FLUSH: 5_108,
    Category.STRAIGHT: 10_200,
    Category.THREE_OF_A_KIND: 54_912,
    Category.TWO_PAIR: 123_552,
    Category.ONE_PAIR: 1_098_240,
    Category.HIGH_CARD: 1_302_540,
}


def test_all_2598960_five_card_hands_by_category_and_7462_distinct_ranks():
    by_rank = five_card_rank_counts()  # hand_rank of every one of the 2,598,960 hands
    assert sorted(by_rank) == list(range(1, 7463))  # dense ranks: 7,462 classes
    by_category = Counter()
    for r, n in by_rank.items():
        by_category[category_of(r)] += n
    assert by_category == KNOWN_FIVE


# --- oracles ----------------------------------------------------------------------------------

_TREYS_CLASS = {
    0: Category.ROYAL_FLUSH,
    1: Category.STRAIGHT_FLUSH,
    2: Category.FOUR_OF_A_KIND,
    3: Category.FULL_HOUSE,
    4: Category.FLUSH,
    5: Category.STRAIGHT,
    6: Category.THREE_OF_A_KIND,
    7: Category.TWO_PAIR,
    8: Category.ONE_PAIR,
    9: Category.HIGH_CARD,
}


def _check_same_order(ours: list[int], theirs: list, higher_is_better: bool) -> None:
    """Ours must be a strictly monotone bijection of theirs: same ties, same ordering."""
    pairs = sorted(set(zip(ours, theirs, strict=True)))
    for (a1, b1), (a2, b2) in pairwise(pairs):
        assert a1 != a2, f"our rank {a1} maps to two oracle ranks {b1}, {b2}"
        assert (b2 > b1) if higher_is_better else (b2 < b1), (a1, b1, a2, b2)


@pytest.mark.parametrize("size", [5, 6, 7])
def test_oracle_treys_70000_random_hands(size):
    """3 x 70,000 = 210,000 random hands: same category, same order and ties as treys."""
    from treys import Card as TCard
    from treys import Evaluator

    rng = random.Random(8_2 + size)
    hands = [rng.sample(range(52), size) for _ in range(70_000)]
    evaluator = Evaluator()
    tcards = [TCard.new(format_card(c)) for c in range(52)]
    ours = [hand_rank(h) for h in hands]
    theirs = []
    for h, r in zip(hands, ours, strict=True):
        t = [tcards[c] for c in h]
        score = evaluator.evaluate(t[:2], t[2:])
        theirs.append(score)
        expected = _TREYS_CLASS[evaluator.get_rank_class(score)]
        assert category_of(r) is expected, (to_text(h), category_of(r), expected)
    _check_same_order(ours, theirs, higher_is_better=False)


def test_oracle_pokerkit_random_hands():
    from pokerkit import StandardHighHand

    rng = random.Random(15)
    hands = [rng.sample(range(52), rng.choice((5, 6, 7))) for _ in range(6_000)]
    ours, theirs = [], []
    for h in hands:
        text = to_text(h)
        hand = StandardHighHand.from_game(text[:4], text[4:])
        r = hand_rank(h)
        ours.append(r)
        theirs.append(hand.entry.index)
        label = hand.entry.label.name
        if category_of(r) is Category.ROYAL_FLUSH:
            assert label == "STRAIGHT_FLUSH"
        else:
            assert category_of(r).name == label, text
    _check_same_order(ours, theirs, higher_is_better=True)


# --- properties -------------------------------------------------------------------------------

hands = st.integers(5, 7).flatmap(
    lambda n: st.lists(st.integers(0, 51), min_size=n, max_size=n, unique=True)
)


@settings(max_examples=300)
@given(hands, st.randoms(use_true_random=False))
def test_order_of_cards_does_not_matter(hand, rnd):
    shuffled = list(hand)
    rnd.shuffle(shuffled)
    assert hand_rank(shuffled) == hand_rank(hand)


@settings(max_examples=300)
@given(hands, st.permutations(range(4)))
def test_relabelling_suits_does_not_matter_rule_8_1(hand, perm):
    relabelled = [(c & ~3) | perm[c & 3] for c in hand]
    assert hand_rank(relabelled) == hand_rank(hand)


@settings(max_examples=300)
@given(hands)
def test_rank_is_the_best_five_and_best_five_achieves_it(hand):
    # UTH 10.1-10.1.3 and 10.6-10.6.3: the best five of the two hole cards and the board, with
    # both hole cards, one, or none.
    r = hand_rank(hand)
    assert r == max(hand_rank(five) for five in combinations(hand, 5))
    best = best_five(hand)
    assert len(best) == 5 and set(best) <= set(hand)
    assert hand_rank(best) == r
    value = evaluate(hand)
    assert (value.rank, value.category) == (r, category_of(r))


@settings(max_examples=300)
@given(st.lists(st.integers(0, 51), min_size=6, max_size=7, unique=True))
def test_more_cards_never_make_a_worse_hand(hand):
    assert hand_rank(hand) >= hand_rank(hand[:-1])


def test_every_rank_multiset_of_five_to_seven_cards_has_an_entry_of_its_own():
    """The compact rank-multiset table (evaluator's docstring): all 73,775 multisets of 5-7
    cards (at most four of a rank, rule 3.1's one deck) land on distinct entries inside the
    array, each holding a real rank; a pattern of other sizes is refused, not looked up."""
    from controller.games.uth import evaluator as ev
    from controller.games.uth import tables_compute as tc

    ev.build_tables()
    slots: dict[int, tuple[int, ...]] = {}
    for size in (5, 6, 7):
        for counts in ev.rank_multisets(size):
            # As hand_rank finds it: the cards' base-5 rank digits summed (in memory, issue 31).
            digits = sum(n * ev._rank_digit(r) for r, n in enumerate(counts))
            slot = (
                ev._LOW[digits & ev._DIGITS_LOW_MASK]
                + ev._HIGH[(digits >> ev._DIGITS_HIGH_SHIFT) & ev._DIGITS_HIGH_MASK]
            )
            assert slot not in slots, (counts, slots.get(slot))
            slots[slot] = counts
            assert 1 <= ev._NONFLUSH[slot] <= MAX_RANK
    assert len(slots) == 6_175 + 18_395 + 49_205
    assert max(slots) < len(ev._NONFLUSH)
    # The same entries as the tables file's nibble-keyed form (tables_file.py) gives them.
    low, high, _, _, _ = tables_file.load() or ev.compute_tables()
    for size in (5, 6, 7):
        for counts in ev.rank_multisets(size):
            key = tc.rank_key(counts)
            assert tc._slot(key, low, high) == (
                ev._LOW[ev._base5(key & tc._LOW_MASK)] + ev._HIGH[ev._base5(key >> tc._HIGH_SHIFT)]
            )
    for counts in ((4, 4) + (0,) * 11, (1,) * 4 + (0,) * 9):
        with pytest.raises(InputError, match="need 5 to 7 cards"):
            nonflush_rank(counts)


def test_the_tables_in_memory_are_arrays_of_fixed_size_not_dicts():
    """Issue 31 (a READY UTH table <= 30 MB): the rank-part indices are arrays by base-5 index,
    5**7 32-bit offsets and 5**6 16-bit entries (~0.34 MB), not dicts of ~4,700 int keys and
    values (~0.7 MB with their int objects); a rank holds at most four cards (rule 3.1's one
    deck), so the cards' summed base-5 digits never carry."""
    from array import array

    from controller.games.uth import evaluator as ev

    ev.build_tables()
    assert all(isinstance(t, array) for t in (ev._LOW, ev._HIGH, ev._NONFLUSH, ev._FLUSH))
    assert (ev._LOW.typecode, len(ev._LOW)) == ("I", 5**7)
    assert (ev._HIGH.typecode, len(ev._HIGH)) == ("H", 5**6)
    # Four of a rank, the most one deck holds, stays inside its digit.
    for r in range(13):
        four = 4 * ev._rank_digit(r)
        assert four & ev._DIGITS_LOW_MASK == (four if r < 7 else 0)
