"""NZ Appendix 4 "House Way": every rule, every line of the 2.3 split table, every exception; the
way the dealer sets a hand where the rules call for it (NZ 10.4, 12.8, 12.14, 12.16).

Expected settings are derived here from the appendix text (tiles named by their pips, as the text
names them), not from houseway_nz's own tables, so a wrong table entry or rule order fails.
The exhaustive tests run over all 35,960 four-tile hands of `itertools.combinations(FULL_SET, 4)`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.games.paigow.hands import Kind, TwoTileHand, make_hand
from controller.games.paigow.houseway.nz import RULES, SPLIT_TABLE, explain_nz, house_way_nz
from controller.games.paigow.settings import Setting, all_settings, ordered
from controller.games.paigow.tiles import FULL_SET, TILES, Tile, check_available, parse_tile
from shared.errors import InputError

P = "NZ App4"
TEEN, DAY, LOW_10 = parse_tile("6-6"), parse_tile("1-1"), parse_tile("4-6")
WONG_CLASS = (Kind.WONG, Kind.GONG, Kind.HIGH_NINE)


def tiles_of(text: str) -> tuple[Tile, ...]:
    return tuple(parse_tile(t) for t in text.split())


def form(s: Setting) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A setting as sorted notations per hand (independent of tile order inside a hand)."""
    return (
        tuple(sorted(t.notation for t in s.high.tiles)),
        tuple(sorted(t.notation for t in s.low.tiles)),
    )


