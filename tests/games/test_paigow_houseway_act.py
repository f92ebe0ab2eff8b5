"""ACT house way (Casino Canberra 1993, rule 11.1 and Appendix D): every rule, every listed hand.

Expected settings are derived here from the seed text (quoted in each test), not read back from
the implementation. docs/paigow-house-way-act.md explains every reading taken.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.games.paigow.hands import Kind, TwoTileHand, make_hand
from controller.games.paigow.houseway.act import RULES, explain_act, house_way_act
from controller.games.paigow.settings import Setting, all_settings
from controller.games.paigow.tiles import FULL_SET, Tile, parse_tile, parse_tiles
from shared.errors import InputError

# --------------------------------------------------------------------------------------------
# Helpers: everything below is written from the seed text, independently of the module.

T = parse_tile
TEEN, DAY = T("6-6"), T("1-1")
# Tile names of the text, by pips; a Gee Joon tile is "a 3", never "a 6" (see the docs).
NAMED: dict[str, tuple[str, ...]] = {
    "3": ("1-2", "2-4"),
    "4": ("1-3", "2-2"),
    "5": ("1-4", "2-3"),
    "6": ("3-3", "1-5"),
    "7": ("1-6", "3-4", "2-5"),
    "8": ("4-4", "3-5", "2-6"),
    "9": ("4-5", "3-6"),
    "10": ("5-5", "4-6"),
    "11": ("5-6",),
    "low 8": ("3-5", "2-6"),
    "2 or 12": ("1-1", "6-6"),
}
# Teen, Day, 9's, 8's (High 8 and low 8), 7's (High 7 and low 7) as pair ranks
SPLITTABLE_PAIR_RANKS = {2, 3, 13, 4, 14, 11, 15}
CHONG_3 = make_hand(T("3-3"), T("3-4"))  # 3 points, Chong the higher tile


def tiles(text: str) -> tuple[Tile, ...]:
    return parse_tiles(text.split(), 4)


def hand_of(s: Setting) -> tuple[list[str], list[str]]:
    return sorted(t.notation for t in s.high.tiles), sorted(t.notation for t in s.low.tiles)


def setting_is(s: Setting, high: str, low: str) -> bool:
    return hand_of(s) == (sorted(high.split()), sorted(low.split()))


def at_least(hand: TwoTileHand, points: int) -> bool:
    """"N or better": a ranked hand, or N points or more."""
    return hand.is_ranked or hand.points >= points


def pair_ranks(ts: Sequence[Tile]) -> list[int]:
    ranks = [t.pair_rank for t in ts]
    return sorted({r for r in ranks if ranks.count(r) == 2})


def together(s: Setting, a: Tile, b: Tile) -> bool:
    return any(sorted(h.tiles, key=str) == sorted((a, b), key=str) for h in (s.high, s.low))


def wong_class(h: TwoTileHand) -> bool:
    return h.kind in (Kind.WONG, Kind.GONG, Kind.HIGH_NINE)


def combos(*names: str) -> list[tuple[Tile, ...]]:
    """Every hand of one tile of each named kind (no tile used twice beyond the set)."""
    out = []
    for choice in itertools.product(*(NAMED.get(n, (n,)) for n in names)):
        ts = tuple(T(c) for c in choice)
        if all(ts.count(t) <= t.copies for t in ts):
            out.append(ts)
    return out


ALL_HANDS: list[tuple[Tile, ...]] = list(itertools.combinations(FULL_SET, 4))


Decided = list[tuple[tuple[Tile, ...], Setting, str, list[Setting]]]


@pytest.fixture(scope="module")
def decided() -> Decided:
    """Every hand with its house-way setting, the rule's explanation and all its settings."""
    return [(h, *explain_act(h), all_settings(h)) for h in ALL_HANDS]


# --------------------------------------------------------------------------------------------
# API


def test_rules_are_listed_in_the_documented_order() -> None:
    assert [name for name, _ in RULES] == [
        "App D 1", "App D 2(a)-(d)", "11.1(a)", "App D Exc (a)", "11.1(b), App D 3(a)-(c)",
        "App D Individuals (a)-(e)", "11.1(c)/(d), App D Exc (b)-(f)",
    ]


def test_bad_input_is_an_input_error() -> None:
    with pytest.raises(InputError):
        house_way_act(tiles("6-6 6-6 1-1 1-1")[:3])
    with pytest.raises(InputError):
        house_way_act([T("4-5"), T("4-5"), T("1-1"), T("6-6")])  # a set holds one 4-5


# --------------------------------------------------------------------------------------------
# App D 1 and 11.1(a): the pairs


