"""House way of the ACT Pai Gow rules (Casino Canberra 1993: rule 11.1 and Appendix D).

ACT 11.1 gives the "basic ranking ... subject to exceptions": (a) play the pairs, (b) play 2 or 12
with 7, 8 or 9, (c) play two small tiles that equal 7, 8 or 9, (d) play the biggest tile with the
smallest. Appendix D refines it. The rules are applied in this order (`RULES`); each one either
decides the setting or passes (docs/paigow-house-way-act.md gives the reasons for each reading):

  1. App D 1        two ranking pairs: play them as two hands
  2. App D 2(a)-(d) split a Teen, Day, 9s, 8s or 7s pair when the split reaches the listed
                     minimum ("6-8", "9-9", "7-9 or 8-8", "7 - Day nine") or Teen/Day has 9 and 11,
                     and keeping the pair is not higher in both hands ("no higher play")
  3. 11.1(a)        any other pair is played as a pair ("Only split the following pairs")
  4. App D Exc (a)  Teen/Day, 9, a 7 or 8, and 11: play the Wong (data: `EXCEPTION_A`)
  5. App D 3 / 11.1(b)  no pair: play a High Nine when the low hand is Chong 3 or better (3(b),
                     3(c)), else a Gong, else a Wong (3(b) "Always play Gong ahead of Wong")
  6. App D Individuals (a)-(e)  the listed hands (data: `INDIVIDUALS`)
  7. points hands   11.1(c) the two lowest-ranking tiles together if they make 7, 8 or 9, else
                     11.1(d)/Exc (b) the highest with the lowest; Exc (b) "unless a higher hand":
                     a setting better in one hand and not worse in the other replaces it;
                     Exc (c): a low hand under Chong 3 pumps up the high hand, and when the high
                     hand cannot reach 7 the hands are balanced (best low hand); finally among
                     settings of the same points Exc (d)/(e) place the highest-ranking tile and
                     Exc (f) keeps the two highest-ranking tiles apart.

"Chong 3" (3(c), Exc (c)) is read as a 3-point hand whose higher-ranking tile is Chong (High 6,
3-3), the ACT counterpart of NZ's "Harmony 3" (3 points with High 4); "Chong 3 or better" is a hand
whose strength (`TwoTileHand.key`) is at least that of 3-3 with a 7.

Numbers name tiles by pips ("a 7" = 1-6, 3-4, 2-5). A Gee Joon tile is "a 3" and never "a 6": the
6-pip Gee Joon 2-4 counts 3 or 6 exactly like 1-2 (hands.py), so both are "the 3".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import permutations

from controller.games.paigow.hands import Kind, TwoTileHand, make_hand
from controller.games.paigow.settings import Setting, all_settings
from controller.games.paigow.tiles import BY_NOTATION, DAY, Tile, tiles_of

PREFIX = "ACT"

# "Chong ranking 3": 3 points with Chong (3-3) as the higher tile, e.g. 3-3 + 1-6 = 13.
CHONG_3: TwoTileHand = make_hand(BY_NOTATION["3-3"], BY_NOTATION["1-6"])
CHONG_3_KEY: int = CHONG_3.key
# "Day nine" (App D 2(d)) is the Day High Nine, the lowest of the Wong class (App B, 6th).
DAY_HIGH_NINE: TwoTileHand = make_hand(DAY, BY_NOTATION["3-4"])


# Tile names of rule 11 and Appendix D (see the module docstring on the Gee Joon tiles).
DESIGNATIONS: dict[str, frozenset[Tile]] = {
    "3": tiles_of("1-2", "2-4"),
    "4": tiles_of("1-3", "2-2"),
    "5": tiles_of("1-4", "2-3"),
    "6": tiles_of("3-3", "1-5"),
    "7": tiles_of("1-6", "3-4", "2-5"),
    "9": tiles_of("4-5", "3-6"),
    "10": tiles_of("5-5", "4-6"),
    "11": tiles_of("5-6"),
    "high 4": tiles_of("1-3"),
    "high 8": tiles_of("4-4"),
    "low 8": tiles_of("3-5", "2-6"),
    "high 10": tiles_of("5-5"),
    "2 or 12": tiles_of("1-1", "6-6"),
    "6 or 7": tiles_of("3-3", "1-5", "1-6", "3-4", "2-5"),
    "7 or 8": tiles_of("1-6", "3-4", "2-5", "4-4", "3-5", "2-6"),
    "any": frozenset(BY_NOTATION.values()),
}

# App D 2 pairs that may be split, as pair ranks (tiles.py: 1 = Gee Joon .. 16 = fives).
# "7's" and "8's" name the identical High 7 / High 8 pairs and the mixed low pairs alike.
SPLIT_GROUPS: dict[str, frozenset[int]] = {
    "Teen or Day": frozenset({2, 3}),
    "9's": frozenset({13}),
    "8's": frozenset({4, 14}),
    "7's": frozenset({11, 15}),
}


@dataclass(frozen=True, slots=True)
class SplitRule:
    """App D 2(a)-(d): split when (low, high) reaches one of the minimums."""

    rule: str
    group: str
    minimums: tuple[tuple[int, int], ...]  # (low minimum key, high minimum key) alternatives
    text: str


def _pts(points: int) -> int:
    """The key of the weakest hand of `points` points ("8 or better" is key >= this)."""
    return 20 * points + 1 if points else 0


SPLIT_RULES: tuple[SplitRule, ...] = (
    SplitRule("App D 2(a)", "Teen or Day", ((_pts(6), _pts(8)),),
              "Split Teen and Day to make 6 - 8 or better"),
    SplitRule("App D 2(b)", "9's", ((_pts(9), _pts(9)),), "Split 9's - to make 9 - 9 or better"),
    SplitRule("App D 2(c)", "8's", ((_pts(7), _pts(9)), (_pts(8), _pts(8))),
              "Split 8's - to make 7 - 9 or 8 - 8 and better"),
    SplitRule("App D 2(d)", "7's", ((_pts(7), DAY_HIGH_NINE.key),),
              "Split 7's - to make 7 - Day nine or better"),
)
# App D 2(a) "also with 9 and 11": a Teen or Day pair with a 9 and the 11 (Wong / 3 points).
SPLIT_ALSO_WITH: tuple[str, str] = ("9", "11")


@dataclass(frozen=True, slots=True)
class Pattern:
    """A listed hand: four tile designations and the two of them played together."""

    rule: str
    text: str
    slots: tuple[str, str, str, str]  # keys of DESIGNATIONS
    together: tuple[int, int]  # slot indexes forming one hand; the other two form the other


# App D EXCEPTIONS (a): "Play Wong over Gong and High Nine when fourth tile is 11".
EXCEPTION_A: tuple[Pattern, ...] = (
    Pattern("App D Exc (a)", "Play Wong over Gong and High Nine when fourth tile is 11",
            ("2 or 12", "9", "7 or 8", "11"), (0, 1)),
)

# App D INDIVIDUALS (a)-(e). Where the text names only one hand or one tile's place, the pairing
# chosen is the one with the same points as the general rules' setting (see the docs).
INDIVIDUALS: tuple[Pattern, ...] = (
    Pattern("App D Individuals (a)", "With a 7, a high 8, a high 10 and 11 play 7 - 9",
            ("7", "high 8", "high 10", "11"), (1, 3)),  # 4-4 + 5-6 = 9 high, 7 + 5-5 = 7 low
    Pattern("App D Individuals (b)",
            "With a high 4, high 8, a low 8 and a 6 or 7, play the high 8 on the high hand",
            ("high 4", "high 8", "low 8", "6 or 7"), (1, 3)),  # 4-4 + 6/7 high, 1-3 + low 8 low
    Pattern("App D Individuals (c)", "With a 3, a 6, a 5 and a 2 or 12 play 7-9 instead of 8-8",
            ("3", "6", "5", "2 or 12"), (0, 1)),  # Gee Joon + 6 = 9 high, 2/12 + 5 = 7 low
    Pattern("App D Individuals (d)",
            "With a 3, a 4, a 5, and any tile not making a pair play the nine",
            ("3", "4", "5", "any"), (1, 2)),  # 4 + 5 = 9
    Pattern("App D Individuals (e)",
            "With a high 8, low 8 and a 9 with any 10 play high 8 in the low hand",
            ("high 8", "low 8", "9", "10"), (0, 2)),  # 4-4 + 9 = 7 low, low 8 + 10 = 8 high
)


# --------------------------------------------------------------------------------------------
# The normalised hand and small helpers


@dataclass(frozen=True, slots=True)
class _Hand:
    tiles: tuple[Tile, Tile, Tile, Tile]  # highest-ranking single tile first
    settings: tuple[Setting, ...]


Decision = tuple[Setting, str]
RuleFn = Callable[[_Hand], Decision | None]


def _form(hand: TwoTileHand) -> tuple[str, str]:
    return tuple(sorted(t.notation for t in hand.tiles))  # type: ignore[return-value]


def _has_hand(s: Setting, tiles: Sequence[Tile]) -> bool:
    form = tuple(sorted(t.notation for t in tiles))
    return form in (_form(s.high), _form(s.low))


def _together(s: Setting, a: Tile, b: Tile) -> bool:
    return _has_hand(s, (a, b))


def _is_pair(hand: TwoTileHand) -> bool:
    return hand.kind is Kind.PAIR


def _pair_ranks(tiles: Sequence[Tile]) -> list[int]:
    """Pair ranks of the ranking pairs among the four tiles (0, 1 or 2 of them)."""
    ranks = [t.pair_rank for t in tiles]
    return sorted({r for r in ranks if ranks.count(r) >= 2})


def _points_form(s: Setting) -> tuple[int, int]:
    return (s.high.points, s.low.points)


def _notation_form(s: Setting) -> tuple[tuple[str, str], tuple[str, str]]:
    return (_form(s.high), _form(s.low))


def _best(cands: Sequence[Setting]) -> Setting:
    """Strongest high hand, then strongest low hand; notation order only for reproducibility."""
    return max(sorted(cands, key=_notation_form, reverse=True),
               key=lambda s: (s.high.key, s.low.key))


def _matches(pattern: Pattern, h: _Hand) -> list[Setting]:
    """The settings a listed hand requires (several only if the designations fit two ways)."""
    found: list[Setting] = []
    if _pair_ranks(h.tiles):  # every listed hand is pairless (Individuals (d) says so)
        return found
    for order in permutations(h.tiles):
        if all(t in DESIGNATIONS[name] for t, name in zip(order, pattern.slots, strict=True)):
            pair = (order[pattern.together[0]], order[pattern.together[1]])
            for s in h.settings:
                if _has_hand(s, pair) and s not in found:
                    found.append(s)
    return found


# --------------------------------------------------------------------------------------------
# The rules, in the order they are applied


def rule_d1_two_pairs(h: _Hand) -> Decision | None:
    """App D 1: "When having two ranking pairs play the two pairs as two hands"."""
    for s in h.settings:
        if _is_pair(s.high) and _is_pair(s.low):
            return s, f"{PREFIX} App D 1 two ranking pairs as two hands: {s}"
    return None


def _split_group(pair_rank: int) -> str | None:
    return next((g for g, ranks in SPLIT_GROUPS.items() if pair_rank in ranks), None)


def _split_reaches(rule: SplitRule, s: Setting) -> bool:
    return any(s.low.key >= lo and s.high.key >= hi for lo, hi in rule.minimums)


def rule_d2_split(h: _Hand) -> Decision | None:
    """App D 2: split a Teen, Day, 9s, 8s or 7s pair when the split reaches its minimum.

    "Only split ... providing no higher play is possible": keeping the pair is a higher play
    when it is at least as strong in both hands, so such a split is not made.
    """
    ranks = _pair_ranks(h.tiles)
    if len(ranks) != 1:
        return None
    group = _split_group(ranks[0])
    if group is None:
        return None
    keep = next(s for s in h.settings if _is_pair(s.high))
    pair_tiles = [t for t in h.tiles if t.pair_rank == ranks[0]]
    others = [t for t in h.tiles if t.pair_rank != ranks[0]]
    splits = [s for s in h.settings if not _together(s, *pair_tiles)]
    rule = next(r for r in SPLIT_RULES if r.group == group)
    reached = [s for s in splits if _split_reaches(rule, s)]
    why = rule.text
    if group == "Teen or Day" and _one_each(others, SPLIT_ALSO_WITH):
        reached, why = splits, "Split Teen and Day ... also with 9 and 11"
    # "providing no higher play is possible": not when the pair kept is as strong in both hands.
    reached = [s for s in reached if not _stronger_or_equal(keep, s)]
    if not reached:
        return None
    s = _best(reached)
    return s, f"{PREFIX} {rule.rule} {why}: {s} ({_grade(s.low)} - {_grade(s.high)})"


def _stronger_or_equal(a: Setting, b: Setting) -> bool:
    return a.high.key >= b.high.key and a.low.key >= b.low.key


def _one_each(tiles: Sequence[Tile], names: tuple[str, str]) -> bool:
    a, b = tiles
    d0, d1 = DESIGNATIONS[names[0]], DESIGNATIONS[names[1]]
    return (a in d0 and b in d1) or (a in d1 and b in d0)


def _grade(hand: TwoTileHand) -> str:
    if not hand.is_ranked:
        return str(hand.points)
    return hand.describe().split(" ", 2)[2].split(" (rank")[0]  # e.g. "teen wong"


def rule_11_1a_keep_pair(h: _Hand) -> Decision | None:
    """11.1(a) "Play the pairs": any pair not split under App D 2 is played as a pair."""
    for s in h.settings:
        if _is_pair(s.high):
            return s, f"{PREFIX} 11.1(a) play the pair: {s}"
    return None


def rule_exception_a(h: _Hand) -> Decision | None:
    """App D Exc (a): Wong over Gong and High Nine when the fourth tile is 11 (data)."""
    return _apply_patterns(EXCEPTION_A, h)


def _wong_class(s: Setting) -> Kind | None:
    # A Wong-class hand outranks any points hand, so if one is made it is the high hand.
    return s.high.kind if s.high.kind in (Kind.WONG, Kind.GONG, Kind.HIGH_NINE) else None


def rule_d3_wong_gong_high_nine(h: _Hand) -> Decision | None:
    """11.1(b), App D 3(a)-(c): no pair play, so play a High Nine, Gong or Wong if one is made.

    3(a)/3(b): High Nine ahead of Gong ahead of Wong. 3(c): the High Nine only when its low hand
    is Chong 3 or better, else Gong and Wong over it. Between Gong and Wong 3(b) "Always" holds
    (Exc (a), the 11, is the only stated exception and is applied before this rule).
    """
    by_kind: dict[Kind, list[Setting]] = {}
    for s in h.settings:
        kind = _wong_class(s)
        if kind is not None:
            by_kind.setdefault(kind, []).append(s)
    if not by_kind:
        return None
    nines = [s for s in by_kind.get(Kind.HIGH_NINE, []) if s.low.key >= CHONG_3_KEY]
    if nines:
        s = _best(nines)
        return s, f"{PREFIX} App D 3(b) High Nine ahead of Gong and Wong (low Chong 3+): {s}"
    weak = "3(c) low not Chong 3 with High Nine; " if Kind.HIGH_NINE in by_kind else ""
    if Kind.GONG in by_kind:
        s = _best(by_kind[Kind.GONG])
        return s, f"{PREFIX} App D {weak}3(b) Gong ahead of Wong: {s}"
    if Kind.WONG in by_kind:
        s = _best(by_kind[Kind.WONG])
        return s, f"{PREFIX} App D {weak}3(a) Wong: {s}"
    s = _best(by_kind[Kind.HIGH_NINE])
    return s, f"{PREFIX} App D 3(a) High Nine, no Gong or Wong to play over it: {s}"


def rule_individuals(h: _Hand) -> Decision | None:
    """App D INDIVIDUALS (a)-(e): the listed hands (data)."""
    return _apply_patterns(INDIVIDUALS, h)


def _apply_patterns(patterns: Sequence[Pattern], h: _Hand) -> Decision | None:
    for pattern in patterns:
        found = _matches(pattern, h)
        if found:
            s, clause = _place_high_tiles(found, h) if len(found) > 1 else (found[0], "")
            return s, f"{PREFIX} {pattern.rule} {pattern.text}: {s}{clause}"
    return None


def rule_points(h: _Hand) -> Decision:
    """11.1(c)/(d) and App D Exc (b)-(f): no pair and no Wong, Gong or High Nine."""
    t1, _, t3, t4 = h.tiles  # highest-ranking first; no pair, so all four ranks differ
    small = next(s for s in h.settings if _together(s, t3, t4))
    small_points = make_hand(t3, t4).points
    if small_points in (7, 8, 9):
        base, why = small, f"11.1(c) two small tiles {t3}+{t4} make {small_points}"
    else:
        base = next(s for s in h.settings if _together(s, t1, t4))
        why = f"11.1(d)/Exc (b) highest tile {t1} with lowest {t4}"
    # Exc (b) "unless a higher hand can be achieved": a setting no worse in either hand's points
    # and better in one.
    higher = [s for s in h.settings if _dominates(s, base)]
    if higher:
        base = max(higher, key=lambda s: (s.low.points, s.high.points))
        why += f"; Exc (b) higher hand {base.high.points}-{base.low.points} achieved"
    # Exc (c): a low hand under Chong 3 pumps up the high hand; without 7 there, balance up.
    if base.low.key < CHONG_3_KEY:
        pumped = max(h.settings, key=lambda s: (s.high.points, s.low.points))
        if pumped.high.points >= 7:
            base = pumped
            why += f"; Exc (c) low not Chong 3: pump up high hand to {pumped.high.points}"
        else:
            base = max(h.settings, key=lambda s: (s.low.points, s.high.points))
            why += f"; Exc (c) high hand under 7: balance up to low {base.low.points}"
    same = [s for s in h.settings if _points_form(s) == _points_form(base)]
    s, clause = _place_high_tiles(same, h, base)
    return s, f"{PREFIX} {why}: {s}{clause}"


def _dominates(a: Setting, b: Setting) -> bool:
    return (
        a.high.points >= b.high.points
        and a.low.points >= b.low.points
        and _points_form(a) != _points_form(b)
    )


def _place_high_tiles(
    cands: Sequence[Setting], h: _Hand, chosen: Setting | None = None
) -> tuple[Setting, str]:
    """Exc (d)/(e), then (f), among settings of equal points.

    If these leave the setting the rule itself chose, it stands; otherwise the strongest remains.
    """
    cands = list(cands)
    if len(cands) == 1:
        return cands[0], ""
    top, second = h.tiles[0], h.tiles[1]
    clause = ""
    high_points = {s.high.points for s in cands}
    ranked = any(s.high.is_ranked for s in cands)
    if len(high_points) == 1 and not ranked:
        if high_points.pop() <= 7:
            pick = [s for s in cands if not s.in_high(top)]
            tag = "; Exc (d) high hand 7 or less: high ranking tile on the low hand"
        else:
            pick = [s for s in cands if s.in_high(top)]
            tag = "; Exc (e) high hand 8 or 9: high ranking tile on the high hand"
        if pick and len(pick) < len(cands):
            cands, clause = pick, tag
    apart = [s for s in cands if not _together(s, top, second)]
    if apart and len(apart) < len(cands):
        cands, clause = apart, clause + "; Exc (f) two high ranking tiles apart"
    if chosen is not None and chosen in cands:
        return chosen, clause
    return _best(cands), clause


RULES: tuple[tuple[str, RuleFn], ...] = (
    ("App D 1", rule_d1_two_pairs),
    ("App D 2(a)-(d)", rule_d2_split),
    ("11.1(a)", rule_11_1a_keep_pair),
    ("App D Exc (a)", rule_exception_a),
    ("11.1(b), App D 3(a)-(c)", rule_d3_wong_gong_high_nine),
    ("App D Individuals (a)-(e)", rule_individuals),
    ("11.1(c)/(d), App D Exc (b)-(f)", rule_points),
)


# --------------------------------------------------------------------------------------------
# Public API


def _sort_key(t: Tile) -> tuple[int, str]:
    return (t.single_rank, t.notation)


@cache
def _decide(notations: tuple[str, ...]) -> tuple[frozenset[tuple[str, str]], tuple[str, str], str]:
    tiles = tuple(sorted((BY_NOTATION[n] for n in notations), key=_sort_key))
    h = _Hand(tiles, tuple(all_settings(tiles)))  # type: ignore[arg-type]
    for _, rule in RULES:
        decision = rule(h)
        if decision is not None:
            s, why = decision
            return frozenset((_form(s.high), _form(s.low))), _form(s.high), why
    raise AssertionError("unreachable: rule_points always decides")


def explain_act(tiles: Sequence[Tile]) -> tuple[Setting, str]:
    """The ACT house-way setting of four tiles and the rule(s) that decided it."""
    settings = all_settings(tiles)  # validates: four tiles the set can hold
    hands, high, why = _decide(tuple(sorted(t.notation for t in tiles)))
    matching = [s for s in settings if frozenset((_form(s.high), _form(s.low))) == hands]
    # Two hands of equal key may come out of all_settings either way round (see the docs);
    # prefer the orientation decided above when all_settings offers it.
    return next((s for s in matching if _form(s.high) == high), matching[0]), why


def house_way_act(tiles: Sequence[Tile]) -> Setting:
    """The setting ACT rule 11 and Appendix D require (one of `all_settings(tiles)`)."""
    return explain_act(tiles)[0]