def expect(high: str, low: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(sorted(high.split())), tuple(sorted(low.split()))  # type: ignore[return-value]


def same_hand(a: TwoTileHand, b: TwoTileHand) -> bool:
    return sorted(t.notation for t in a.tiles) == sorted(t.notation for t in b.tiles)


# --------------------------------------------------------------------------------------------
# The appendix's vocabulary, read from the text


# "9", "8", ... name tiles by pips. Gee Jun is named by name in the text, never by a number.
def numbered(n: int) -> list[Tile]:
    return [t for t in TILES if t.pips == n and not t.is_gee_joon]


NAMED: dict[str, list[Tile]] = {str(n): numbered(n) for n in (4, 5, 6, 7, 8, 9, 10, 11)}
NAMED.update({"Teen": [TEEN], "Day": [DAY], "Teen/Day": [TEEN, DAY]})


def is_pair(a: Tile, b: Tile) -> bool:
    return make_hand(a, b).kind is Kind.PAIR


def pairs_named(group: str) -> list[tuple[Tile, Tile]]:
    """The pairs a group name of App4 2.2/2.3 covers ("Eights" = High 8 pair and low 8 pair)."""
    if group == "Gee Jun":
        return [(parse_tile("1-2"), parse_tile("2-4"))]
    if group == "Teen or Day":
        return [(TEEN, TEEN), (DAY, DAY)]
    pips = {
        "Fours": 4,
        "Fives": 5,
        "Sixes": 6,
        "Sevens": 7,
        "Eights": 8,
        "Nines": 9,
        "Tens": 10,
        "Elevens": 11,
    }[group]
    tiles = numbered(pips)
    return [
        (a, b)
        for a, b in itertools.combinations_with_replacement(tiles, 2)
        if is_pair(a, b) and (a != b or a.copies == 2)
    ]


# App4 2.3 as printed.
SPLIT_TABLE_TEXT = """
Gee Jun | 6 and 6 (non-pairing) | 6 and 5 | 6 and 4
Teen or Day | 9 and 11 | 9 and 8 | 9 and 7 | 9 and 6 | 9 and 5 | 9 and 4 | 8 and 8 (non-pairing)
Teen or Day | 8 and 7 | 8 and 6 | 8 and 5 | 8 and 4 | 7 and 7 (non-pairing) | 7 and 6 | 7 and 5
Teen or Day | 7 and 4 | 6 and 6 (non-pairing) | 6 and 5 | 6 and 4
Nines | Teen and Day | Teen/Day and 10 | 10 and 10 (non-pairing)
Eights | Teen and Day | Teen/Day and 11 | Teen/Day and 10 | 11 and 10 | 11 and 9
Eights | 10 and 10 (non-pairing)
Sevens | Teen and Day | Teen/Day and 11 | Teen/Day and 10 | 11 and 10 | 10 and 10 (non-pairing)
"""
SPLIT_LINES: list[tuple[str, str]] = [
    (group.strip(), line.strip())
    for row in SPLIT_TABLE_TEXT.strip().splitlines()
    for group, *lines in [row.split("|")]
    for line in lines
]
NEVER_SPLIT = ["Fours", "Fives", "Sixes", "Tens", "Elevens"]


def split_instances(group: str, line: str) -> Iterator[tuple[Tile, ...]]:
    """Every hand the line describes: a pair of the group with an `a` and a `b` tile."""
    a, b = line.split(" (")[0].split(" and ")
    seen = set()
    for p1, p2 in pairs_named(group):
        for x in NAMED[a]:
            for y in NAMED[b]:
                hand = (p1, p2, x, y)
                key = tuple(sorted(t.notation for t in hand))
                if is_pair(x, y) or key in seen:
                    continue  # "(non-pairing)"; two pairs are App4 2.1's
                try:
                    check_available(hand)
                except InputError:
                    continue  # e.g. a third Teen
                seen.add(key)
                yield hand


def holds(hand: Sequence[Tile], *tiles: Tile) -> bool:
    rest = list(hand)
    for t in tiles:
        if t not in rest:
            return False
        rest.remove(t)
    return True


def listed_split(hand: Sequence[Tile]) -> tuple[Tile, Tile] | None:
    """The pair App4 2.3 splits in this single-pair hand, if a line lists it."""
    for group, line in SPLIT_LINES:
        a, b = line.split(" (")[0].split(" and ")
        for p1, p2 in pairs_named(group):
            rest = list(hand)
            if p1 not in rest:
                continue
            rest.remove(p1)
            if p2 not in rest:
                continue
            rest.remove(p2)
            x, y = rest
            if is_pair(x, y):
                continue
            if (x in NAMED[a] and y in NAMED[b]) or (x in NAMED[b] and y in NAMED[a]):
                return p1, p2
    return None


# App4 1: "Harmony 3" = 3 points whose higher-ranking tile is a High 4; the only such hand is
# High 4 with a nine (1-3 + 4-5 or 3-6). "Harmony 3 or better" ranks at least as high.
HARMONY_3 = make_hand(parse_tile("1-3"), parse_tile("4-5"))


def harmony_3_or_better(h: TwoTileHand) -> bool:
    return h.key >= HARMONY_3.key


# --------------------------------------------------------------------------------------------
# Exhaustive results (computed once)

ALL_HANDS: list[tuple[Tile, ...]] = list(itertools.combinations(FULL_SET, 4))


@cache
def results() -> list[tuple[tuple[Tile, ...], Setting, str, list[Setting]]]:
    out = []
    for hand in ALL_HANDS:
        s, why = explain_nz(hand)
        out.append((hand, s, why, all_settings(hand)))
    return out


def pair_ranks(hand: Sequence[Tile]) -> list[int]:
    return [r for r in {t.pair_rank for t in hand} if sum(t.pair_rank == r for t in hand) == 2]


def is_general(hand: Sequence[Tile], alts: list[Setting]) -> bool:
    """No pair and no Wong, Gong or High Nine: App4 4-6 decide."""
    return not pair_ranks(hand) and not any(s.high.kind in WONG_CLASS for s in alts)


def is_6_1_hand(hand: Sequence[Tile]) -> bool:
    """App4 6.1: a 6, a 7, an 11 and any tile pairing with none of them."""
    return not pair_ranks(hand) and all(any(t in NAMED[n] for t in hand) for n in ("6", "7", "11"))


# --------------------------------------------------------------------------------------------
# API and legality


def test_exhaustive_every_hand_gets_one_of_its_legal_settings() -> None:
    """The result is one of all_settings(tiles) (the very object) and legal: high key >= low."""
    for hand, s, why, alts in results():
        assert s.is_valid, (hand, s)
        assert s in alts, (hand, s)
        assert sorted(t.notation for t in s.tiles) == sorted(t.notation for t in hand)
        assert why.startswith(P), why


@pytest.mark.parametrize("hand", ["6-6 6-6 4-4 3-5", "5-5 4-6 3-3 2-2", "4-5 3-6 3-5 2-6"])
def test_every_input_order_gets_a_setting_of_all_settings(hand: str) -> None:
    """Hands whose chosen hands may rank equal: all 24 input orders give an object of
    all_settings(tiles) with the same two hands."""
    tiles = tiles_of(hand)
    first = explain_nz(tiles)
    for perm in itertools.permutations(tiles):
        s, why = explain_nz(perm)
        assert s in all_settings(perm) and why == first[1]
        assert sorted(form(s)) == sorted(form(first[0]))


def test_order_of_application_and_split_table_data_match_the_doc_and_the_text() -> None:
    """The documented order (docs/paigow-house-way-nz.md) and the 2.3 lines as printed."""
    assert [r for r, _ in RULES] == ["2.1", "2.3", "2.2", "3.1-3.3", "4-6"]
    assert [(ln.group, ln.text) for ln in SPLIT_TABLE] == SPLIT_LINES


def test_house_way_and_explain_agree_and_reject_bad_input() -> None:
    hand = tiles_of("6-6 6-6 4-5 4-4")
    assert house_way_nz(hand) == explain_nz(hand)[0]
    with pytest.raises(InputError):
        house_way_nz(tiles_of("6-6 6-6 4-5"))
    with pytest.raises(InputError):
        house_way_nz(tiles_of("6-6 6-6 6-6 4-4"))


# --------------------------------------------------------------------------------------------
# App4 1 Interpretation: Harmony 3


@pytest.mark.parametrize(
    ("low", "better"),
    [
        ("1-3 4-5", True),  # Harmony 3 itself: 4 + 9 = 13 -> 3, High 4 higher
        ("1-3 3-6", True),  # the other nine
        ("6-6 5-6", True),  # 23 -> 3 with a Teen: same points, higher tile
        ("1-1 5-6", True),  # 13 -> 3 with a Day
        ("4-4 1-4", True),  # 13 -> 3 with a High 8
        ("2-2 4-5", False),  # 13 -> 3 with a Low 4: lower tile
        ("3-3 3-4", False),  # 13 -> 3 with a High 6
        ("1-3 1-6", False),  # 11 -> 1
        ("1-3 5-5", True),  # 14 -> 4: more points
        ("5-6 1-2", True),  # Gee Jun as 6: 17 -> 7
        ("5-5 4-6", False),  # 20 -> 0
        ("6-6 4-4", True),  # Teen Gong: ranked, though 20 -> 0 points
    ],
    ids=lambda v: str(v),
)
def test_app4_1_harmony_3_or_better(low: str, better: bool) -> None:
    """NZ App4 1: Harmony 3 = 3 points, higher tile High 4; "or better" by the NZ 4.1-4.3
    ranking (a ranked hand, more points, or 3 points with a higher-ranking top tile)."""
    assert harmony_3_or_better(make_hand(*tiles_of(low))) is better
    assert harmony_3_or_better(HARMONY_3)


def test_app4_1_harmony_3_is_exactly_high_4_with_a_nine() -> None:
    """NZ App4 1: the hands of 3 points whose higher-ranking tile is a High 4."""
    found = {
        tuple(sorted((a.notation, b.notation)))
        for a, b in itertools.combinations_with_replacement(TILES, 2)
        if (h := make_hand(a, b)).kind is Kind.POINTS
        and h.points == 3
        and h.first.notation == "1-3"
    }
    assert found == {("1-3", "4-5"), ("1-3", "3-6")}


# --------------------------------------------------------------------------------------------
# App4 2 Pairs


def test_app4_2_1_example_two_pairs() -> None:
    """NZ App4 2.1: Teen pair and nines (mixed pair) are played as two pairs."""
    s, why = explain_nz(tiles_of("6-6 6-6 4-5 3-6"))
    assert form(s) == expect("6-6 6-6", "4-5 3-6")
    assert why == f"{P} 2.1 two pairs"


def test_app4_2_1_exhaustive_two_ranking_pairs_are_two_hands() -> None:
    """NZ App4 2.1 holds universally: the 2.3 lines that could clash all say "(non-pairing)"."""
    n = 0
    for hand, s, _, _ in results():
        if len(pair_ranks(hand)) == 2:
            n += 1
            assert s.high.kind is Kind.PAIR and s.low.kind is Kind.PAIR, (hand, s)
    assert n > 0


@pytest.mark.parametrize("group", NEVER_SPLIT, ids=[f"NZ App4 2.2 {g}" for g in NEVER_SPLIT])
def test_app4_2_2_never_split(group: str) -> None:
    """NZ App4 2.2: every hand holding this pair plays it as one hand, whatever else it holds."""
    pairs = pairs_named(group)
    assert pairs
    n = 0
    for hand, s, why, _ in results():
        for p1, p2 in pairs:
            if not holds(hand, p1, p2):
                continue
            n += 1
            assert any(same_hand(h, make_hand(p1, p2)) for h in (s.high, s.low)), (hand, s)
            if len(pair_ranks(hand)) == 1:
                assert why == f"{P} 2.2 never split {group}"
    assert n > 0


@pytest.mark.parametrize(
    ("group", "line"), SPLIT_LINES, ids=[f"NZ App4 2.3 {g} with {ln}" for g, ln in SPLIT_LINES]
)
def test_app4_2_3_split_table_line(group: str, line: str) -> None:
    """NZ App4 2.3: each hand this line describes is split, one pair tile in each hand."""
    hands = list(split_instances(group, line))
    assert hands, "the line describes no hand"
    for hand in hands:
        p1, p2, x, y = hand
        s, why = explain_nz(hand)
        assert why == f"{P} 2.3 split {group} with {line}", (hand, why)
        # The only splits: p1 with x and p2 with y, or p1 with y and p2 with x (equal for a
        # mixed pair); high and low then follow from strength.
        splits = {
            form(ordered(make_hand(p1, x), make_hand(p2, y))),
            form(ordered(make_hand(p1, y), make_hand(p2, x))),
        }
        assert form(s) in splits, (hand, s)
        assert s.high.kind is not Kind.PAIR and s.low.kind is not Kind.PAIR


@pytest.mark.parametrize(
    ("hand", "high", "low"),
    [
        ("6-6 6-6 4-5 4-4", "6-6 4-5", "6-6 4-4"),  # Teen Wong / Teen Gong
        ("6-6 6-6 3-6 5-6", "6-6 3-6", "6-6 5-6"),  # Teen Wong / 3 points with Teen
        ("1-1 1-1 1-6 1-3", "1-1 1-6", "1-1 1-3"),  # Day High Nine / 6 points
        ("1-2 2-4 3-3 1-4", "3-3 2-4", "1-2 1-4"),  # 9 / 8 (Gee Jun as 3)
        ("4-5 3-6 6-6 1-1", "6-6 4-5", "1-1 3-6"),  # Teen Wong / Day Wong
        ("4-4 4-4 5-6 5-5", "4-4 5-6", "4-4 5-5"),  # 9 / 8
        ("1-6 1-6 6-6 4-6", "6-6 1-6", "1-6 4-6"),  # Teen High Nine / 7
    ],
    ids=lambda v: str(v),
)
def test_app4_2_3_worked_splits(hand: str, high: str, low: str) -> None:
    """NZ App4 2.3: the documented worked examples of the split table."""
    s, why = explain_nz(tiles_of(hand))
    assert why.startswith(f"{P} 2.3 split")
    assert form(s) in {expect(high, low)} | _mixed_swaps(expect(high, low))


def _mixed_swaps(f: tuple[tuple[str, ...], tuple[str, ...]]) -> set[tuple[tuple[str, ...], ...]]:
    # A split mixed pair may put either of its tiles with either partner: equal hands.
    swaps = {
        "4-5": "3-6",
        "3-6": "4-5",
        "1-2": "2-4",
        "2-4": "1-2",
        "3-5": "2-6",
        "2-6": "3-5",
        "3-4": "2-5",
        "2-5": "3-4",
    }
    out = set()
    for a in {t for hand in f for t in hand if t in swaps}:
        b = swaps[a]
        if any(b in hand for hand in f):
            out.add(
                tuple(
                    tuple(sorted(b if t == a else a if t == b else t for t in hand)) for hand in f
                )
            )
    return out  # type: ignore[return-value]


def test_app4_2_3_exhaustive_single_pair_is_split_exactly_when_listed() -> None:
    """NZ App4 2.2-2.3: a lone pair is split iff a 2.3 line lists its other two tiles."""
    n_split = 0
    for hand, s, why, _ in results():
        if len(pair_ranks(hand)) != 1:
            continue
        listed = listed_split(hand)
        kept = s.high.kind is Kind.PAIR
        assert kept == (listed is None), (hand, s, why)
        if listed is not None:
            n_split += 1
            p1, p2 = listed
            assert (p1 in s.high.tiles) != (p2 in s.high.tiles) or p1 == p2
            assert p1 in s.high.tiles or p1 in s.low.tiles
            assert not (same_hand(s.high, make_hand(p1, p2)))
        else:
            assert s.high.kind is Kind.PAIR and s.high.ranking == min(
                t.pair_rank for t in hand if t.pair_rank in pair_ranks(hand)
            )
    assert n_split > 0


def test_app4_2_3_gee_jun_is_not_a_numbered_tile() -> None:
    """Resolved ambiguity: Gee Jun 2-4 is not "a 6" in the table; the Teen pair stays together."""
    s, why = explain_nz(tiles_of("6-6 6-6 4-5 2-4"))
    assert form(s) == expect("6-6 6-6", "4-5 2-4")
    assert why == f"{P} 2.3 Teen or Day pair not listed with these tiles: keep"


# --------------------------------------------------------------------------------------------
# App4 3 Wongs, Gongs and High Nines


def test_app4_3_1_exhaustive_no_pair_plays_a_wong_class_hand_when_possible() -> None:
    """NZ App4 3.1: no pair, and a Wong/Gong/High Nine can be made: it is played (high hand)."""
    n = 0
    for hand, s, _, alts in results():
        if not pair_ranks(hand) and any(a.high.kind in WONG_CLASS for a in alts):
            n += 1
            assert s.high.kind in WONG_CLASS, (hand, s)
    assert n > 0


def test_app4_3_2_and_3_3_exhaustive_order_of_kinds() -> None:
    """NZ App4 3.2: High Nine, Gong, Wong, the first with a Harmony 3+ low; else 3.3: Wong,
    Gong, High Nine in that order."""
    for hand, s, why, alts in results():
        if pair_ranks(hand):
            continue
        wongs = [a for a in alts if a.high.kind in WONG_CLASS]
        if not wongs:
            continue
        with_h3 = [
            k
            for k in (Kind.HIGH_NINE, Kind.GONG, Kind.WONG)
            if any(a.high.kind is k and harmony_3_or_better(a.low) for a in wongs)
        ]
        if with_h3:
            assert s.high.kind is with_h3[0], (hand, s)
            assert harmony_3_or_better(s.low)
            assert f"{P} 3.2" in why
        else:
            first = next(
                k
                for k in (Kind.WONG, Kind.GONG, Kind.HIGH_NINE)
                if any(a.high.kind is k for a in wongs)
            )
            assert s.high.kind is first, (hand, s)
            assert f"{P} 3.3" in why


@pytest.mark.parametrize(
    ("hand", "high", "low", "rule"),
    [
        # High Nine before Wong though both leave a Harmony 3+ low (9 and 7 points).
        ("6-6 1-6 4-5 5-5", "6-6 1-6", "4-5 5-5", "3.2 High Nine"),
        # Teen+7 would be out-ranked by Day Gong, so no High Nine high hand: Gong, 5.4 Teen high.
        ("6-6 1-1 4-4 1-6", "6-6 4-4", "1-1 1-6", "3.2 Gong"),
        # Exactly Harmony 3 (High 4 + nine) left by the Gong: 3.2 plays the Gong.
        ("6-6 4-5 4-4 1-3", "6-6 4-4", "4-5 1-3", "3.2 Gong"),
        # Same with a Low 4: 3 points below Harmony 3, Wong 2 points low: 3.3 plays the Wong.
        ("6-6 4-5 4-4 2-2", "6-6 4-5", "4-4 2-2", "3.3 Wong"),
        # Only a High Nine, no Harmony 3 low anywhere among them: 3.3 still plays it.
        ("6-6 1-3 3-3 1-6", "6-6 1-6", "1-3 3-3", "3.3 High Nine"),
    ],
    ids=lambda v: str(v),
)
def test_app4_3_examples(hand: str, high: str, low: str, rule: str) -> None:
    """NZ App4 3.1-3.3 worked examples."""
    s, why = explain_nz(tiles_of(hand))
    assert form(s) == expect(high, low)
    assert f"{P} {rule}" in why


# --------------------------------------------------------------------------------------------
# App4 4 General rules (with the 6 exceptions)


def test_app4_4_exhaustive_point_counts() -> None:
    """NZ App4 4.1-4.3 (6.1, 6.2 as exceptions) for every hand without a pair or Wong class."""
    counts = {"4.1": 0, "4.2": 0, "4.3": 0, "6.1": 0, "6.2": 0}
    for hand, s, _, alts in results():
        if not is_general(hand, alts):
            continue
        h3 = [a for a in alts if harmony_3_or_better(a.low)]
        if is_6_1_hand(hand):
            counts["6.1"] += 1
            assert s.low.points == max(a.low.points for a in alts), (hand, s)
        elif h3:
            best = max(a.low.points for a in h3)
            chosen = {(a.low.points, a.high.points) for a in h3 if a.low.points == best}
            sevens = [a for a in h3 if (a.low.points, a.high.points) == (7, 9)]
            if chosen == {(8, 8)} and sevens and LOW_10 not in hand:
                counts["6.2"] += 1
                assert (s.low.points, s.high.points) == (7, 9), (hand, s)
            else:
                counts["4.1"] += 1
                assert harmony_3_or_better(s.low) and s.low.points == best, (hand, s)
        elif any(a.high.points >= 8 for a in alts):
            counts["4.2"] += 1
            assert s.high.points == max(a.high.points for a in alts), (hand, s)
        else:
            counts["4.3"] += 1
            assert s.low.points == max(a.low.points for a in alts), (hand, s)
    assert all(counts.values()), counts


@pytest.mark.parametrize(
    ("hand", "high", "low", "rule"),
    [
        # 4.1: lows 3 (Low 6 higher: below Harmony 3), 4 and 5: play 6 / 5.
        ("4-4 5-5 1-5 2-5", "5-5 1-5", "4-4 2-5", "4.1"),
        # 4.2: no Harmony 3 low; 8 / 0 (Teen + High 6) beats 6 / 2.
        ("6-6 3-3 5-5 4-6", "6-6 3-3", "5-5 4-6", "4.2"),
        # 4.3: no Harmony 3 low, no 8+ high: lows 2, 1, 0 -> 3 / 2.
        ("4-4 3-3 1-6 1-3", "3-3 1-6", "4-4 1-3", "4.3"),
    ],
    ids=lambda v: str(v),
)
def test_app4_4_examples(hand: str, high: str, low: str, rule: str) -> None:
    """NZ App4 4.1-4.3 worked examples."""
    s, why = explain_nz(tiles_of(hand))
    assert form(s) == expect(high, low)
    assert f"{P} {rule}" in why


# --------------------------------------------------------------------------------------------
# App4 5 High ranking tiles


@pytest.mark.parametrize(
    ("hand", "high", "low", "rule"),
    [
        # 5.1: low 4 either way (High 8 + Gee Jun or Low 8 + Gee Jun): High 8 to the low.
        ("4-4 3-5 3-4 1-2", "3-5 3-4", "4-4 1-2", "5.1 highest tile in low"),
        # 5.1: Teen can't go low (6/4 both ways); keep Teen and High 4 apart.
        ("6-6 1-3 5-5 2-2", "6-6 2-2", "1-3 5-5", "5.1 2 highest tiles apart"),
        # 5.1 (resolved reading): High 8 + High 4 together in the low, or apart: apart.
        ("4-4 3-3 1-3 3-5", "4-4 3-3", "1-3 3-5", "5.1 2 highest tiles apart"),
        # 5.2: 9 / 8 either way; the High 10 (highest) goes in the high hand.
        ("5-5 4-6 4-5 3-5", "5-5 4-5", "4-6 3-5", "5.2 highest tile in high"),
        # 5.3: 4.2 seeks the high: 9 / 0 either way; the High 4 strengthens the high hand.
        ("1-3 3-3 2-2 1-4", "1-3 1-4", "3-3 2-2", "5.3 highest tile in high"),
        # 5.4: 8 / 6 either way: Teen in the high hand.
        ("6-6 1-1 1-3 3-3", "6-6 3-3", "1-1 1-3", "5.4 Teen in high"),
        # 5.4 before 5.1: low 7 (5.1 alone would put the Teen low), Teen high.
        ("6-6 1-1 3-3 1-4", "6-6 3-3", "1-1 1-4", "5.4 Teen in high"),
    ],
    ids=lambda v: str(v),
)
def test_app4_5_examples(hand: str, high: str, low: str, rule: str) -> None:
    """NZ App4 5.1-5.4 worked examples."""
    s, why = explain_nz(tiles_of(hand))
    assert form(s) == expect(high, low)
    assert f"{P} {rule}" in why


FOUR_FIVE = [(f, v) for f in NAMED["4"] for v in NAMED["5"]]
TEN_ELEVEN = [(t, e) for t in NAMED["10"] for e in NAMED["11"]]


@pytest.mark.parametrize(
    ("x", "y"), FOUR_FIVE, ids=[f"NZ App4 5.4(a) 4/5 {a}+{b}" for a, b in FOUR_FIVE]
)
def test_app4_5_4_a_teen_low_with_4_and_5(x: Tile, y: Tile) -> None:
    """NZ App4 5.4(a): Teen, Day, a 4 and a 5: Teen in the low hand (Day + 5 = 7 / Teen + 4 = 6)."""
    s, why = explain_nz((TEEN, DAY, x, y))
    assert TEEN in s.low.tiles and DAY in s.high.tiles
    assert form(s) == expect(f"1-1 {y}", f"6-6 {x}")
    assert f"{P} 5.4 Teen in low" in why


@pytest.mark.parametrize(
    ("x", "y"), TEN_ELEVEN, ids=[f"NZ App4 5.4(b) 10/11 {a}+{b}" for a, b in TEN_ELEVEN]
)
def test_app4_5_4_b_teen_low_with_10_and_11(x: Tile, y: Tile) -> None:
    """NZ App4 5.4(b): Teen, Day, a 10 and an 11: Teen low (Day + 11 = 3 / Teen + 10 = 2)."""
    s, why = explain_nz((TEEN, DAY, x, y))
    assert form(s) == expect(f"1-1 {y}", f"6-6 {x}")
    assert f"{P} 5.4 Teen in low" in why


def test_app4_5_4_exhaustive_teen_and_day_apart() -> None:
    """NZ App4 5.4: whenever Teen and Day end up in different hands, the Teen is high unless
    the other two tiles are a 4 and a 5 or a 10 and an 11."""
    n = 0
    for hand, s, _, _ in results():
        if TEEN not in hand or DAY not in hand or pair_ranks(hand):
            continue
        if (TEEN in s.high.tiles) == (DAY in s.high.tiles):
            continue  # together
        n += 1
        rest = [t for t in hand if t not in (TEEN, DAY)]
        exception = any(
            {rest[0], rest[1]} & set(NAMED[a]) and {rest[0], rest[1]} & set(NAMED[b])
            for a, b in (("4", "5"), ("10", "11"))
        )
        assert (TEEN in s.low.tiles) == exception, (hand, s)
    assert n > 0


def test_app4_5_1_and_5_2_exhaustive_high_tile_placement_when_points_tie() -> None:
    """NZ App4 5.1/5.2: among settings with the chosen point counts, the highest tile goes low
    (low 7 or less) or high (low 8+) where that keeps the 2 highest tiles apart."""
    for hand, s, why, alts in results():
        if not is_general(hand, alts) or "4.2" in why or "5.4" in why:
            continue
        ties = [
            a
            for a in alts
            if (a.low.points, a.high.points) == (s.low.points, s.high.points)
            and (harmony_3_or_better(a.low) or not harmony_3_or_better(s.low))
        ]
        top, second = sorted(hand, key=lambda t: t.single_rank)[:2]

        def apart(a: Setting, top: Tile = top, second: Tile = second) -> bool:
            return (top in a.high.tiles) != (second in a.high.tiles)

        want_top_high = s.low.points >= 8
        if any(apart(a) and (top in a.high.tiles) == want_top_high for a in ties):
            assert apart(s) and (top in s.high.tiles) == want_top_high, (hand, s, why)


@pytest.mark.parametrize(
    ("hand", "high", "low", "rule"),
    [
        # 4.2: 8 / 1 either way (Teen + High 6 or Teen + Low 6); 5.3 Teen high both: the low
        # with the High 6 (stronger low) is taken.
        ("6-6 3-3 1-5 1-4", "6-6 1-5", "3-3 1-4", "residual"),
        # 3.3: Teen High Nine either way (1-6 or 3-4), lows 3 points below Harmony 3: the low
        # with the High 7.
        ("6-6 1-6 1-5 3-4", "6-6 3-4", "1-6 1-5", "residual"),
    ],
    ids=lambda v: str(v),
)
def test_residual_tie_break(hand: str, high: str, low: str, rule: str) -> None:
    """Not in the text (documented): when the rules leave a choice, the stronger low hand."""
    s, why = explain_nz(tiles_of(hand))
    assert form(s) == expect(high, low)
    assert f"{P} {rule}" in why


# --------------------------------------------------------------------------------------------
# App4 6 Exceptions


@pytest.mark.parametrize(
    ("hand", "high", "low"),
    [
        # No Harmony 3 low (6+7 = 3 with a High 6): 4.2 would play 8 / 0; 6.1 plays 5 / 3.
        ("3-3 1-6 5-6 2-2", "5-6 2-2", "3-3 1-6"),
        # Low 6, low 7 and a Low 4: 6.1 maximises the low too.
        ("1-5 3-4 5-6 1-3", None, None),
    ],
    ids=lambda v: str(v),
)
def test_app4_6_1_six_seven_eleven(hand: str, high: str | None, low: str | None) -> None:
    """NZ App4 6.1: 6, 7, 11 and a non-pairing tile: maximise the low, even below Harmony 3."""
    tiles = tiles_of(hand)
    s, why = explain_nz(tiles)
    assert s.low.points == max(a.low.points for a in all_settings(tiles))
    if high is not None and low is not None:
        assert form(s) == expect(high, low)
    assert f"{P} 6.1" in why


def test_app4_6_1_exhaustive_hand_count() -> None:
    """NZ App4 6.1 hands (no Teen/Day: with one, 3.1 plays the High Nine first)."""
    n = 0
    for hand, _, why, alts in results():
        if is_6_1_hand(hand) and is_general(hand, alts):
            n += 1
            assert f"{P} 6.1" in why
    assert n > 0


@pytest.mark.parametrize(
    ("hand", "high", "low"),
    [
        # 8/8 (Teen + High 6 / 5 + Gee Jun) or 7/9 (Teen + 5 / High 6 + Gee Jun): 7/9.
        ("6-6 3-3 1-4 1-2", "3-3 1-2", "6-6 1-4"),
        ("6-6 3-3 2-3 2-4", "3-3 2-4", "6-6 2-3"),
    ],
    ids=lambda v: str(v),
)
def test_app4_6_2_seven_nine_not_eight_eight(hand: str, high: str, low: str) -> None:
    """NZ App4 6.2: a hand playable 8/8 or 7/9 (low/high) is played 7/9."""
    s, why = explain_nz(tiles_of(hand))
    assert (s.low.points, s.high.points) == (7, 9)
    assert form(s) == expect(high, low)
    assert f"{P} 6.2" in why


@pytest.mark.parametrize("seven", ["1-6", "3-4", "2-5"])
def test_app4_6_2_unless_low_10(seven: str) -> None:
    """NZ App4 6.2 "unless one of the tiles is Low 10": 8/8 (4.1) stands."""
    tiles = tiles_of(f"4-4 4-6 5-6 {seven}")
    alts = all_settings(tiles)
    assert {(a.low.points, a.high.points) for a in alts} >= {(8, 8), (7, 9)}
    s, why = explain_nz(tiles)
    assert (s.low.points, s.high.points) == (8, 8)
    assert form(s) == expect("4-4 4-6", f"5-6 {seven}")
    assert "6.2" not in why


# --------------------------------------------------------------------------------------------
# Symmetries (hypothesis)

hands_st = st.lists(st.integers(0, len(FULL_SET) - 1), min_size=4, max_size=4, unique=True).map(
    lambda ix: tuple(FULL_SET[i] for i in ix)
)

PARTNER = {
    a: b for a in TILES for b in TILES if a != b and a.pair_rank == b.pair_rank
}  # mixed pairs: 4-5/3-6, ...


@settings(max_examples=300, deadline=None)
@given(hands_st, st.randoms(use_true_random=False))
def test_permutation_invariant(hand: tuple[Tile, ...], rnd) -> None:
    """The house way depends on the four tiles, not on the order they are given in."""
    shuffled = list(hand)
    rnd.shuffle(shuffled)
    a, why_a = explain_nz(hand)
    b, why_b = explain_nz(shuffled)
    assert why_a == why_b
    if a.high.key == a.low.key:  # equal hands: "high" and "low" follow the input order
        assert sorted(form(a)) == sorted(form(b))
    else:
        assert form(a) == form(b)


@settings(max_examples=300, deadline=None)
@given(hands_st, st.integers(0, 3))
def test_mixed_pair_partner_swap(hand: tuple[Tile, ...], i: int) -> None:
    """Swapping a tile of a mixed pair (4-5/3-6, 3-5/2-6, 3-4/2-5, 1-4/2-3, 1-2/2-4) for its
    partner changes no rank and no points, so the setting maps tile for tile. (Only when the
    partner is not in the hand: otherwise the swap would change nothing.)"""
    t = hand[i]
    if t not in PARTNER or PARTNER[t] in hand:
        return
    u = PARTNER[t]
    swapped = tuple(u if x == t else x for x in hand)
    a, why_a = explain_nz(hand)
    b, why_b = explain_nz(swapped)

    def mapped(h: TwoTileHand) -> list[str]:
        return sorted(u.notation if x == t else x.notation for x in h.tiles)

    got = [sorted(x.notation for x in b.high.tiles), sorted(x.notation for x in b.low.tiles)]
    want = [mapped(a.high), mapped(a.low)]
    if a.high.key == a.low.key:  # equal hands: "high" and "low" follow the input order
        got, want = sorted(got), sorted(want)
    assert got == want
    assert why_a == why_b


def test_exhaustive_never_a_dominated_setting() -> None:
    """Observed property (not a rule of the text, but a regulator's sanity check): no other
    setting of the hand is at least as strong in both hands and stronger in one."""
    for hand, s, why, alts in results():
        for a in alts:
            assert not (
                a.high.key >= s.high.key
                and a.low.key >= s.low.key
                and (a.high.key, a.low.key) != (s.high.key, s.low.key)
            ), (hand, s, a, why)
