"""Par sheet: exact counts against the known totals and against brute force, Trips return
against published house edges, jackpot odds."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

import pytest

from controller.games.uth.evaluator import Category, category_of
from controller.games.uth.jackpot import expected_return
from controller.games.uth.parsheet import category_counts, jackpot_par, par_sheet, trips_par
from controller.games.uth.paytables import TRIPS_CATEGORIES, JackpotPayTable, parse_paytable
from tests.support.uth_cards import five_card_rank_counts

C = Category

KNOWN_SEVEN = {
    C.ROYAL_FLUSH: 4_324,
    C.STRAIGHT_FLUSH: 37_260,
    C.FOUR_OF_A_KIND: 224_848,
    C.FULL_HOUSE: 3_473_184,
    C.FLUSH: 4_047_644,
    C.STRAIGHT: 6_180_020,
    C.THREE_OF_A_KIND: 6_461_620,
    C.TWO_PAIR: 31_433_400,
    C.ONE_PAIR: 58_627_800,
    C.HIGH_CARD: 23_294_460,
}
KNOWN_SIX = {
    C.ROYAL_FLUSH: 188,
    C.STRAIGHT_FLUSH: 1_656,
    C.FOUR_OF_A_KIND: 14_664,
    C.FULL_HOUSE: 165_984,
    C.FLUSH: 205_792,
    C.STRAIGHT: 361_620,
    C.THREE_OF_A_KIND: 732_160,
    C.TWO_PAIR: 2_532_816,
    C.ONE_PAIR: 9_730_740,
    C.HIGH_CARD: 6_612_900,
}


def test_all_133784560_seven_card_hands_by_category():
    counts = category_counts(7)
    assert counts == KNOWN_SEVEN
    assert sum(counts.values()) == 133_784_560


def test_six_card_counts_match_the_known_totals():
    assert category_counts(6) == KNOWN_SIX


def test_five_card_counting_equals_brute_force_over_all_2598960_hands():
    brute: Counter[Category] = Counter()
    for r, n in five_card_rank_counts().items():  # hand_rank of every one of the 2,598,960 hands
        brute[category_of(r)] += n
    assert sum(brute.values()) == 2_598_960
    assert category_counts(5) == dict(brute)


@pytest.mark.parametrize(
    ("pays", "published_edge_percent"),
    [("50,40,30,8,7,4,3", 3.50), ("50,40,30,8,6,5,3", 1.90)],  # Wizard of Odds, UTH Trips
)
def test_trips_house_edge_matches_published_values(pays, published_edge_percent):
    par = trips_par(category_counts(7), parse_paytable(pays, TRIPS_CATEGORIES))
    assert float(par.house_edge) * 100 == pytest.approx(published_edge_percent, abs=0.005)
    assert par.hit_frequency == Fraction(sum(KNOWN_SEVEN[c] for c in TRIPS_CATEGORIES), 133_784_560)


def test_jackpot_probabilities_on_hole_cards_plus_flop_rule_15_2_6():
    sheet = par_sheet()
    p = sheet.jackpot.probability
    assert p[C.ROYAL_FLUSH] == Fraction(4, 2_598_960)
    assert p[C.STRAIGHT_FLUSH] == Fraction(36, 2_598_960)
    assert p[C.FLUSH] == Fraction(5_108, 2_598_960)
    assert set(p) == {C.ROYAL_FLUSH, C.STRAIGHT_FLUSH, C.FOUR_OF_A_KIND, C.FULL_HOUSE, C.FLUSH}


def test_jackpot_return_grows_with_the_pool_and_break_even_is_where_it_reaches_one():
    five = category_counts(5)
    table = JackpotPayTable()
    low = jackpot_par(
        five, table, pool=5_000_000, wager=100, seed=5_000_000, increment=Fraction(1, 10)
    )
    high = jackpot_par(
        five, table, pool=50_000_000, wager=100, seed=5_000_000, increment=Fraction(1, 10)
    )
    assert high.return_at_pool > low.return_at_pool > low.fixed_return
    assert low.break_even_pool is not None
    p = {c: Fraction(n, 2_598_960) for c, n in five.items()}
    at_break_even = expected_return(int(low.break_even_pool) + 1, 100, table, p)
    assert Fraction(99, 100) < at_break_even < Fraction(101, 100)