@pytest.mark.parametrize(
    ("hand", "high", "low"),
    [
        ("6-6 6-6 4-5 3-6", "6-6 6-6", "4-5 3-6"),  # Teen pair and 9's: neither split (2(a), 2(b))
        ("1-1 1-1 3-5 2-6", "1-1 1-1", "3-5 2-6"),
        ("1-6 1-6 3-4 2-5", "1-6 1-6", "3-4 2-5"),  # two pairs of sevens
        ("1-2 2-4 1-4 2-3", "1-2 2-4", "1-4 2-3"),
    ],
    ids=["ex1-teen-nines", "ex2-day-low8s", "ex3-sevens", "ex4-geejoon-fives"],
)
def test_app_d_1_two_ranking_pairs_are_two_hands(hand: str, high: str, low: str) -> None:
    """ACT App D 1: "When having two ranking pairs play the two pairs as two hands"."""
    s, why = explain_act(tiles(hand))
    assert setting_is(s, high, low)
    assert why.startswith("ACT App D 1")


@pytest.mark.parametrize(
    ("hand", "pair"),
    [
        ("1-2 2-4 6-6 1-1", "1-2 2-4"),  # Gee Joon with Teen and Day: never split in ACT
        ("1-3 1-3 6-6 4-5", "1-3 1-3"),  # High 4 pair kept although Teen + 9 is a Wong
        ("5-5 5-5 4-5 1-1", "5-5 5-5"),
        ("3-3 3-3 6-6 1-6", "3-3 3-3"),
        ("2-2 2-2 6-6 3-5", "2-2 2-2"),
        ("5-6 5-6 6-6 4-5", "5-6 5-6"),
        ("4-6 4-6 1-1 4-5", "4-6 4-6"),
        ("1-5 1-5 6-6 4-4", "1-5 1-5"),
        ("1-4 2-3 6-6 4-5", "1-4 2-3"),
    ],
)
def test_11_1a_pairs_not_in_app_d_2_are_played_as_pairs(hand: str, pair: str) -> None:
    """ACT 11.1(a) "Play the pairs"; App D 2 "Only split the following pairs" (not these)."""
    s, why = explain_act(tiles(hand))
    assert hand_of(s)[0] == sorted(pair.split())
    assert why.startswith("ACT 11.1(a)")


# --------------------------------------------------------------------------------------------
# App D 2(a)-(d): the split rules, both sides of each minimum


@pytest.mark.parametrize(
    ("rule", "hand", "split"),
    [
        # 2(a) "Split Teen and Day to make 6 - 8 or better also with 9 and 11"
        ("2(a)", "6-6 6-6 4-5 4-4", True),   # Wong / Gong
        ("2(a)", "6-6 6-6 4-5 1-3", True),   # Wong / 6 (12 + 4)
        ("2(a)", "6-6 6-6 3-3 1-5", True),   # 8 / 8
        ("2(a)", "6-6 6-6 3-3 1-4", True),   # 8 / 7
        ("2(a)", "1-1 1-1 1-6 2-2", True),   # Day High Nine / 6
        ("2(a)", "1-1 1-1 3-5 3-4", True),   # Day Gong / Day High Nine
        ("2(a)", "6-6 6-6 1-4 1-3", False),  # 7 / 6: high hand under 8
        ("2(a)", "6-6 6-6 1-3 2-2", False),  # 6 / 6
        ("2(a)", "6-6 6-6 4-5 4-6", False),  # Wong / 2 (12 + 10)
        ("2(a)", "6-6 6-6 4-5 1-1", False),  # Wong / 4 (Teen + Day)
        ("2(a)", "1-1 1-1 1-6 5-5", False),  # High Nine / 2
        ("2(a)", "6-6 6-6 1-2 1-4", False),  # 8 / 7 but the pair keeps 8 low: "no higher play"
        ("2(a)", "6-6 6-6 1-2 3-3", False),  # 8 / 8, the pair keeps 9 low: "no higher play"
        # 2(a) "also with 9 and 11"
        ("2(a)", "6-6 6-6 4-5 5-6", True),   # Wong / 3
        ("2(a)", "1-1 1-1 3-6 5-6", True),   # Day Wong / 3
        # 2(b) "Split 9's - to make 9 - 9 or better"
        ("2(b)", "4-5 3-6 6-6 1-1", True),   # Teen Wong / Day Wong
        ("2(b)", "4-5 3-6 6-6 5-5", True),   # Wong / 9
        ("2(b)", "4-5 3-6 1-1 4-6", True),   # Day Wong / 9
        ("2(b)", "4-5 3-6 5-5 4-6", True),   # 9 / 9
        ("2(b)", "4-5 3-6 6-6 5-6", False),  # Wong / 0
        ("2(b)", "4-5 3-6 5-5 5-6", False),  # 9 / 0
        ("2(b)", "4-5 3-6 6-6 1-6", False),  # Wong / 6 (9 + 7)
        # 2(c) "Split 8's - to make 7 - 9 or 8 - 8 and better" (high and low eights)
        ("2(c)", "3-5 2-6 6-6 1-1", True),   # Gong / Gong
        ("2(c)", "3-5 2-6 6-6 5-6", True),   # Gong / 9
        ("2(c)", "3-5 2-6 1-1 5-5", True),   # Gong / 8
        ("2(c)", "3-5 2-6 5-6 4-6", True),   # 9 / 8
        ("2(c)", "3-5 2-6 5-6 4-5", True),   # 9 / 7
        ("2(c)", "3-5 2-6 5-5 4-6", True),   # 8 / 8
        ("2(c)", "4-4 4-4 6-6 1-1", True),   # high eights: Gong / Gong
        ("2(c)", "4-4 4-4 5-6 5-5", True),   # high eights: 9 / 8
        ("2(c)", "3-5 2-6 5-5 4-5", False),  # 8 / 7
        ("2(c)", "3-5 2-6 6-6 1-4", False),  # Gong / 3
        ("2(c)", "3-5 2-6 6-6 4-5", False),  # Gong / 7, but 8's + Teen Wong is higher
        ("2(c)", "4-4 4-4 5-6 1-6", False),  # 9 / 5
        # 2(d) "Split 7's - to make 7 - Day nine or better" (high and low sevens)
        ("2(d)", "3-4 2-5 6-6 1-1", True),   # Teen High Nine / Day High Nine
        ("2(d)", "3-4 2-5 1-1 5-5", True),   # Day High Nine / 7
        ("2(d)", "1-6 1-6 6-6 5-6", True),   # Teen High Nine / 8
        ("2(d)", "1-6 1-6 1-1 4-6", True),   # Day High Nine / 7
        ("2(d)", "3-4 2-5 5-6 5-5", False),  # 8 / 7: high hand is no Day nine
        ("2(d)", "1-6 1-6 5-5 4-6", False),  # 7 / 7
        ("2(d)", "3-4 2-5 6-6 4-5", False),  # High Nine / 6
    ],
)
def test_app_d_2_split_rules(rule: str, hand: str, split: bool) -> None:
    """ACT App D 2: "Only split the following pairs providing no higher play is possible"."""
    ts = tiles(hand)
    s, why = explain_act(ts)
    (rank,) = pair_ranks(ts)
    a, b = [t for t in ts if t.pair_rank == rank]
    assert together(s, a, b) is not split
    if split:
        assert why.startswith(f"ACT App D {rule}")
    else:
        assert why.startswith("ACT 11.1(a)")


