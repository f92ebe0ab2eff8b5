"""NSW (The Star Sydney 2024) house way, Appendix 2 (NSW 4.1): every line of §3 and §7, and the
invariants.

Expected settings are written here from the text of Appendix 2, independently of the tables in
houseway/nsw.py (which are only used where a test checks the tables themselves).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.games.paigow.hands import Kind, TwoTileHand, make_hand
from controller.games.paigow.houseway import nsw
from controller.games.paigow.houseway.nsw import explain_nsw, house_way_nsw
from controller.games.paigow.settings import Setting, all_settings
from controller.games.paigow.tiles import BY_NOTATION, FULL_SET, Tile, parse_tiles
from shared.errors import InputError

ALL_HANDS: list[tuple[Tile, ...]] = list(itertools.combinations(FULL_SET, 4))
# The 8,130 different hands (identical tiles make the 35,960 combinations repeat hands).
DISTINCT: dict[tuple[str, ...], tuple[Tile, ...]] = {
    tuple(sorted(t.notation for t in h)): h for h in ALL_HANDS
}
WONG_KINDS = (Kind.WONG, Kind.GONG, Kind.HIGH_NINE)

# The vocabulary of the brief / Appendix 2, written out again (not imported).
T = {
    "Teen": ["6-6"], "Day": ["1-1"], "2 or 12": ["1-1", "6-6"], "Teen/Day": ["1-1", "6-6"],
    "High 8": ["4-4"], "Low 8": ["3-5", "2-6"], "any 8": ["4-4", "3-5", "2-6"],
    "High 4": ["1-3"], "Low 4": ["2-2"], "any 4": ["1-3", "2-2"],
    "High 10": ["5-5"], "Low 10": ["4-6"], "any 10": ["5-5", "4-6"],
    "High 6": ["3-3"], "Low 6": ["1-5"], "any 6": ["3-3", "1-5"],
    "11": ["5-6"], "any 7": ["1-6", "3-4", "2-5"], "9": ["4-5", "3-6"],
    "5": ["1-4", "2-3"], "Gee Jun": ["1-2", "2-4"],
}
for _n in ("4", "6", "7", "8", "10"):
    T[_n] = T[f"any {_n}"]


def tiles(*notations: str) -> tuple[Tile, ...]:
    return parse_tiles(notations, 4)


def hand_tiles(h: TwoTileHand) -> list[str]:
    return sorted(t.notation for t in h.tiles)


def split_of(s: Setting) -> tuple[list[str], list[str]]:
    return hand_tiles(s.high), hand_tiles(s.low)


def canonical(s: Setting) -> tuple[object, ...]:
    """A setting independent of input order (see the make_hand note below)."""
    hands = sorted([(s.high.key, hand_tiles(s.high)), (s.low.key, hand_tiles(s.low))])
    return tuple((k, tuple(ts)) for k, ts in hands)


def pts(s: Setting) -> tuple[int, int]:
    return s.high.points, s.low.points


def concrete(*classes: str) -> list[tuple[str, ...]]:
    """Every four-tile hand made of one tile of each named class, as the set can hold it."""
    out = set()
    for combo in itertools.product(*(T[c] for c in classes)):
        if all(combo.count(n) <= BY_NOTATION[n].copies for n in combo):
            out.add(tuple(sorted(combo)))
    return sorted(out)


def is_pair(a: str, b: str) -> bool:
    return BY_NOTATION[a].pair_rank == BY_NOTATION[b].pair_rank


def has_ranking_pair(notations: Iterable[str]) -> bool:
    return any(is_pair(a, b) for a, b in itertools.combinations(notations, 2))


# -- App2 §7 "Exceptions to General Play": every line, every tile it can be -------------------

# (ref, classes, expected (high, low) per hand, tile that must be high, tile that must be low)
# "Play 0 and 8" = high hand 8 points, low hand 0. Where the line says "0 and 8 or 0 and 9", the
# function below gives which one the hand can make (11 with a 7 makes 8, with an 8 makes 9).
def _ex2(h: tuple[str, ...]) -> tuple[int, int]:
    return (8, 0) if any(n in T["any 7"] for n in h) else (9, 0)


def _ex12(h: tuple[str, ...]) -> tuple[int, int]:
    return (8, 0) if any(n in T["any 4"] for n in h) else (8, 1)


SECTION_7 = [
    ("ex.1", ("High 10", "Low 10", "any 6", "2 or 12"), (8, 0), None, None),
    ("ex.2", ("High 10", "Low 10", "11", "any 7"), _ex2, None, None),
    ("ex.2", ("High 10", "Low 10", "11", "any 8"), _ex2, None, None),
    ("ex.3", ("High 8", "High 10", "11", "any 7"), (9, 7), None, None),
    ("ex.4", ("High 6", "5", "Gee Jun", "2 or 12"), (9, 7), None, None),
    ("ex.5", ("High 6", "5", "Gee Jun", "any 7"), (9, 2), None, None),
    ("ex.6", ("High 6", "5", "Gee Jun", "any 8"), (9, 3), None, None),
    ("ex.7", ("High 6", "5", "Gee Jun", "any 10"), (9, 5), None, None),
    ("ex.8", ("High 6", "5", "Gee Jun", "11"), (9, 6), None, None),
    ("ex.9", ("High 6", "Low 6", "5", "Gee Jun"), (9, 1), None, None),
    ("ex.10", ("High 6", "5", "Gee Jun", "9"), (9, 4), None, None),
    ("ex.11", ("High 4", "Low 4", "5", "any 6"), (9, 0), None, None),
    ("ex.12", ("High 6", "Low 6", "2 or 12", "any 4"), _ex12, None, None),
    ("ex.12", ("High 6", "Low 6", "2 or 12", "5"), _ex12, None, None),
    ("ex.13", ("High 4", "Low 4", "5", "Gee Jun"), (9, 7), "1-3", None),
    ("ex.14", ("High 8", "Low 8", "High 6", "any 7"), (5, 4), "4-4", None),
    ("ex.15", ("High 8", "Low 8", "High 4", "any 7"), (5, 2), "4-4", None),
    ("ex.16", ("High 8", "Low 8", "High 4", "any 6"), (4, 2), "4-4", None),
    ("ex.17", ("High 10", "Low 10", "High 6", "any 7"), (7, 6), "5-5", None),
    ("ex.18", ("High 4", "High 10", "Low 4", "11"), (5, 4), "1-3", None),
    ("ex.19", ("High 10", "High 8", "Low 8", "9"), (8, 7), None, "4-4"),
]

SECTION_7_CASES = [
    pytest.param(ref, h, exp, hi, lo, id=f"NSW App2 §7 {ref} {' '.join(h)}")
    for ref, classes, exp, hi, lo in SECTION_7
    for h in concrete(*classes)
]


@pytest.mark.parametrize(("ref", "hand", "expected", "on_high", "on_low"), SECTION_7_CASES)
def test_section_7_exception(ref, hand, expected, on_high, on_low) -> None:
    setting, rule = explain_nsw(tiles(*hand))
    want = expected(hand) if callable(expected) else expected
    assert pts(setting) == want
    if on_high:
        assert on_high in hand_tiles(setting.high)
    if on_low:
        assert on_low in hand_tiles(setting.low)
    assert rule.startswith(f"App2 §7 {ref} ")


def test_section_7_covers_every_listed_hand_once() -> None:
    """The data table describes exactly the hands of the list above (no more, no fewer)."""
    listed = {h for _, classes, *_ in SECTION_7 for h in concrete(*classes)}
    assert set(nsw.EXCEPTION_INDEX) == listed
    assert len(listed) == 109


@pytest.mark.parametrize("hand", sorted(nsw.EXCEPTION_INDEX), ids=" ".join)
def test_section_7_hands_have_no_pair_and_no_wong(hand: tuple[str, ...]) -> None:
    """So §7 coming after §1-§5 in the order of rules changes nothing for them."""
    assert not has_ranking_pair(hand)
    for s in all_settings(tiles(*hand)):
        assert s.high.kind is Kind.POINTS and s.low.kind is Kind.POINTS


@pytest.mark.parametrize("hand", sorted(nsw.EXCEPTION_INDEX), ids=" ".join)
def test_section_7_hands_are_real_exceptions(hand: tuple[str, ...]) -> None:
    """General play (§6.1-6.4) alone sets every listed hand differently: each is an exception."""
    h = nsw._Hand4(
        tuple(sorted(tiles(*hand), key=lambda t: (t.single_rank, t.notation))),
        tuple(all_settings(tiles(*hand))),
    )
    general, _ = nsw.rule_general_play(h)
    assert split_of(general) != split_of(house_way_nsw(tiles(*hand)))


def test_section_7_ex9_high_6_nine() -> None:
    """NSW App2 §7 ex.9 "Play 1 and 9": two settings make 9/1; principle 4 names the High 6
    nine (High 6 with Gee Jun), and §6.3 puts the high tile (High 6) on the high hand."""
    for hand in concrete("High 6", "Low 6", "5", "Gee Jun"):
        s = house_way_nsw(tiles(*hand))
        assert "3-3" in hand_tiles(s.high) and s.high.second.is_gee_joon


def test_section_7_ex11_high_4_on_high_hand() -> None:
    """NSW App2 §7 ex.11 "Play 0 and 9": two settings make 9/0; §6.3 (high hand 8 or better:
    the high tile on the high hand) puts High 4 with the 5."""
    for hand in concrete("High 4", "Low 4", "5", "any 6"):
        s = house_way_nsw(tiles(*hand))
        assert "1-3" in hand_tiles(s.high) and s.high.second.notation in T["5"]


def test_section_7_ex12_which_eight() -> None:
    """NSW App2 §7 ex.12: the 8 is Teen/Day with Low 6 (§6.4 keeps the two highest tiles, the
    Teen/Day and High 6, apart), except with High 4 as the fourth tile, where Teen/Day and
    High 4 are apart either way and §6.3 then puts High 6 on the high hand."""
    for hand in concrete("High 6", "Low 6", "2 or 12", "any 4") + concrete(
        "High 6", "Low 6", "2 or 12", "5"
    ):
        high = hand_tiles(house_way_nsw(tiles(*hand)).high)
        partner = "3-3" if "1-3" in hand else "1-5"
        assert partner in high


# -- the §7 principles ("may also be known as using the format outlined below") -------------


def _hand4(hand: Iterable[str]) -> nsw._Hand4:
    ts = tiles(*hand)
    return nsw._Hand4(
        tuple(sorted(ts, key=lambda t: (t.single_rank, t.notation))), tuple(all_settings(ts))
    )


def _by_principles(hand: tuple[str, ...]) -> Setting:
    h = _hand4(hand)
    decided = nsw.rule_principles(h)
    return decided[0] if decided else nsw.rule_general_play(h)[0]


@pytest.mark.parametrize("hand", sorted(nsw.EXCEPTION_INDEX), ids=" ".join)
def test_principles_agree_with_the_list(hand: tuple[str, ...]) -> None:
    """Both formats give the same setting on every listed hand, except ex.3 (High 8, High 10,
    11, any 7), which the text repeats after the principles because none of them covers it."""
    listed = house_way_nsw(tiles(*hand))
    if nsw.EXCEPTION_INDEX[hand].ref == "ex.3":
        assert pts(_by_principles(hand)) == (8, 8)  # the principles alone would play 8/8
        assert pts(listed) == (9, 7)
    else:
        assert split_of(_by_principles(hand)) == split_of(listed)


def test_principles_beyond_the_list() -> None:
    """Outside the list the principles change exactly four hands: High 10, Low 10, Gee Jun
    with 2 or 12 (principle 2: 2 low, make 8 with Teen/Day) = ex.1 with Gee Jun counted as 6."""
    changed = {}
    for key in sorted(DISTINCT):
        h = _hand4(key)
        if any(rule(h) for rule in nsw.RULES[:5]):
            continue
        decided = nsw.rule_principles(h)
        if decided:
            changed[key] = decided
    assert sorted(changed) == concrete("High 10", "Low 10", "Gee Jun", "2 or 12")
    for s, why in changed.values():
        assert pts(s) == (8, 0) and why.startswith("App2 §7 principle 2")


# -- App2 §1 two ranking pairs ---------------------------------------------------------------


def test_section_1_two_pairs_exhaustive() -> None:
    """NSW App2 §1 "When you have two ranking pairs, play the two pairs as two hands" — no split
    line of §3 overrides it (decision: §1 first, see the doc; the §3 table omits "9 and 9")."""
    n = 0
    for hand in ALL_HANDS:
        names = [t.notation for t in hand]
        two = any(
            is_pair(a, b) and is_pair(c, d)
            for (a, b), (c, d) in (
                ((names[0], names[1]), (names[2], names[3])),
                ((names[0], names[2]), (names[1], names[3])),
                ((names[0], names[3]), (names[1], names[2])),
            )
        )
        if two:
            n += 1
            s, rule = explain_nsw(hand)
            assert s.high.kind is Kind.PAIR and s.low.kind is Kind.PAIR
            assert rule == "App2 §1 two ranking pairs"
    assert n > 0


@pytest.mark.parametrize(
    "hand",
    [("6-6", "6-6", "4-4", "4-4"), ("6-6", "6-6", "3-5", "2-6"), ("1-1", "1-1", "1-6", "1-6"),
     ("1-1", "1-1", "3-4", "2-5"), ("6-6", "6-6", "4-5", "3-6"), ("4-5", "3-6", "5-5", "5-5")],
    ids=lambda h: "NSW App2 §1 over §3 " + " ".join(h),
)
def test_section_1_over_section_3(hand: tuple[str, ...]) -> None:
    """Teen/Day pair with "8 and 8"/"7 and 7" that are themselves a pair stays two pairs."""
    s = house_way_nsw(tiles(*hand))
    assert s.high.kind is Kind.PAIR and s.low.kind is Kind.PAIR


# -- App2 §2 never split ---------------------------------------------------------------------

NEVER = {"High 4": "1-3", "High 10": "5-5", "High 6": "3-3", "Low 4": "2-2", "11": "5-6",
         "Low 10": "4-6", "Low 6": "1-5", "mixed fives": "1-4"}


@pytest.mark.parametrize("name", NEVER, ids=lambda n: f"NSW App2 §2 never split {n}")
def test_section_2_never_split_exhaustive(name: str) -> None:
    rank = BY_NOTATION[NEVER[name]].pair_rank
    seen = 0
    for hand in DISTINCT.values():
        if sum(t.pair_rank == rank for t in hand) == 2:
            seen += 1
            s = house_way_nsw(hand)
            assert rank in (s.high.ranking if s.high.kind is Kind.PAIR else 0,
                            s.low.ranking if s.low.kind is Kind.PAIR else 0)
    assert seen > 0


# -- App2 §3 split table, line by line --------------------------------------------------------

SECTION_3_TEXT = [
    # (pair tiles, "with" text exactly as printed, split into its lines)
    (["1-2", "2-4"], "High 6 and 6, 5, 4"),
    (["6-6", "6-6"], "9 and 8, 7, 6, 5, 4; 8 and 8, 7, 6, 5, 4; 7 and 7, 6, 5, 4"),
    (["1-1", "1-1"], "9 and 8, 7, 6, 5, 4; 8 and 8, 7, 6, 5, 4; 7 and 7, 6, 5, 4"),
    (["4-5", "3-6"], "Teen and Day; Teen/Day and 10; 10 and 10"),
    (["4-4", "4-4"], "Teen and Day; Teen/Day and 11, 10; 10 and 11, 10; 10 and 10; 11 and 9"),
    (["3-5", "2-6"], "Teen and Day; Teen/Day and 11, 10; 10 and 11, 10; 10 and 10; 11 and 9"),
    (["1-6", "1-6"], "Teen and Day; Teen/Day and 11, 10"),
    (["3-4", "2-5"], "Teen and Day; Teen/Day and 11, 10"),
]


def _section_3_lines() -> list[tuple[list[str], str, str]]:
    out = []
    for pair, text in SECTION_3_TEXT:
        for line in text.split("; "):
            first, rest = line.split(" and ")
            out += [(pair, first, other) for other in rest.split(", ")]
    return out


def _split_hands(pair: list[str], a: str, b: str) -> list[tuple[str, ...]]:
    """Hands of the pair with one tile of class a and one of class b, other than two pairs or
    a never-split pair (which §1 and §2 decide first)."""
    out = set()
    for x, y in itertools.product(T[a], T[b]):
        hand = tuple(sorted([*pair, x, y]))
        if any(hand.count(n) > BY_NOTATION[n].copies for n in hand) or is_pair(x, y):
            continue
        out.add(hand)
    return sorted(out)


SECTION_3_CASES = [
    pytest.param(pair, hand, id=f"NSW App2 §3 split {'-'.join(pair)} with {a} and {b}: "
                 + " ".join(hand))
    for pair, a, b in _section_3_lines()
    for hand in _split_hands(pair, a, b)
]


@pytest.mark.parametrize(("pair", "hand"), SECTION_3_CASES)
def test_section_3_split(pair: list[str], hand: tuple[str, ...]) -> None:
    s, rule = explain_nsw(tiles(*hand))
    assert s.high.kind is not Kind.PAIR and s.low.kind is not Kind.PAIR
    # one tile of the pair in each hand
    assert sorted([hand_tiles(s.high), hand_tiles(s.low)]) != sorted([sorted(pair), []])
    assert sum(n in pair for n in hand_tiles(s.high)) == 1
    assert sum(n in pair for n in hand_tiles(s.low)) == 1
    assert rule.startswith("App2 §3 split")


def test_section_3_every_line_has_a_hand() -> None:
    for pair, a, b in _section_3_lines():
        assert _split_hands(pair, a, b), (pair, a, b)


def test_section_3_values() -> None:
    """Spot checks of what a split makes (derived by hand from the tiles)."""
    cases = {
        ("6-6", "6-6", "4-5", "2-6"): ((Kind.WONG, 17), (Kind.GONG, 19)),
        ("1-2", "2-4", "3-3", "1-5"): ((Kind.POINTS, 9), (Kind.POINTS, 9)),
        ("4-4", "4-4", "5-6", "3-6"): ((Kind.POINTS, 9), (Kind.POINTS, 7)),
        ("4-5", "3-6", "6-6", "1-1"): ((Kind.WONG, 17), (Kind.WONG, 18)),
        ("3-4", "2-5", "1-1", "5-6"): ((Kind.HIGH_NINE, 22), (Kind.POINTS, 8)),
    }
    for hand, ((k1, v1), (k2, v2)) in cases.items():
        s = house_way_nsw(tiles(*hand))
        assert s.high.kind is k1 and (s.high.ranking if k1 is not Kind.POINTS else
                                      s.high.points) == v1
        assert s.low.kind is k2 and (s.low.ranking if k2 is not Kind.POINTS else
                                     s.low.points) == v2


def test_section_3_pairs_not_listed_are_kept_exhaustive() -> None:
    """A pair is split only on a line of §3; any other pair is kept (it is a "higher play")."""
    listed = {tuple(h) for _, h in ((p.values[0], p.values[1]) for p in SECTION_3_CASES)}
    for names, hand in DISTINCT.items():
        pairs = [(a, b) for a, b in itertools.combinations(range(4), 2)
                 if is_pair(names[a], names[b])]
        if len(pairs) != 1:
            continue
        s = house_way_nsw(hand)
        kept = s.high.kind is Kind.PAIR
        assert kept == (names not in listed), names


def test_teen_pair_with_nine_and_gee_jun_is_kept() -> None:
    """Decision: "6" in §3 is High 6 / Low 6 only, as in §7 (see the doc). Teen pair, 9 and Gee
    Jun is on no line, so the Teen pair is kept."""
    s = house_way_nsw(tiles("6-6", "6-6", "4-5", "2-4"))
    assert s.high.kind is Kind.PAIR and hand_tiles(s.high) == ["6-6", "6-6"]


# -- App2 §4-5 Wongs, Gongs and High Nines ------------------------------------------------------


def test_section_4_1_wong_class_played_exhaustive() -> None:
    """§4.1 "If no other higher play is possible, always play Wong, Gong or High Nine"."""
    for names, hand in DISTINCT.items():
        if has_ranking_pair(names):
            continue
        if any(h.kind in WONG_KINDS for s in all_settings(hand) for h in (s.high, s.low)):
            s, rule = explain_nsw(hand)
            assert s.high.kind in WONG_KINDS, names
            assert rule.startswith(("App2 §4", "App2 §5"))


@pytest.mark.parametrize(
    ("hand", "high", "rule"),
    [
        # §4.1 even at the expense of the low hand: Wong/0 rather than 9/2
        (("6-6", "4-5", "5-5", "4-6"), ["4-5", "6-6"], "§4.1"),
        # §4.2 Gong rather than Wong (Teen, 9, 8, Low 6): Gong/5 not Wong/4
        (("6-6", "4-5", "3-5", "1-5"), ["3-5", "6-6"], "§4.2"),
        # §4.2 High Nine rather than Wong
        (("6-6", "3-6", "1-6", "5-5"), ["1-6", "6-6"], "§4.2"),
        # §4.2 High Nine rather than Gong
        (("1-1", "4-4", "2-5", "1-5"), ["1-1", "2-5"], "§4.2"),
        # §4.2 with all three on offer: High Nine
        (("6-6", "4-5", "4-4", "3-4"), ["3-4", "6-6"], "§4.2"),
        # §5.1 fourth tile four: Gong over High Nine, for both fours
        (("6-6", "2-6", "1-6", "1-3"), ["2-6", "6-6"], "§5.1"),
        (("6-6", "2-6", "1-6", "2-2"), ["2-6", "6-6"], "§5.1"),
        (("1-1", "4-4", "3-4", "2-2"), ["1-1", "4-4"], "§5.1"),
        # §5.2 fourth tile eleven: Wong over Gong and over High Nine
        (("6-6", "4-5", "3-5", "5-6"), ["4-5", "6-6"], "§5.2"),
        (("1-1", "3-6", "2-5", "5-6"), ["1-1", "3-6"], "§5.2"),
        # no Wong on offer: §5.2 does not apply, §4.2 High Nine
        (("6-6", "3-5", "1-6", "5-6"), ["1-6", "6-6"], "§4.2"),
        # §4.3 Teen and Day: the Teen on the high hand
        (("6-6", "1-1", "4-5", "1-5"), ["4-5", "6-6"], "§4.3"),
        (("6-6", "1-1", "4-5", "3-5"), ["4-5", "6-6"], "§4.3"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else None,
)
def test_section_4_and_5(hand: tuple[str, ...], high: list[str], rule: str) -> None:
    s, why = explain_nsw(tiles(*hand))
    assert hand_tiles(s.high) == high
    assert rule in why


# -- App2 §6 general play -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hand", "high", "rule"),
    [
        # §6.1: 9/8 rather than 7/7 — closer, but both hands can be set higher ("unless")
        (("1-1", "1-2", "1-3", "1-4"), ["1-3", "1-4"], "§6.1"),
        # §6.2: 7/6 twice; high hand 7: the high tile (Teen) on the low hand
        (("6-6", "1-1", "1-3", "1-4"), ["1-1", "1-4"], "§6.2"),
        # §6.3: 8/6 twice; high hand 8: the high tile (Teen) on the high hand
        (("6-6", "1-1", "1-2", "1-3"), ["1-2", "6-6"], "§6.3"),
        # §6.4: 9/8 twice, Day low either way: Day and High 6 (the two highest) apart
        (("1-1", "1-2", "1-5", "3-3"), ["1-2", "3-3"], "§6.4"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else None,
)
def test_section_6(hand: tuple[str, ...], high: list[str], rule: str) -> None:
    s, why = explain_nsw(tiles(*hand))
    assert hand_tiles(s.high) == high
    assert rule in why


def test_section_6_1_closest_exhaustive() -> None:
    """Where general play decides, no setting has a higher low hand, nor a higher high hand with
    the same low hand, in points."""
    for hand in DISTINCT.values():
        s, rule = explain_nsw(hand)
        if not rule.startswith("App2 §6"):
            continue
        best = max((o.low.points, o.high.points) for o in all_settings(hand))
        assert (s.low.points, s.high.points) == best


# -- every hand ---------------------------------------------------------------------------------


def test_exhaustive_legal_and_cited() -> None:
    assert len(ALL_HANDS) == 35960
    for hand in ALL_HANDS:
        s, rule = explain_nsw(hand)
        assert s.is_valid and s.high.key >= s.low.key
        assert s in all_settings(hand)
        assert sorted(t.notation for t in s.tiles) == sorted(t.notation for t in hand)
        assert rule.startswith("App2 §")


def test_exhaustive_partner_swap() -> None:
    """Swapping a mixed-pair tile for its partner (same single rank; Gee Jun tiles both count 3
    or 6, the others have equal pips) sets the hand the same way, partner for partner."""
    partner = {"4-5": "3-6", "3-5": "2-6", "3-4": "2-5", "1-4": "2-3", "1-2": "2-4"}
    partner |= {b: a for a, b in partner.items()}
    for hand in DISTINCT.values():
        names = [t.notation for t in hand]
        for i, n in enumerate(names):
            if n not in partner or partner[n] in names:
                continue
            swapped = [*names[:i], partner[n], *names[i + 1:]]
            s1, r1 = explain_nsw(hand)
            s2, r2 = explain_nsw(tiles(*swapped))
            mapped = [sorted(partner[x] if x == n else x for x in side) for side in split_of(s1)]
            assert [hand_tiles(s2.high), hand_tiles(s2.low)] == mapped
            assert pts(s1) == pts(s2) and r1 == r2


def test_bad_input() -> None:
    with pytest.raises(InputError):
        house_way_nsw(parse_tiles(["6-6", "1-1", "4-5"]))
    with pytest.raises(InputError):
        house_way_nsw([BY_NOTATION["4-5"]] * 2 + [BY_NOTATION["1-1"]] * 2)


@settings(max_examples=300, deadline=None)
@given(st.permutations(range(32)).map(lambda p: p[:4]), st.permutations(range(4)))
def test_permutation_invariance(idx: list[int], order: list[int]) -> None:
    hand = [FULL_SET[i] for i in idx]
    s1, r1 = explain_nsw(hand)
    s2, r2 = explain_nsw([hand[i] for i in order])
    assert canonical(s1) == canonical(s2) and r1 == r2


@settings(max_examples=300, deadline=None)
@given(st.permutations(range(32)).map(lambda p: p[:4]))
def test_no_other_setting_dominates_on_both_hands(idx: list[int]) -> None:
    """Never a setting whose two hands both lose to another setting's (by key), except where the
    text itself accepts that: a kept or split pair (§1-3) and the Wong-class rules (§4-5)."""
    hand = [FULL_SET[i] for i in idx]
    s, rule = explain_nsw(hand)
    if rule.startswith(("App2 §6", "App2 §7")):
        for o in all_settings(hand):
            assert not (o.high.key > s.high.key and o.low.key > s.low.key)


def test_make_hand_order_of_a_mixed_pair() -> None:
    """make_hand does not depend on the order of its tiles, even for a mixed pair."""
    a, b = BY_NOTATION["4-5"], BY_NOTATION["3-6"]
    assert make_hand(a, b) == make_hand(b, a)
