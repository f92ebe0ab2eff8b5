"""Two-tile hands: the seeds' ranking of pairs, Wongs, Gongs, High Nines and points."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.games.paigow.hands import Kind, make_hand
from controller.games.paigow.tiles import TILES, parse_tile

# ACT Appendix A, the pairs "ranked as follows", in the seed's own order (NSW Appendix 1 agrees).
PAIRS_IN_SEED_ORDER = [
    ("1-2", "2-4"), ("6-6", "6-6"), ("1-1", "1-1"), ("4-4", "4-4"), ("1-3", "1-3"),
    ("5-5", "5-5"), ("3-3", "3-3"), ("2-2", "2-2"), ("5-6", "5-6"), ("4-6", "4-6"),
    ("1-6", "1-6"), ("1-5", "1-5"), ("4-5", "3-6"), ("3-5", "2-6"), ("3-4", "2-5"),
    ("1-4", "2-3"),
]
# ACT Appendix B: Teen Wong, Day Wong, Teen Gong, Day Gong, Teen High Nine, Day High Nine.
WONGS_IN_SEED_ORDER = [("6-6", "4-5"), ("1-1", "3-6"), ("6-6", "4-4"), ("1-1", "2-6"),
                       ("6-6", "1-6"), ("1-1", "3-4")]


def hand(a: str, b: str):
    return make_hand(parse_tile(a), parse_tile(b))


ALL_HANDS = [make_hand(a, b) for a, b in itertools.combinations_with_replacement(TILES, 2)]


def test_pairs_rank_in_the_seed_order_and_above_everything_else() -> None:
    # NSW 3.2 and Appendix 1, NZ 4.1 and Appendix 2, ACT 3.5 and Appendix A.
    pairs = [hand(a, b) for a, b in PAIRS_IN_SEED_ORDER]
    assert [p.ranking for p in pairs] == list(range(1, 17))
    assert all(p.kind is Kind.PAIR for p in pairs)
    keys = [p.key for p in pairs]
    assert keys == sorted(keys, reverse=True)
    best_non_pair = max(h.key for h in ALL_HANDS if h.kind is not Kind.PAIR)
    assert min(keys) > best_non_pair


def test_wongs_gongs_high_nines_rank_17_to_22_above_every_points_hand() -> None:
    # NSW 3.2.1: hands lower than Day High Nine (ranking 22) are valued by points. The ranking
    # of Wongs, Gongs and High Nines: NSW Appendix 1, NZ Appendix 2, ACT 3.6 and Appendix B.
    wongs = [hand(a, b) for a, b in WONGS_IN_SEED_ORDER]
    assert [w.ranking for w in wongs] == list(range(17, 23))
    keys = [w.key for w in wongs]
    assert keys == sorted(keys, reverse=True)
    assert min(keys) > max(h.key for h in ALL_HANDS if h.kind is Kind.POINTS)


@pytest.mark.parametrize("nine", ["4-5", "3-6"])
@pytest.mark.parametrize("eight", ["4-4", "3-5", "2-6"])
@pytest.mark.parametrize("seven", ["1-6", "3-4", "2-5"])
def test_a_wong_gong_or_high_nine_takes_any_9_8_or_7(nine: str, eight: str, seven: str) -> None:
    # Note under the Wong tables: "can be played with any 9, 8 or 7, not only the tiles depicted".
    for owner in ("6-6", "1-1"):
        assert hand(owner, nine).kind is Kind.WONG
        assert hand(owner, eight).kind is Kind.GONG
        assert hand(owner, seven).kind is Kind.HIGH_NINE
    assert hand("6-6", nine).key > hand("1-1", nine).key


def test_gee_joon_counts_3_or_6_whichever_is_better() -> None:
    # NSW 3.2.2, NZ 4.2: 1-2 or 2-4 with 5-6 (11): 3+11=4 or 6+11=7 -> 7.
    assert hand("1-2", "5-6").points == 7
    assert hand("2-4", "5-6").points == 7
    # with a 4 (1-3): 3+4=7 or 6+4=0 -> 7; with a 3-4 (7): 3+7=0 or 6+7=3 -> 3.
    assert hand("2-4", "1-3").points == 7
    assert hand("1-2", "3-4").points == 3


@given(st.sampled_from(TILES), st.sampled_from(TILES))
def test_points_are_pips_mod_10(a, b) -> None:
    # NSW 3.2.1, NZ 4.2, ACT 3.9
    h = make_hand(a, b)
    if not (a.is_gee_joon or b.is_gee_joon):
        assert h.points == (a.pips + b.pips) % 10
    assert h.first.single_rank <= h.second.single_rank


def test_equal_points_are_decided_by_the_higher_ranking_tile() -> None:
    # NSW 9.2.1.2, NZ 4.3-4.4, ACT 12.3: 9 with Teen beats 9 with a low 10 (each tile's own
    # rank: NZ 4.4 and Appendix 3, ACT 3.7 and Appendix C).
    # Teen with a 7 is a High Nine, not a 9: ranked above every points hand.
    assert hand("6-6", "2-5").kind is Kind.HIGH_NINE
    high8_four = hand("4-4", "1-5")  # 8+6 = 14 -> 4, High 8 on top
    low4_four = hand("4-6", "2-2")  # 10+4 = 14 -> 4, Low 4 on top (Low 4 outranks Low 10)
    assert high8_four.points == low4_four.points == 4
    assert high8_four.key > low4_four.key
    # Mixed-pair tiles rank equally: 9 made with 4-5 or 3-6 alongside a 5-5 tie (a copy).
    assert hand("5-5", "4-5").key == hand("5-5", "3-6").key


def test_every_zero_hand_is_equal_and_lowest() -> None:
    zeros = [h for h in ALL_HANDS if h.kind is Kind.POINTS and h.points == 0]
    assert len(zeros) > 5
    assert {h.key for h in zeros} == {0}
    assert min(h.key for h in ALL_HANDS) == 0
    # key_by_tile still tells zero hands apart by their higher tile (ACT 12.3 for high hands).
    assert hand("6-6", "4-4").kind is Kind.GONG
    assert hand("5-5", "5-5").kind is Kind.PAIR
    # 1-3 + 1-5 = 10 -> 0 with High 4 on top; 4-6 + 5-5 = 20 -> 0 with High 10 on top.
    assert hand("1-3", "1-5").key_by_tile > hand("4-6", "5-5").key_by_tile > 0


def test_a_hand_never_beats_itself_and_beating_is_a_strict_weak_order() -> None:
    keys = {h: h.key for h in ALL_HANDS}
    for a in ALL_HANDS:
        assert not keys[a] > keys[a]
    # Transitivity of "beats" and of "ties" over every triple of hand types.
    ordered = sorted(ALL_HANDS, key=keys.get)
    for x, y in itertools.pairwise(ordered):
        assert keys[x] <= keys[y]