def test_app_d_2a_teen_pair_with_9_and_11_gives_wong_and_3() -> None:
    """ACT App D 2(a) "also with 9 and 11": Teen + 9 (Wong) / Teen + 11 (3)."""
    s = house_way_act(tiles("6-6 6-6 4-5 5-6"))
    assert setting_is(s, "6-6 4-5", "6-6 5-6")
    assert s.high.kind is Kind.WONG and s.low.points == 3


# --------------------------------------------------------------------------------------------
# App D 3 and Exceptions (a): Wongs, Gongs and High Nines


@pytest.mark.parametrize(
    ("hand", "high", "low", "rule"),
    [
        # 3(a)/(b): High Nine ahead of Gong and Wong; low 9 + 8 = 7 is Chong 3 or better.
        ("6-6 4-5 4-4 1-6", "6-6 1-6", "4-5 4-4", "3(b)"),
        # 3(b) "Always play Gong ahead of Wong": 9 + 5-5 = 9 low instead of 8 + 5-5 = 8.
        ("6-6 4-5 3-5 5-5", "6-6 3-5", "4-5 5-5", "3(b)"),
        # 3(b) "Always": Teen + 2-6 Gong, 3-6 + 1-5 = 5 low (the Wong would leave 2-6 + 1-5 = 4).
        ("6-6 3-6 2-6 1-5", "6-6 2-6", "3-6 1-5", "3(b)"),
        # 3(c): the High Nine (Day + 3-4) leaves 4-5 + 2-2 = 3 with Low 4 on top, under Chong 3:
        # play the Wong (Day + 4-5) over it, 3-4 + 2-2 = 1 low.
        ("1-1 4-5 3-4 2-2", "1-1 4-5", "3-4 2-2", "3(c)"),
        # 3(c): the High Nine leaves 4-4 + 1-3 = 2: play the Gong (4-4 with Teen) over it.
        ("6-6 1-6 4-4 1-3", "6-6 4-4", "1-6 1-3", "3(c)"),
        # 3(a): only a High Nine can be made; played although its low hand is weak.
        ("6-6 1-6 5-5 1-1", "6-6 1-6", "1-1 5-5", "3(a)"),
        # 3(a): only a Wong can be made.
        ("6-6 4-5 1-3 2-2", "6-6 4-5", "1-3 2-2", "3(a)"),
    ],
    ids=["3b-high-nine", "3b-gong-over-wong", "3b-always", "3c-wong", "3c-gong", "3a-hn", "3a-w"],
)
def test_app_d_3_wong_gong_high_nine(hand: str, high: str, low: str, rule: str) -> None:
    """ACT App D 3(a)-(c) (see the docs for how 3(a), 3(b) and 3(c) are reconciled)."""
    s, why = explain_act(tiles(hand))
    assert setting_is(s, high, low)
    assert f"App D {rule}" in why or (rule == "3(c)" and "3(c)" in why)


