"""House way of the New Zealand Pai Gow rules (NZ Appendix 4 "House Way").

The dealer sets the house's hand (and hands under NZ 7.2, 11.3(e), 12.8, 12.14, 12.16) this way,
and the par sheet is computed from it. The appendix is applied as an ordered list of rules; each
rule either decides the setting or passes (see `RULES`, and docs/paigow-house-way-nz.md):

  1. App4 2.1   two ranking pairs: play them as two hands
  2. App4 2.3   the split table (data: `SPLIT_TABLE`): split the listed pair
  3. App4 2.2   any other pair stays together (§2.2 names the never-split pairs; those of §2.3
                 are split only "with" the listed tiles)
  4. App4 3.1-3.3  no pair: play a Wong, Gong or High Nine if one can be made
  5. App4 4-6   general rules: 6.1 / 4.1-4.3 choose the point counts, 6.2 may replace 8/8 by 7/9,
                 then 5.4, 5.3, 5.1/5.2 place the high-ranking tiles, then a documented residual
                 tie-break.

"Harmony 3" (App4 1) is 3 points whose higher tile is a High 4 (1-3); the only such hand is High 4
with a nine. "Harmony 3 or better" is a low hand whose strength (NZ 4.2-4.3 ranking, i.e.
`TwoTileHand.key`) is at least that hand's: any ranked hand, 4+ points, or 3 points with Teen, Day,
High 8 or High 4 as the higher tile.

Numbers in the appendix ("9 and 8", "any non-pairing tile", "4/5") name tiles by their pips. The
Gee Jun tiles are never one of those numbers: the text names "Gee Jun" whenever it means them, and
reading 2-4 as "a 6" would equally make 1-2 "a 6" (NZ 4.2 lets both count 3 or 6).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

from controller.games.paigow.hands import Kind, TwoTileHand, make_hand
from controller.games.paigow.settings import Setting, all_settings
from controller.games.paigow.tiles import BY_NOTATION, DAY, TEEN, Tile, tiles_of

PREFIX = "NZ App4"

# App4 1: the Harmony 3 hand is High 4 + a nine (1-3 + 4-5 = 13 -> 3 points, High 4 higher).
HARMONY_3: TwoTileHand = make_hand(BY_NOTATION["1-3"], BY_NOTATION["4-5"])
HARMONY_3_KEY: int = HARMONY_3.key

LOW_10 = BY_NOTATION["4-6"]


# Tile designations used by the appendix text (see the module docstring on Gee Jun).
DESIGNATIONS: dict[str, frozenset[Tile]] = {
    "4": tiles_of("1-3", "2-2"),
    "5": tiles_of("1-4", "2-3"),
    "6": tiles_of("3-3", "1-5"),
    "7": tiles_of("1-6", "3-4", "2-5"),
    "8": tiles_of("4-4", "3-5", "2-6"),
    "9": tiles_of("4-5", "3-6"),
    "10": tiles_of("5-5", "4-6"),
    "11": tiles_of("5-6"),
    "Teen": tiles_of("6-6"),
    "Day": tiles_of("1-1"),
    "Teen/Day": tiles_of("6-6", "1-1"),
}

# Pair groups of App4 2.2-2.3 as pair ranks (tiles.py: 1 = Gee Jun .. 16 = fives). "Eights" and
# "Sevens" name both the identical High 8 / High 7 pairs and the mixed low pairs, as "Fours",
# "Sixes" and "Tens" name a high and a low pair; together 2.2 and 2.3 cover all 16 pairs.
PAIR_GROUPS: dict[str, frozenset[int]] = {
    "Gee Jun": frozenset({1}),
    "Teen or Day": frozenset({2, 3}),
    "Nines": frozenset({13}),
    "Eights": frozenset({4, 14}),
    "Sevens": frozenset({11, 15}),
    # App4 2.2, never split:
    "Fours": frozenset({5, 8}),
    "Fives": frozenset({16}),
    "Sixes": frozenset({7, 12}),
    "Tens": frozenset({6, 10}),
    "Elevens": frozenset({9}),
}
NEVER_SPLIT: tuple[str, ...] = ("Fours", "Fives", "Sixes", "Tens", "Elevens")


@dataclass(frozen=True, slots=True)
class SplitLine:
    """One line of the App4 2.3 table: split `group` when the other two tiles are `a` and `b`."""

    group: str
    a: str
    b: str
    text: str  # the line as printed, e.g. "9 and 11" or "8 and 8 (non-pairing)"

    def matches(self, pair_rank: int, x: Tile, y: Tile) -> bool:
        if pair_rank not in PAIR_GROUPS[self.group] or x.pair_rank == y.pair_rank:
            return False  # "(non-pairing)": two pairs are 2.1's, never the table's
        da, db = DESIGNATIONS[self.a], DESIGNATIONS[self.b]
        return (x in da and y in db) or (x in db and y in da)

    @property
    def rule_id(self) -> str:
        return f"{PREFIX} 2.3 split {self.group} with {self.text}"


def _line(group: str, text: str) -> SplitLine:
    a, _, b = text.split(" (")[0].partition(" and ")
    return SplitLine(group, a, b, text)


# App4 2.3 exactly as printed, one entry per line.
# fmt: off
SPLIT_TABLE: tuple[SplitLine, ...] = (
    *(
        _line("Gee Jun", t)
        for t in ("6 and 6 (non-pairing)", "6 and 5", "6 and 4")
    ),
    *(
        _line("Teen or Day", t)
        for t in (
            "9 and 11", "9 and 8", "9 and 7", "9 and 6", "9 and 5", "9 and 4",
            "8 and 8 (non-pairing)", "8 and 7", "8 and 6", "8 and 5", "8 and 4",
            "7 and 7 (non-pairing)", "7 and 6", "7 and 5", "7 and 4",
            "6 and 6 (non-pairing)", "6 and 5", "6 and 4",
        )
    ),
    *(
        _line("Nines", t)
        for t in ("Teen and Day", "Teen/Day and 10", "10 and 10 (non-pairing)")
    ),
    *(
        _line("Eights", t)
        for t in (
            "Teen and Day", "Teen/Day and 11", "Teen/Day and 10", "11 and 10", "11 and 9",
            "10 and 10 (non-pairing)",
        )
    ),
    *(
        _line("Sevens", t)
        for t in (
            "Teen and Day", "Teen/Day and 11", "Teen/Day and 10", "11 and 10",
            "10 and 10 (non-pairing)",
        )
    ),
)
# fmt: on


# --------------------------------------------------------------------------------------------
# The hand being set


@dataclass(frozen=True, slots=True)
class _Hand:
    tiles: tuple[Tile, Tile, Tile, Tile]  # sorted: highest single rank first
    settings: tuple[Setting, ...]


Decision = tuple[Setting, str]
RuleFn = Callable[[_Hand], Decision | None]


def _pairs(tiles: Sequence[Tile]) -> list[tuple[int, list[Tile], list[Tile]]]:
    """(pair_rank, the two pair tiles, the two others) for each ranking pair in the hand."""
    out = []
    for rank in sorted({t.pair_rank for t in tiles}):
        members = [t for t in tiles if t.pair_rank == rank]
        if len(members) == 2:
            out.append((rank, members, [t for t in tiles if t.pair_rank != rank]))
    return out


def _is_pair(hand: TwoTileHand) -> bool:
    return hand.kind is Kind.PAIR


def _group_of(pair_rank: int) -> str:
    return next(g for g, ranks in PAIR_GROUPS.items() if pair_rank in ranks)


def _with_pair(h: _Hand, rank: int) -> Setting:
    return next(s for s in h.settings if _is_pair(s.high) and s.high.first.pair_rank == rank)


def _split(h: _Hand, rank: int) -> Setting:
    # Each hand takes one tile of the pair. For a mixed pair the two ways differ only by swapping
    # tiles of equal rank and pips, i.e. are equal hands; `_residual` picks one canonically.
    cands = [
        s
        for s in h.settings
        if s.high.first.pair_rank == rank or s.high.second.pair_rank == rank
        if not _is_pair(s.high) and not _is_pair(s.low)
    ]
    return _residual(cands)


# --------------------------------------------------------------------------------------------
# Rules, in order of application


def rule_2_1_two_pairs(h: _Hand) -> Decision | None:
    """App4 2.1: with 2 ranking pairs, play the 2 pairs as 2 hands."""
    pairs = _pairs(h.tiles)
    if len(pairs) != 2:
        return None
    s = next(s for s in h.settings if _is_pair(s.high) and _is_pair(s.low))
    return s, f"{PREFIX} 2.1 two pairs"


def rule_2_3_split_table(h: _Hand) -> Decision | None:
    """App4 2.3: split a pair when its other two tiles are listed with it."""
    for rank, _, (x, y) in _pairs(h.tiles):
        for line in SPLIT_TABLE:
            if line.matches(rank, x, y):
                return _split(h, rank), line.rule_id
    return None


def rule_2_2_keep_pair(h: _Hand) -> Decision | None:
    """App4 2.2 (and 2.3 read as an exhaustive list): any other pair is played as a pair."""
    pairs = _pairs(h.tiles)
    if not pairs:
        return None
    rank = pairs[0][0]
    group = _group_of(rank)
    if group in NEVER_SPLIT:
        return _with_pair(h, rank), f"{PREFIX} 2.2 never split {group}"
    return _with_pair(h, rank), f"{PREFIX} 2.3 {group} pair not listed with these tiles: keep"


_WONG_CLASS = (Kind.WONG, Kind.GONG, Kind.HIGH_NINE)
_KIND_NAME = {Kind.WONG: "Wong", Kind.GONG: "Gong", Kind.HIGH_NINE: "High Nine"}


def rule_3_wong_gong_high_nine(h: _Hand) -> Decision | None:
    """App4 3.1-3.3: no pair play possible (the pair rules passed), so play Wong, Gong or High Nine.

    "Play X" means X is the high hand. 3.2: the first of High Nine, Gong, Wong that leaves a low
    hand of Harmony 3 or better; 3.3: otherwise the first of Wong, Gong, High Nine. Between
    settings of the chosen kind (Teen's or Day's, or two 8s / two 7s) the general rules decide.
    """
    wongs = [s for s in h.settings if s.high.kind in _WONG_CLASS]
    if not wongs:
        return None
    for kind in (Kind.HIGH_NINE, Kind.GONG, Kind.WONG):
        cands = [s for s in wongs if s.high.kind is kind and s.low.key >= HARMONY_3_KEY]
        if cands:
            s, why = _refine(cands, h.tiles)
            return s, _join(f"{PREFIX} 3.2 {_KIND_NAME[kind]} with Harmony 3+ low", why)
    for kind in (Kind.WONG, Kind.GONG, Kind.HIGH_NINE):
        cands = [s for s in wongs if s.high.kind is kind]
        if cands:
            s, why = _refine(cands, h.tiles)
            return s, _join(f"{PREFIX} 3.3 {_KIND_NAME[kind]} (no Harmony 3 low)", why)
    raise AssertionError("unreachable: a Wong-class setting exists")


def rule_4_to_6_general(h: _Hand) -> Decision:
    """App4 4 (with the 6 exceptions) and 5: no pair, no Wong, Gong or High Nine."""
    return _refine(list(h.settings), h.tiles, general=True)


# The order of application. Each rule decides or passes; the last always decides.
RULES: tuple[tuple[str, RuleFn], ...] = (
    ("2.1", rule_2_1_two_pairs),
    ("2.3", rule_2_3_split_table),
    ("2.2", rule_2_2_keep_pair),
    ("3.1-3.3", rule_3_wong_gong_high_nine),
    ("4-6", rule_4_to_6_general),
)


# --------------------------------------------------------------------------------------------
# General rules: choose point counts (4.1-4.3, 6.1, 6.2), then place high tiles (5.1-5.4)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _is_6_1_hand(tiles: Sequence[Tile]) -> bool:
    """App4 6.1: the four tiles are a 6, a 7, an 11 and any tile pairing with none of them."""
    if len({t.pair_rank for t in tiles}) != 4:
        return False  # the fourth tile would pair with one of them (or the hand has a pair)
    return all(any(t in DESIGNATIONS[d] for t in tiles) for d in ("6", "7", "11"))


def _keep(cands: list[Setting], pred: Callable[[Setting], bool]) -> list[Setting]:
    """The candidates satisfying a preference, or all of them if none does ("if possible")."""
    kept = [s for s in cands if pred(s)]
    return kept or cands


def _maximise(cands: list[Setting], score: Callable[[Setting], int]) -> list[Setting]:
    best = max(score(s) for s in cands)
    return [s for s in cands if score(s) == best]


def _together(s: Setting, a: Tile, b: Tile) -> bool:
    return any(a in hand.tiles and b in hand.tiles for hand in (s.high, s.low))


def _teen_day_exception(tiles: Sequence[Tile]) -> bool:
    """App4 5.4(a)/(b): the 2 tiles other than Teen and Day are a 4 and a 5, or a 10 and an 11."""
    rest = list(tiles)
    rest.remove(TEEN)
    rest.remove(DAY)
    x, y = rest
    for a, b in (("4", "5"), ("10", "11")):
        da, db = DESIGNATIONS[a], DESIGNATIONS[b]
        if (x in da and y in db) or (x in db and y in da):
            return True
    return False


def _refine(cands: list[Setting], tiles: Sequence[Tile], general: bool = False) -> Decision:
    """Narrow `cands` step by step; the rule id names every step that removed a candidate."""
    steps: list[str] = []

    def step(rule: str, new: list[Setting], always: bool = False) -> list[Setting]:
        if always or len(new) < len(cands):
            steps.append(rule)
        return new

    exc_6_1 = general and _is_6_1_hand(tiles)
    harmony = [s for s in cands if s.low.key >= HARMONY_3_KEY]
    high_8 = [s for s in cands if s.high.points >= 8]
    seeking_high = False
    if exc_6_1:
        cands = step(f"{PREFIX} 6.1 6-7-11: maximise low", _maximise(cands, _low_points), True)
    elif harmony:
        cands = step(
            f"{PREFIX} 4.1 maximise low (Harmony 3+)", _maximise(harmony, _low_points), True
        )
    elif high_8:
        seeking_high = True
        cands = step(f"{PREFIX} 4.2 maximise high (8+)", _maximise(high_8, _high_points), True)
    else:
        cands = step(f"{PREFIX} 4.3 maximise low", _maximise(cands, _low_points), True)

    # 6.2: where 4.1 has chosen 8/8 and 7/9 (low/high) is also possible, play 7/9.
    if (
        general
        and not exc_6_1
        and LOW_10 not in tiles
        and all((s.low.points, s.high.points) == (8, 8) for s in cands)
    ):
        seven_nine = [s for s in harmony if (s.low.points, s.high.points) == (7, 9)]
        if seven_nine:
            steps.append(f"{PREFIX} 6.2 7/9 not 8/8")
            cands = seven_nine

    ranked = sorted(tiles, key=lambda t: t.single_rank)
    top, second = ranked[0], ranked[1]

    if TEEN in tiles and DAY in tiles:
        teen_low = _teen_day_exception(tiles)
        where = "low (4/5 or 10/11)" if teen_low else "high"

        def teen_ok(s: Setting) -> bool:
            if _together(s, TEEN, DAY):
                return True  # 5.4 speaks only of a Teen in one hand and a Day in the other
            return s.in_high(TEEN) != teen_low

        cands = step(f"{PREFIX} 5.4 Teen in {where}", _keep(cands, teen_ok))

    if seeking_high:
        cands = step(f"{PREFIX} 5.3 highest tile in high", _keep(cands, lambda s: s.in_high(top)))
    else:
        low_points = min(s.low.points for s in cands)
        rule = "5.1" if low_points <= 7 else "5.2"
        cands = step(
            f"{PREFIX} {rule} 2 highest tiles apart",
            _keep(cands, lambda s: not _together(s, top, second)),
        )
        if rule == "5.1":
            cands = step(
                f"{PREFIX} 5.1 highest tile in low", _keep(cands, lambda s: not s.in_high(top))
            )
        else:
            cands = step(
                f"{PREFIX} 5.2 highest tile in high", _keep(cands, lambda s: s.in_high(top))
            )

    best = _residual(cands)
    if any(_strength(s) != _strength(best) for s in cands):
        steps.append(f"{PREFIX} residual: strongest low, then high")
    return best, _join(*steps)


def _low_points(s: Setting) -> int:
    return s.low.points


def _high_points(s: Setting) -> int:
    return s.high.points


def _strength(s: Setting) -> tuple[int, int]:
    return (s.low.key, s.high.key)


def _class_form(s: Setting) -> tuple[tuple[int, ...], ...]:
    # Mixed-pair partners (4-5/3-6, ...) have equal rank and pips: compare them as equal.
    return tuple(
        tuple(sorted((t.pair_rank, t.pips) for t in hand.tiles)) for hand in (s.high, s.low)
    )


def _notation_form(s: Setting) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(sorted(t.notation for t in hand.tiles)) for hand in (s.high, s.low))


def _residual(cands: list[Setting]) -> Setting:
    """Deterministic last choice: strongest low, then strongest high, then a canonical form.

    Settings equal in both keys give the same result against every hand (outcome.py compares
    keys only); the canonical order merely makes the choice reproducible.
    """
    # max() keeps the first of equal elements: sorted by notation, the smallest one wins.
    ordered = sorted(cands, key=_notation_form)
    return max(ordered, key=lambda s: (_strength(s), _class_form(s)))


# --------------------------------------------------------------------------------------------
# Public API


def _sort_key(t: Tile) -> tuple[int, str]:
    return (t.single_rank, t.notation)


@cache
def _decide(notations: tuple[str, ...]) -> tuple[tuple[tuple[str, ...], ...], str]:
    tiles = tuple(sorted((BY_NOTATION[n] for n in notations), key=_sort_key))
    h = _Hand(tiles, tuple(all_settings(tiles)))  # type: ignore[arg-type]
    for _, rule in RULES:
        decision = rule(h)
        if decision is not None:
            setting, why = decision
            return _notation_form(setting), why
    raise AssertionError("unreachable: the general rule always decides")


def explain_nz(tiles: Sequence[Tile]) -> tuple[Setting, str]:
    """The NZ house-way setting of four tiles and the appendix rule(s) that decided it."""
    settings = all_settings(tiles)  # validates: four tiles the set can hold
    form, why = _decide(tuple(sorted(t.notation for t in tiles)))
    # Return the matching object of all_settings(tiles) itself. Where both hands rank equal
    # (e.g. Teen Gong / Teen Gong), which one all_settings calls "high" follows the input order,
    # so match the two hands regardless of orientation.
    return next(s for s in settings if sorted(_notation_form(s)) == sorted(form)), why


def house_way_nz(tiles: Sequence[Tile]) -> Setting:
    """The setting NZ Appendix 4 requires for these four tiles (one of `all_settings(tiles)`)."""
    return explain_nz(tiles)[0]