def test_app_d_3b_high_nine_low_hand_at_chong_3_exactly() -> None:
    """ACT App D 3(c) boundary: a low of 3 points with Chong (3-3 + 1-6... here 3-3 + 3-4) is
    "Chong ranking 3", so the High Nine stands; with Low 4 (2-2 + 4-5 = 3) it is not."""
    s = house_way_act(tiles("6-6 1-6 3-3 3-4"))  # Teen + a 7 HN, 3-3 + the other 7 = 3 (Chong)
    assert s.high.kind is Kind.HIGH_NINE and s.low.key == CHONG_3.key
    s = house_way_act(tiles("6-6 1-6 2-2 4-5"))  # HN leaves 2-2 + 4-5 = 3 (Low 4): under Chong 3
    assert s.high.kind is Kind.WONG and setting_is(s, "6-6 4-5", "1-6 2-2")


@pytest.mark.parametrize(
    "ts", combos("2 or 12", "9", "7", "11") + combos("2 or 12", "9", "8", "11"),
    ids=lambda ts: " ".join(map(str, ts)),
)
def test_app_d_exception_a_wong_when_fourth_tile_is_11(ts: tuple[Tile, ...]) -> None:
    """ACT App D EXCEPTIONS (a): "Play Wong over Gong and High Nine when fourth tile is 11"."""
    s, why = explain_act(ts)
    assert s.high.kind is Kind.WONG
    assert together(s, T("5-6"), ts[2])  # the 7 or 8 goes with the 11
    assert why.startswith("ACT App D Exc (a)")


def test_app_d_exception_a_overrides_3b_gong_ahead_of_wong() -> None:
    """ACT App D Exc (a) vs 3(b): Teen, 9, 8, 11 -> Wong / 8 + 11 = 9, not Gong / 9 + 11 = 0."""
    assert setting_is(house_way_act(tiles("6-6 4-5 4-4 5-6")), "6-6 4-5", "4-4 5-6")


def test_app_d_3_teen_and_day_both_make_wong_class_hands() -> None:
    """ACT App D 3 with Teen and Day (docs, ambiguity 7): the setting is classed by its high hand;
    Teen, Day, 9, 7 can only have a Wong high, and the stronger Wong (Teen's) is played."""
    s = house_way_act(tiles("6-6 1-1 4-5 1-6"))
    assert setting_is(s, "6-6 4-5", "1-1 1-6")
    assert (s.high.kind, s.low.kind) == (Kind.WONG, Kind.HIGH_NINE)


# --------------------------------------------------------------------------------------------
# App D INDIVIDUALS (a)-(e): every hand each line describes


@pytest.mark.parametrize("ts", combos("7", "4-4", "5-5", "5-6"), ids=str)
def test_individuals_a(ts: tuple[Tile, ...]) -> None:
    """ACT App D Individuals (a): "With a 7, a high 8, a high 10 and 11 play 7 - 9"."""
    s, why = explain_act(ts)
    assert (s.low.points, s.high.points) == (7, 9)
    assert setting_is(s, "4-4 5-6", f"5-5 {ts[0]}")
    assert why.startswith("ACT App D Individuals (a)")


@pytest.mark.parametrize(
    "ts", combos("1-3", "4-4", "low 8", "6") + combos("1-3", "4-4", "low 8", "7"), ids=str
)
def test_individuals_b(ts: tuple[Tile, ...]) -> None:
    """ACT App D Individuals (b): "With a high 4, high 8, a low 8 and a 6 or 7, play the high 8
    on the high hand" (with the 6 or 7, keeping the points of the general rules, see the docs)."""
    s, why = explain_act(ts)
    assert T("4-4") in s.high.tiles
    assert setting_is(s, f"4-4 {ts[3]}", f"1-3 {ts[2]}")
    assert why.startswith("ACT App D Individuals (b)")


@pytest.mark.parametrize("ts", combos("3", "6", "5", "2 or 12"), ids=str)
def test_individuals_c(ts: tuple[Tile, ...]) -> None:
    """ACT App D Individuals (c): "With a 3, a 6, a 5 and a 2 or 12 play 7-9 instead of 8-8"."""
    s, why = explain_act(ts)
    assert (s.low.points, s.high.points) == (7, 9)
    assert any(x.low.points == 8 == x.high.points for x in all_settings(ts))  # 8-8 was there
    assert why.startswith("ACT App D Individuals (c)")


def _individual_d_hands() -> list[tuple[Tile, ...]]:
    out = []
    for three, four, five in itertools.product(NAMED["3"], NAMED["4"], NAMED["5"]):
        for other in dict.fromkeys(FULL_SET):  # unique, in a fixed order (xdist workers agree)
            ts = (T(three), T(four), T(five), other)
            if all(ts.count(t) <= t.copies for t in ts) and not pair_ranks(ts):
                out.append(ts)
    return out


@pytest.mark.parametrize("ts", _individual_d_hands(), ids=lambda ts: " ".join(map(str, ts)))
def test_individuals_d(ts: tuple[Tile, ...]) -> None:
    """ACT App D Individuals (d): "With a 3, a 4, a 5, and any tile not making a pair play the
    nine" (the 4 with the 5)."""
    s, why = explain_act(ts)
    five_hand = s.high if ts[2] in s.high.tiles else s.low
    assert five_hand.points == 9
    assert any(t.notation in NAMED["4"] for t in five_hand.tiles)  # the 4 with the 5
    assert why.startswith("ACT App D Individuals (d)")


@pytest.mark.parametrize("ts", combos("4-4", "low 8", "9", "10"), ids=str)
def test_individuals_e(ts: tuple[Tile, ...]) -> None:
    """ACT App D Individuals (e): "With a high 8, low 8 and a 9 with any 10 play high 8 in the
    low hand" (with the 9: 7 low, low 8 + 10 = 8 high, see the docs)."""
    s, why = explain_act(ts)
    assert T("4-4") in s.low.tiles
    assert setting_is(s, f"{ts[1]} {ts[3]}", f"4-4 {ts[2]}")
    assert (s.high.points, s.low.points) == (8, 7)
    assert why.startswith("ACT App D Individuals (e)")


@pytest.mark.parametrize(
    ("hand", "high", "low", "rule"),
    [
        ("1-6 4-4 5-5 5-6", "4-4 5-6", "5-5 1-6", "(a)"),
        ("1-3 4-4 3-5 3-3", "4-4 3-3", "1-3 3-5", "(b)"),
        ("1-2 3-3 2-3 6-6", "1-2 3-3", "6-6 2-3", "(c)"),
        ("1-2 1-3 1-4 6-6", "1-3 1-4", "6-6 1-2", "(d)"),
        ("4-4 3-5 4-5 5-5", "3-5 5-5", "4-4 4-5", "(e)"),
    ],
)
def test_individuals_worked_examples(hand: str, high: str, low: str, rule: str) -> None:
    """ACT App D Individuals (a)-(e): one worked example each (the docs' table)."""
    s, why = explain_act(tiles(hand))
    assert setting_is(s, high, low)
    assert why.startswith(f"ACT App D Individuals {rule}")


def test_individuals_only_describe_pairless_hands_without_wongs_and_never_overlap() -> None:
    """ACT App D Individuals (a)-(e) sit after the pair and Wong rules: no listed hand holds a
    pair or can make a Wong, Gong or High Nine, and no hand fits two lines."""
    from controller.games.paigow.houseway import act

    for ts in set(tuple(sorted(h, key=str)) for h in ALL_HANDS):
        ordered = tuple(sorted(ts, key=lambda t: (t.single_rank, t.notation)))
        h = act._Hand(ordered, tuple(all_settings(ordered)))  # type: ignore[arg-type]
        lines = [p.rule for p in act.INDIVIDUALS if act._matches(p, h)]
        if lines:
            assert len(lines) == 1, (ts, lines)
            assert not pair_ranks(ts)
            assert not any(wong_class(x.high) for x in all_settings(ts)), ts


# --------------------------------------------------------------------------------------------
# 11.1(c)/(d) and Exceptions (b)-(f): hands with no pair and no Wong, Gong or High Nine


@pytest.mark.parametrize(
    ("hand", "high", "low", "clause"),
    [
        # 11.1(c): the two smallest, 1-3 (High 4) + 2-2 (Low 4) = 8, beside Teen + Day = 4.
        ("6-6 1-1 1-3 2-2", "1-3 2-2", "6-6 1-1", "11.1(c)"),
        # 11.1(d)/Exc (b): Teen (highest) with 1-5 (lowest) = 8, Day + 3-3 = 8.
        ("6-6 1-1 3-3 1-5", "6-6 1-5", "1-1 3-3", "11.1(d)/Exc (b)"),
        # 11.1(d): Teen + 3-3 = 8 high, 1-3 + 5-5 = 4 low (Chong 3 or better).
        ("6-6 1-3 5-5 3-3", "6-6 3-3", "1-3 5-5", "11.1(d)/Exc (b)"),
        # Exc (b) "unless a higher hand can be achieved": 11.1(c) gives 1-3 + Gee Joon = 7 / Teen +
        # Day = 4, but Teen + Gee Joon = 8 / Day + 1-3 = 6 is higher in both hands.
        ("6-6 1-1 1-3 1-2", "6-6 1-2", "1-1 1-3", "Exc (b) higher hand"),
        # Exc (c) pump up: biggest with smallest is Teen + 3-3 = 8 / Day + 5-5 = 2... the low is
        # not Chong 3, so the high hand is pumped: 8 is the best high hand (Teen + 3-3 again).
        ("6-6 1-1 5-5 3-3", "6-6 3-3", "1-1 5-5", "pump up"),
        # Exc (c) pump up to 7: Teen + 1-4 = 7 / 5-5 + Day = 2; 7 or better reached.
        ("6-6 1-1 5-5 1-4", "1-1 1-4", "6-6 5-5", "pump up"),
        # Exc (c) balance up: no high hand reaches 7 (best 6), so the low is made best: 4 / 4.
        ("6-6 1-1 1-3 5-5", "6-6 1-1", "1-3 5-5", "balance up"),
    ],
)
def test_points_hands_11_1_and_exceptions_b_c(hand: str, high: str, low: str, clause: str) -> None:
    """ACT 11.1(c) "two small tiles that equal 7, 8 or 9", 11.1(d) "the biggest tile with the
    smallest", App D Exc (b) "unless a higher hand can be achieved", Exc (c) "If the low hand is
    not chong 3 or better pump up the high hand. If 7 or better is not achieved on the high hand
    balance up"."""
    s, why = explain_act(tiles(hand))
    assert setting_is(s, high, low)
    assert clause in why


@pytest.mark.parametrize(
    ("hand", "high", "low", "pumped"),
    [
        # 1-3 (highest) + Gee Joon (lowest) = 7 / 3-3 + 1-6 = 3 with Chong on top: exactly Chong 3,
        # so the high hand is not pumped (it would be with NZ's Harmony 3, High 4 on top).
        ("1-2 1-3 1-6 3-3", "1-3 1-2", "3-3 1-6", False),
        ("1-2 1-3 3-4 3-3", "1-3 1-2", "3-3 3-4", False),
        # 5-5 (highest) + 2-5 (lowest) = 7 / 2-2 + 3-6 = 3 with Low 4 on top: under Chong 3, so
        # pump up the high hand: 5-5 + 3-6 = 9 / 2-2 + 2-5 = 1.
        ("2-2 2-5 3-6 5-5", "5-5 3-6", "2-2 2-5", True),
    ],
)
def test_exception_c_chong_3_boundary(hand: str, high: str, low: str, pumped: bool) -> None:
    """ACT App D Exc (c) "If the low hand is not chong 3 or better pump up the high hand": a
    3-point low hand with Chong (3-3) as its higher tile is Chong 3; with Low 4 (2-2) it is not."""
    s, why = explain_act(tiles(hand))
    assert setting_is(s, high, low)
    assert ("pump up" in why) is pumped


@pytest.mark.parametrize(
    ("hand", "high", "low", "clause"),
    [
        # Exc (d): 5 / 2... here 3 / 2 either way (Day + 11 / Teen + 10 or Teen + 11 / Day + 10);
        # high hand 7 or less: the high-ranking tile (Teen) goes low.
        ("6-6 1-1 5-5 5-6", "1-1 5-6", "6-6 5-5", "Exc (d)"),
        # Exc (d): 6 / 3 either way (Teen + High 4 or Day + High 4 high); Teen goes low.
        ("6-6 1-1 1-3 5-6", "1-1 1-3", "6-6 5-6", "Exc (d)"),
        # Exc (e): 8 / 6 either way; high hand 8: Teen on the high hand.
        ("6-6 1-1 1-3 3-3", "6-6 3-3", "1-1 1-3", "Exc (e)"),
        # Exc (f): 9 / 6 either way, Teen on the low hand both times; do not put Teen and High 4
        # (the two highest-ranking tiles) together.
        ("6-6 1-3 2-2 1-4", "1-3 1-4", "6-6 2-2", "Exc (f)"),
    ],
)
def test_points_hands_exceptions_d_e_f(hand: str, high: str, low: str, clause: str) -> None:
    """ACT App D Exc (d) "When the high hand is 7 or less, where possible, play the high ranking
    tile on the low hand", (e) "When the high hand is 8 or 9, where possible play the high ranking
    tile on the high hand", (f) "When given a choice do not play two high ranking tiles on the
    same hand"."""
    s, why = explain_act(tiles(hand))
    assert setting_is(s, high, low)
    assert clause in why


def test_individuals_are_exceptions_to_the_general_rules() -> None:
    """Without App D Individuals the general rules give what each line overrides: 8-8 for (a)
    and (c) ("instead of 8-8"), the high 8 low for (b), high for (e), 8-8 for (d) with two 4s."""
    from controller.games.paigow.houseway import act

    def general(hand: str) -> Setting:
        ts = tuple(sorted(tiles(hand), key=lambda t: (t.single_rank, t.notation)))
        return act.rule_points(act._Hand(ts, tuple(all_settings(ts))))[0]  # type: ignore[arg-type]

    assert (general("1-6 4-4 5-5 5-6").high.points, general("1-6 4-4 5-5 5-6").low.points) == (8, 8)
    assert T("4-4") in general("1-3 4-4 3-5 3-3").low.tiles
    g = general("1-2 3-3 2-3 6-6")
    assert (g.high.points, g.low.points) == (8, 8)
    g = general("1-2 1-3 2-2 2-3")
    assert (g.high.points, g.low.points) == (8, 8)
    assert T("4-4") in general("4-4 3-5 4-5 5-5").high.tiles


# --------------------------------------------------------------------------------------------
# Exhaustive: all 35,960 four-tile hands


def test_exhaustive_legal_and_one_of_the_hands_settings(decided: Decided) -> None:
    for ts, s, _, opts in decided:
        assert s.is_valid and s.high.key >= s.low.key
        assert s in opts
        assert sorted(map(str, s.tiles)) == sorted(map(str, ts))


def test_exhaustive_two_ranking_pairs_always_two_hands(decided: Decided) -> None:
    """ACT App D 1, with no split rule overriding it (2 splits only "providing no higher play")."""
    n = 0
    for ts, s, why, _ in decided:
        if len(pair_ranks(ts)) == 2:
            n += 1
            assert s.high.kind is Kind.PAIR and s.low.kind is Kind.PAIR, ts
            assert why.startswith("ACT App D 1")
    assert n > 0


def test_exhaustive_never_split_pairs_stay_together(decided: Decided) -> None:
    """ACT App D 2: only Teen, Day, 7's, 8's and 9's are ever split."""
    for ts, s, _, _ in decided:
        for rank in pair_ranks(ts):
            if rank not in SPLITTABLE_PAIR_RANKS:
                assert s.high.kind is Kind.PAIR, ts


def _split_minimum_reached(rank: int, s: Setting, others: list[Tile]) -> bool:
    lo, hi = s.low, s.high
    if rank in (2, 3):  # 2(a) 6 - 8 or better; also with 9 and 11
        names = sorted(t.notation for t in others)
        nine_eleven = any(n in NAMED["9"] for n in names) and "5-6" in names
        return (at_least(lo, 6) and at_least(hi, 8)) or nine_eleven
    if rank == 13:  # 2(b) 9 - 9
        return at_least(lo, 9) and at_least(hi, 9)
    if rank in (4, 14):  # 2(c) 7 - 9 or 8 - 8
        return at_least(lo, 7) and at_least(hi, 8) and not (hi.points == 8 and not hi.is_ranked
                                                            and lo.points == 7)
    # 2(d) 7 - Day nine: low 7 or better, high at least the Day High Nine (App B, 6th)
    return at_least(lo, 7) and wong_class(hi)


def test_exhaustive_split_only_when_the_minimum_is_reached(decided: Decided) -> None:
    """ACT App D 2(a)-(d): a split pair's setting reaches the line's minimum, and splitting never
    gives up a play that is higher in both hands."""
    splits = 0
    for ts, s, why, opts in decided:
        ranks = pair_ranks(ts)
        if len(ranks) != 1 or ranks[0] not in SPLITTABLE_PAIR_RANKS:
            continue
        a, b = [t for t in ts if t.pair_rank == ranks[0]]
        others = [t for t in ts if t.pair_rank != ranks[0]]
        keep = next(x for x in opts if x.high.kind is Kind.PAIR)
        if not together(s, a, b):
            splits += 1
            assert _split_minimum_reached(ranks[0], s, others), (ts, why)
            assert not (keep.high.key >= s.high.key and keep.low.key >= s.low.key)
        else:
            # kept: no split reaching the minimum would have been a higher play than the pair
            for x in opts:
                if not together(x, a, b) and _split_minimum_reached(ranks[0], x, others):
                    assert keep.high.key >= x.high.key and keep.low.key >= x.low.key, ts
    assert splits > 0


def test_exhaustive_wong_gong_high_nine_played_when_no_pair(decided: Decided) -> None:
    """ACT 11.1(b) / App D 3(a): "If no pair play is possible, play a High Nine, Gong or Wong"."""
    for ts, s, _, opts in decided:
        if not pair_ranks(ts) and any(wong_class(x.high) for x in opts):
            assert wong_class(s.high), ts


def test_exhaustive_wong_class_preference(decided: Decided) -> None:
    """ACT App D 3(b)/(c), Exc (a): a High Nine with a Chong 3 (or better) low beats a Gong or
    Wong; a High Nine with a weaker low yields to a Gong or Wong; a Gong beats a Wong unless the
    fourth tile is 11."""
    for ts, s, _, opts in decided:
        if pair_ranks(ts):
            continue
        options = [x for x in opts if wong_class(x.high)]
        kinds = {x.high.kind for x in options}
        good_nine = any(x.high.kind is Kind.HIGH_NINE and x.low.key >= CHONG_3.key
                        for x in options)
        eleven = T("5-6") in ts and Kind.WONG in kinds and len(kinds) > 1
        if eleven:
            assert s.high.kind is Kind.WONG, ts
        elif good_nine:
            assert s.high.kind is Kind.HIGH_NINE and s.low.key >= CHONG_3.key, ts
        elif Kind.GONG in kinds:
            assert s.high.kind is Kind.GONG, ts
        elif Kind.WONG in kinds:
            assert s.high.kind is Kind.WONG, ts


def test_exhaustive_points_hands_never_play_a_lower_hand(decided: Decided) -> None:
    """ACT App D Exc (b) "unless a higher hand can be achieved" (and Exc (c)): with no pair and no
    Wong, no other setting is at least as many points in both hands and more in one."""
    for ts, s, why, opts in decided:
        if pair_ranks(ts) or wong_class(s.high):
            continue
        for x in opts:
            at_least_as_good = x.high.points >= s.high.points and x.low.points >= s.low.points
            same = (x.high.points, x.low.points) == (s.high.points, s.low.points)
            assert same or not at_least_as_good, (ts, why)


def test_exhaustive_exception_c_pumps_or_balances(decided: Decided) -> None:
    """ACT App D Exc (c): a points-hand setting whose low hand is under Chong 3 has the best high
    hand available when that reaches 7; otherwise its low hand is the best available."""
    for ts, s, why, opts in decided:
        if pair_ranks(ts) or wong_class(s.high) or "Individuals" in why:
            continue
        if s.low.key < CHONG_3.key:
            best_high = max(x.high.points for x in opts)
            if best_high >= 7:
                assert s.high.points == best_high, (ts, why)
            else:
                assert s.low.points == max(x.low.points for x in opts), (ts, why)


# --------------------------------------------------------------------------------------------
# Properties


hands_st = st.lists(st.sampled_from(range(len(FULL_SET))), min_size=4, max_size=4, unique=True).map(
    lambda idx: tuple(FULL_SET[i] for i in idx)
)
MIXED_PARTNER = {"4-5": "3-6", "3-6": "4-5", "3-5": "2-6", "2-6": "3-5", "3-4": "2-5",
                 "2-5": "3-4", "1-4": "2-3", "2-3": "1-4", "1-2": "2-4", "2-4": "1-2"}


def _unordered(s: Setting) -> frozenset[tuple[str, ...]]:
    return frozenset(tuple(sorted(t.notation for t in h.tiles)) for h in (s.high, s.low))


@given(hands_st, st.permutations(range(4)))
def test_property_invariant_under_permutation(ts: tuple[Tile, ...], order: list[int]) -> None:
    a = house_way_act(ts)
    b = house_way_act(tuple(ts[i] for i in order))
    assert _unordered(a) == _unordered(b)
    assert (a.high.key, a.low.key) == (b.high.key, b.low.key)


@given(hands_st)
def test_property_mixed_partner_swap(ts: tuple[Tile, ...]) -> None:
    """Swapping a mixed-pair tile for its partner (same rank, same count: 4-5/3-6, 3-5/2-6,
    3-4/2-5, 1-4/2-3, and the Gee Joon tiles that both count 3 or 6) when the partner is not in
    the hand changes nothing but that tile. (Teen/Day or High 8/low 8 are NOT such symmetries:
    their ranks differ.)"""
    notations = [t.notation for t in ts]
    for i, n in enumerate(notations):
        partner = MIXED_PARTNER.get(n)
        if partner is None or partner in notations:
            continue
        swapped = tuple(T(partner) if j == i else t for j, t in enumerate(ts))
        a, b = house_way_act(ts), house_way_act(swapped)
        mapped = frozenset(
            tuple(sorted(partner if x == n else x for x in h)) for h in _unordered(a)
        )
        assert mapped == _unordered(b)
        assert (a.high.key, a.low.key) == (b.high.key, b.low.key)


@given(hands_st)
def test_property_idempotent_on_its_own_setting(ts: tuple[Tile, ...]) -> None:
    """Feeding the set hand back (high tiles first) gives the same hands."""
    s = house_way_act(ts)
    assert _unordered(house_way_act(s.tiles)) == _unordered(s)


@given(hands_st)
def test_property_explain_names_an_act_rule(ts: tuple[Tile, ...]) -> None:
    s, why = explain_act(ts)
    assert why.startswith("ACT ")
    assert all(t.notation in why for t in s.tiles)  # names the setting it decided
