"""House way of The Star Sydney (NSW) Pai Gow rules, Appendix 2 (approved 16 August 2024).

NSW 4.1: "The House way is outlined in Appendix 2"; NSW 5.1: "A computer may be used by the House
to check the correct setting of the House way". This module is that check. It is pure and
deterministic; `explain_nsw` also names the rule that decided, for the supervisor. It runs to
~500 lines because Appendix 2's tables and the rules that read them are kept side by side.

Rules are applied in this order; the first that decides wins (see `RULES` and
docs/paigow-house-way-nsw.md, which also records every reading of an ambiguous line):

 1. App2 §1    two ranking pairs are played as two hands.
 2. App2 §2    a never-split pair (High 4, High 10, High 6, Low 4, 11, Low 10, Low 6, fives)
               is kept.
 3. App2 §3    a pair with the other two tiles listed in the split table is split (data:
               `SPLIT_TABLE`); any other pair is kept (a pair is a "higher play", §4.1).
 4. App2 §4-5  no pair: play a Wong, Gong or High Nine when one can be made; High Nine over
               Gong over Wong (§4.2) except §5.1 (fourth tile a 4: Gong over High Nine) and
               §5.2 (fourth tile 11: Wong); Teen on the high hand (§4.3); then the best low hand.
 5. App2 §7    the listed exception hands (data: `EXCEPTIONS`), matched on the normalised hand.
 6. App2 §7    the four principles that restate the list ("may also be known as"), applied to
               every other hand: 1 low -> 8/9 high, 2 low -> 8 with Teen/Day, 5+Gee Jun 8 -> a
               nine ranked High 6 or better, and keep two first-six tiles apart (principle 3,
               which takes precedence over §6.2/6.3 inside the tie-break).
 7. App2 §6    general play: §6.1 the closest hands that no other setting beats on both hands
               (= the highest low hand, then the highest high hand), then the tie-break
               §6.2/§6.3 (the highest tile low when the high hand is 7 or less, high when 8 or
               more), §6.4 (the two highest tiles apart), §6.2/§6.3 again for the next tile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import product

from controller.games.paigow.hands import Kind, TwoTileHand
from controller.games.paigow.settings import Setting, all_settings
from controller.games.paigow.tiles import BY_NOTATION, DAY, TEEN, Tile, tiles_of

# -- the vocabulary of Appendix 2 -----------------------------------------------------------


TEEN_T = tiles_of("6-6")
DAY_T = tiles_of("1-1")
TEEN_OR_DAY = TEEN_T | DAY_T  # "2 or 12", "Teen/Day"
HIGH_8 = tiles_of("4-4")
LOW_8 = tiles_of("3-5", "2-6")
ANY_8 = HIGH_8 | LOW_8
HIGH_4 = tiles_of("1-3")
LOW_4 = tiles_of("2-2")
ANY_4 = HIGH_4 | LOW_4
HIGH_10 = tiles_of("5-5")
LOW_10 = tiles_of("4-6")
ANY_10 = HIGH_10 | LOW_10
HIGH_6 = tiles_of("3-3")
LOW_6 = tiles_of("1-5")
# "any 6" is High 6 or Low 6 only: the text names Gee Jun whenever it means it, and App2 §7
# "High 4, Low 4, 5 any 6. Play 0 and 9" is impossible with a Gee Jun (that hand is listed
# separately: "High 4, Low 4, 5, Gee Jun. Play 7 and 9").
ANY_6 = HIGH_6 | LOW_6
ELEVEN = tiles_of("5-6")
ANY_7 = tiles_of("1-6", "3-4", "2-5")
NINE = tiles_of("4-5", "3-6")
FIVE = tiles_of("1-4", "2-3")
GEE_JUN = tiles_of("1-2", "2-4")

# Pair ranks (tiles.pair_rank) of the pairs named in App2 §2-3.
_PAIR = {name: next(iter(cls)).pair_rank for name, cls in {
    "Gee Jun": GEE_JUN, "Teen": TEEN_T, "Day": DAY_T, "Yun (High 8)": HIGH_8,
    "Ngor (High 4)": HIGH_4, "Mooy (High 10)": HIGH_10, "Cheong Sum (High 6)": HIGH_6,
    "Ban Tang (Low 4)": LOW_4, "Foo Tau (11)": ELEVEN, "Hoong Tau Sap (Low 10)": LOW_10,
    "Ka Kiok Chaat (High 7)": tiles_of("1-6"), "Lim Lum Lok (Low 6)": LOW_6, "Chap Gow (9s)": NINE,
    "Chap Paat (Low 8s)": LOW_8, "Chap Chaat (Low 7s)": tiles_of("3-4", "2-5"),
    "Chap Ng (5s)": FIVE,
}.items()}
_PAIR_NAME = {rank: name for name, rank in _PAIR.items()}

# App2 §2 "Never split the following pairs".
NEVER_SPLIT: frozenset[int] = frozenset(_PAIR[n] for n in (
    "Ngor (High 4)", "Mooy (High 10)", "Cheong Sum (High 6)", "Ban Tang (Low 4)",
    "Foo Tau (11)", "Hoong Tau Sap (Low 10)", "Lim Lum Lok (Low 6)", "Chap Ng (5s)",
))

_NUM = {"4": ANY_4, "5": FIVE, "6": ANY_6, "7": ANY_7, "8": ANY_8, "9": NINE, "10": ANY_10,
        "11": ELEVEN, "Teen": TEEN_T, "Day": DAY_T, "Teen/Day": TEEN_OR_DAY, "High 6": HIGH_6}


@dataclass(frozen=True, slots=True)
class SplitEntry:
    """One line of the App2 §3 table: split `pairs` when the other two tiles are `with_`."""

    pairs: tuple[str, ...]  # names in _PAIR
    with_: tuple[str, str]  # tile classes in _NUM

    @property
    def label(self) -> str:
        return f"{' / '.join(self.pairs)} with {self.with_[0]} and {self.with_[1]}"


def _split_rows(pairs: tuple[str, ...], text: str) -> list[SplitEntry]:
    """'9 and 8, 7, 6' -> (9, 8), (9, 7), (9, 6): the table's own shorthand, line by line."""
    rows = []
    for line in text.split(";"):
        first, rest = line.split(" and ")
        rows += [SplitEntry(pairs, (first.strip(), r.strip())) for r in rest.split(",")]
    return rows


# App2 §3 "Split:", transcribed line by line. Two ranking pairs never reach this table (§1 is
# applied first: the table omits "9 and 9", which is always a pair) and never-split pairs (§2)
# neither, so "10 and 10" can only be High 10 with Low 10, "8 and 8" two eights that are no pair.
SPLIT_TABLE: tuple[SplitEntry, ...] = tuple(
    _split_rows(("Gee Jun",), "High 6 and 6, 5, 4")
    + _split_rows(("Teen", "Day"), "9 and 8, 7, 6, 5, 4; 8 and 8, 7, 6, 5, 4; 7 and 7, 6, 5, 4")
    + _split_rows(("Chap Gow (9s)",), "Teen and Day; Teen/Day and 10; 10 and 10")
    + _split_rows(
        ("Yun (High 8)", "Chap Paat (Low 8s)"),
        "Teen and Day; Teen/Day and 11, 10; 10 and 11, 10; 11 and 9",
    )
    + _split_rows(
        ("Ka Kiok Chaat (High 7)", "Chap Chaat (Low 7s)"), "Teen and Day; Teen/Day and 11, 10"
    )
)


@dataclass(frozen=True, slots=True)
class HouseException:
    """One hand of App2 §7 "Exceptions to General Play" and the setting it requires."""

    ref: str  # "ex.N", N = line number in the list
    text: str  # the line as printed
    slots: tuple[frozenset[Tile], ...]  # four tile classes
    points: frozenset[tuple[int, int]]  # allowed (high points, low points)
    on_high: frozenset[Tile] = frozenset()  # "with the X on the high hand"
    on_low: frozenset[Tile] = frozenset()

    def hands(self) -> set[tuple[str, ...]]:
        """Every concrete four-tile hand the line describes, as sorted notations."""
        out = set()
        for combo in product(*self.slots):
            if all(combo.count(t) <= t.copies for t in combo):
                out.add(_norm(combo))
        return out


def _ex(n: int, text: str, slots: Iterable[frozenset[Tile]], points: Iterable[tuple[int, int]],
        on_high: frozenset[Tile] = frozenset(), on_low: frozenset[Tile] = frozenset(),
        ) -> HouseException:
    return HouseException(f"ex.{n}", text, tuple(slots), frozenset(points), on_high, on_low)


_HSG = (HIGH_6, FIVE, GEE_JUN)  # "High 6, 5, Gee Jun"
EXCEPTIONS: tuple[HouseException, ...] = (
    _ex(1, "High 10, Low 10, any 6 with 2 or 12. Play 0 and 8.",
        (HIGH_10, LOW_10, ANY_6, TEEN_OR_DAY), [(8, 0)]),
    _ex(2, "High 10, Low 10, 11 any 7 or 8. Play 0 and 8 or 0 and 9.",
        (HIGH_10, LOW_10, ELEVEN, ANY_7 | ANY_8), [(8, 0), (9, 0)]),
    _ex(3, "High 8, High 10, 11 any 7. Play 7 and 9.",
        (HIGH_8, HIGH_10, ELEVEN, ANY_7), [(9, 7)]),
    _ex(4, "High 6, 5, Gee Jun any 2 or 12. Play 7 and 9.", (*_HSG, TEEN_OR_DAY), [(9, 7)]),
    _ex(5, "High 6, 5, Gee Jun any 7. Play 2 and 9.", (*_HSG, ANY_7), [(9, 2)]),
    _ex(6, "High 6, 5, Gee Jun any 8. Play 3 and 9.", (*_HSG, ANY_8), [(9, 3)]),
    _ex(7, "High 6, 5, Gee Jun any 10. Play 5 and 9.", (*_HSG, ANY_10), [(9, 5)]),
    _ex(8, "High 6, 5, Gee Jun and 11. Play 6 and 9.", (*_HSG, ELEVEN), [(9, 6)]),
    _ex(9, "High 6, Low 6, 5 and Gee Jun. Play 1 and 9.", (HIGH_6, LOW_6, FIVE, GEE_JUN),
        [(9, 1)]),
    _ex(10, "High 6, 5, Gee Jun and nine. Play 4 and 9.", (*_HSG, NINE), [(9, 4)]),
    _ex(11, "High 4, Low 4, 5 any 6. Play 0 and 9.", (HIGH_4, LOW_4, FIVE, ANY_6), [(9, 0)]),
    _ex(12, "High 6, Low 6, 2 or 12 with any 4 or 5. Play 0 and 8 or 1 and 8.",
        (HIGH_6, LOW_6, TEEN_OR_DAY, ANY_4 | FIVE), [(8, 0), (8, 1)]),
    _ex(13, "High 4, Low 4, 5, Gee Jun. Play 7 and 9 with the high 4 on the high hand.",
        (HIGH_4, LOW_4, FIVE, GEE_JUN), [(9, 7)], on_high=HIGH_4),
    _ex(14, "High 8, Low 8, High 6 with any 7. Play 4 and 5 with the high 8 on the high hand.",
        (HIGH_8, LOW_8, HIGH_6, ANY_7), [(5, 4)], on_high=HIGH_8),
    _ex(15, "High 8, Low 8, High 4 with any 7. Play 2 and 5 with the high 8 on the high hand.",
        (HIGH_8, LOW_8, HIGH_4, ANY_7), [(5, 2)], on_high=HIGH_8),
    _ex(16, "High 8, Low 8, High 4 with any 6. Play 2 and 4 with the High 8 on the high hand.",
        (HIGH_8, LOW_8, HIGH_4, ANY_6), [(4, 2)], on_high=HIGH_8),
    _ex(17, "High 10, Low 10, High 6 with any 7. Play 6 and 7 with the high 10 on the high hand.",
        (HIGH_10, LOW_10, HIGH_6, ANY_7), [(7, 6)], on_high=HIGH_10),
    _ex(18, "High 4, High 10, Low 4, Eleven. Play 4 and 5 with High 4 on the high hand.",
        (HIGH_4, HIGH_10, LOW_4, ELEVEN), [(5, 4)], on_high=HIGH_4),
    _ex(19, "High 10, High 8, Low 8 and 9. Play 7 and 8 with the High 8 on the low hand.",
        (HIGH_10, HIGH_8, LOW_8, NINE), [(8, 7)], on_low=HIGH_8),
)


def _norm(tiles: Iterable[Tile]) -> tuple[str, ...]:
    return tuple(sorted(t.notation for t in tiles))


def _exception_index() -> dict[tuple[str, ...], HouseException]:
    index: dict[tuple[str, ...], HouseException] = {}
    for ex in EXCEPTIONS:
        for hand in ex.hands():
            if hand in index:  # two lines describing one hand would make the table ambiguous
                raise AssertionError(f"{hand} is in {index[hand].ref} and {ex.ref}")
            index[hand] = ex
    return index


EXCEPTION_INDEX: dict[tuple[str, ...], HouseException] = _exception_index()

# -- decisions --------------------------------------------------------------------------------

_WONG_KINDS = (Kind.WONG, Kind.GONG, Kind.HIGH_NINE)
FIRST_SIX = 6  # single_rank <= 6: Teen, Day, High 8, High 4, High 10, High 6 (principle 3)


@dataclass(frozen=True, slots=True)
class _Hand4:
    tiles: tuple[Tile, ...]  # sorted, highest single rank first
    settings: tuple[Setting, ...]


Decision = tuple[Setting, str]
Rule = Callable[[_Hand4], Decision | None]


def _pts(s: Setting) -> tuple[int, int]:
    return (s.high.points, s.low.points)


def _has(hand: TwoTileHand, cls: frozenset[Tile]) -> bool:
    return hand.first in cls or hand.second in cls


def _best(cands: Sequence[Setting]) -> Setting:
    """Deterministic last resort between settings equal for every rule: strongest, then by
    notation (only reached by equivalent settings, e.g. which tile of a split mixed pair
    goes with which)."""
    return max(cands, key=lambda s: (s.high.key, s.low.key, _ident(s)))


def _ident(s: Setting) -> tuple[str, ...]:
    return (*(t.notation for t in s.high.tiles), *(t.notation for t in s.low.tiles))


def _pairs_in(h: _Hand4) -> list[Setting]:
    return [s for s in h.settings if s.high.kind is Kind.PAIR or s.low.kind is Kind.PAIR]


def rule_two_pairs(h: _Hand4) -> Decision | None:
    """App2 §1 "When you have two ranking pairs, play the two pairs as two hands"."""
    for s in h.settings:
        if s.high.kind is Kind.PAIR and s.low.kind is Kind.PAIR:
            return s, "App2 §1 two ranking pairs"
    return None


def rule_never_split(h: _Hand4) -> Decision | None:
    """App2 §2 "Never split the following pairs"."""
    for s in _pairs_in(h):
        if s.high.ranking in NEVER_SPLIT:
            return s, f"App2 §2 never split {_PAIR_NAME[s.high.ranking]}"
    return None


def rule_split_table(h: _Hand4) -> Decision | None:
    """App2 §3 "Split:" the table as data; a pair it does not list is kept."""
    kept = _pairs_in(h)
    if not kept:
        return None
    pair = kept[0].high  # §1 and §2 passed: exactly one pair, on the high hand
    x, y = kept[0].low.tiles
    for entry in SPLIT_TABLE:
        if pair.ranking not in (_PAIR[p] for p in entry.pairs):
            continue
        a, b = (_NUM[w] for w in entry.with_)
        if (x in a and y in b) or (x in b and y in a):
            # The split settings are the ones with a pair tile in each hand; with a mixed pair
            # both are equal in points and rank, so which partner goes where is immaterial.
            split = [s for s in h.settings if s.high.kind is not Kind.PAIR]
            return _best(split), f"App2 §3 split {_PAIR_NAME[pair.ranking]} with " + " and ".join(
                entry.with_
            )
    return kept[0], f"App2 §3 keep {_PAIR_NAME[pair.ranking]} (no split listed)"


def _fourth_tile(h: _Hand4) -> Tile | None:
    """The tile left over when one Teen or Day can make two different Wong-class hands."""
    heads = [t for t in h.tiles if t in TEEN_OR_DAY]
    if len(heads) != 1:
        return None
    others = [t for t in h.tiles if t is not heads[0]]
    rest = [t for t in others if t.pips not in (7, 8, 9)]
    return rest[0] if len(rest) == 1 else None


_PREF = {Kind.HIGH_NINE: 3, Kind.GONG: 2, Kind.WONG: 1}  # §4.2


def rule_wong_gong_high_nine(h: _Hand4) -> Decision | None:
    """App2 §4.1-4.3 and §5.1-5.2."""
    cands = [s for s in h.settings if s.high.kind in _WONG_KINDS or s.low.kind in _WONG_KINDS]
    if not cands:
        return None
    kinds = {hand.kind for s in cands for hand in (s.high, s.low) if hand.kind in _WONG_KINDS}
    pref = dict(_PREF)
    rule = "App2 §4.1 play Wong, Gong or High Nine"
    if len(kinds) > 1:
        rule = "App2 §4.2 High Nine over Gong, Gong over Wong"
        fourth = _fourth_tile(h)
        if fourth in ELEVEN and Kind.WONG in kinds:
            pref[Kind.WONG] = 4
            rule = "App2 §5.2 Wong when the fourth tile is eleven"
        elif fourth in ANY_4 and {Kind.GONG, Kind.HIGH_NINE} <= kinds:
            pref[Kind.GONG] = 4
            rule = "App2 §5.1 Gong over High Nine when the fourth tile is four"

    def grade(s: Setting) -> int:
        return max(pref.get(hand.kind, 0) for hand in (s.high, s.low))

    top = max(grade(s) for s in cands)
    cands = [s for s in cands if grade(s) == top]
    if TEEN in h.tiles and DAY in h.tiles:
        with_teen_high = [s for s in cands if s.in_high(TEEN)]
        if with_teen_high and len(with_teen_high) < len(cands):
            cands = with_teen_high
            rule += "; App2 §4.3 Teen on the high hand"
    # §4.1 "even at the expense of the low hand": the low hand only decides between equals.
    best_low = max(s.low.key for s in cands)
    cands = [s for s in cands if s.low.key == best_low]
    return _best(cands), rule


# -- general play (§6) and its tie-break ------------------------------------------------------


def _closest(settings: Sequence[Setting]) -> list[Setting]:
    """§6.1: the highest low hand, then the highest high hand, in points.

    Equivalently: of the settings that no other setting beats on both hands ("unless they can be
    set to a higher value"), the one with the hands closest together.
    """
    best = max((s.low.points, s.high.points) for s in settings)
    return [s for s in settings if (s.low.points, s.high.points) == best]


def _apart(s: Setting, a: Tile, b: Tile) -> bool:
    return s.in_high(a) != s.in_high(b)


def _settle(h: _Hand4, cands: Sequence[Setting], principle3: bool) -> Decision:
    """Choose between settings of equal points: §6.2/§6.3/§6.4, with principle 3 if asked."""
    cands = list(cands)
    if len(cands) == 1:
        return cands[0], ""
    high_pts = cands[0].high.points
    top, second = h.tiles[0], h.tiles[1]  # the two highest-ranking tiles (no pair here)

    if principle3 and second.single_rank <= FIRST_SIX:
        apart = [s for s in cands if _apart(s, top, second)]
        if apart and len(apart) < len(cands):
            cands = apart
            if len(cands) == 1:
                return cands[0], "App2 §7 principle 3 first-six tiles apart"

    def place(cands: list[Setting], tile: Tile) -> list[Setting]:
        want_high = high_pts >= 8  # §6.3 high tile on the high hand, §6.2 on the low hand
        return [s for s in cands if s.in_high(tile) == want_high] or cands

    rule = "App2 §6.3 high tile on the high hand" if high_pts >= 8 else (
        "App2 §6.2 high tile on the low hand")
    placed = place(cands, top)
    if len(placed) < len(cands):
        cands = placed
        if len(cands) == 1:
            return cands[0], rule
    apart = [s for s in cands if _apart(s, top, second)]
    if apart and len(apart) < len(cands):
        cands = apart
        if len(cands) == 1:
            return cands[0], "App2 §6.4 two highest tiles apart"
    # §6.2/§6.3 once more, for the highest tile whose hand is still a choice.
    for tile in h.tiles[1:]:
        placed = place(cands, tile)
        if len(placed) < len(cands):
            cands = placed
            if len(cands) == 1:
                return cands[0], rule + f" (next tile {tile.notation})"
    return _best(cands), "App2 §6.1"


def _general(h: _Hand4, principle3: bool) -> Decision:
    setting, why = _settle(h, _closest(h.settings), principle3)
    return setting, "App2 §6.1 closest hands" + (f"; {why}" if why else "")


def rule_listed_exception(h: _Hand4) -> Decision | None:
    """App2 §7 "Exceptions to General Play": the listed hands, as data."""
    ex = EXCEPTION_INDEX.get(_norm(h.tiles))
    if ex is None:
        return None
    cands = [
        s for s in h.settings
        if _pts(s) in ex.points
        and (not ex.on_high or _has(s.high, ex.on_high))
        and (not ex.on_low or _has(s.low, ex.on_low))
    ]
    if not cands:  # the import-time check in the tests makes this unreachable
        raise AssertionError(f"{ex.ref} cannot be played with {_norm(h.tiles)}")
    best_low = max(s.low.points for s in cands)
    setting, why = _settle(h, [s for s in cands if s.low.points == best_low], principle3=False)
    return setting, f"App2 §7 {ex.ref} {ex.text}" + (f" ({why})" if why else "")


HIGH_6_RANK = next(iter(HIGH_6)).single_rank


def _nine_ranked_high_6(s: Setting) -> bool:
    """Principle 4's "high 6 ranked nine or better": 9 points, best tile High 6 or higher."""
    return s.high.points == 9 and s.high.first.single_rank <= HIGH_6_RANK


def principle_targets(h: _Hand4, current: Setting) -> tuple[list[Setting], str] | None:
    """The settings the §7 principles 1, 2 and 4 move a §6.1 setting to, if any."""
    lo, hi = current.low.points, current.high.points
    if lo == 1:
        better = [s for s in h.settings if s.high.points in (8, 9) and s.high.points > hi]
        if better:
            return better, "App2 §7 principle 1 (1 low: play the 8 or 9)"
    if lo == 2 and hi < 8:
        eights = [s for s in h.settings if s.high.points == 8 and _has(s.high, TEEN_OR_DAY)]
        if eights:
            return eights, "App2 §7 principle 2 (2 low: play 8 with Teen or Day)"
    five_gee = any(
        _has(hand, FIVE) and _has(hand, GEE_JUN) for hand in (current.high, current.low)
    )
    if five_gee and not _nine_ranked_high_6(current):
        nines = [s for s in h.settings if _nine_ranked_high_6(s)]
        if nines:
            return nines, "App2 §7 principle 4 (5 with Gee Jun: a High 6 nine or better)"
    return None


def rule_principles(h: _Hand4) -> Decision | None:
    """App2 §7 "may also be known as using the format outlined below", for unlisted hands."""
    current, _ = _general(h, principle3=False)
    target = principle_targets(h, current)
    if target is not None:
        cands, why = target
        best = max((s.high.points, s.low.points) for s in cands)
        cands = [s for s in cands if (s.high.points, s.low.points) == best]
        setting, tie = _settle(h, cands, principle3=True)
        if setting != current:
            return setting, why + (f"; {tie}" if tie else "")
    setting, why = _general(h, principle3=True)
    if setting != current:
        return setting, why
    return None


def rule_general_play(h: _Hand4) -> Decision:
    """App2 §6.1-6.4."""
    return _general(h, principle3=False)


# The order of application: the first rule that decides wins.
RULES: tuple[Rule, ...] = (
    rule_two_pairs,
    rule_never_split,
    rule_split_table,
    rule_wong_gong_high_nine,
    rule_listed_exception,
    rule_principles,
    rule_general_play,
)


@cache
def _decide(key: tuple[str, ...]) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], str]:
    tiles = tuple(sorted((BY_NOTATION[n] for n in key), key=lambda t: (t.single_rank, t.notation)))
    h = _Hand4(tiles, tuple(all_settings(tiles)))
    for rule in RULES:
        decision = rule(h)
        if decision is not None:
            setting, why = decision
            return (_norm(setting.high.tiles), _norm(setting.low.tiles)), why
    raise AssertionError("general play always decides")  # pragma: no cover


def explain_nsw(tiles: Sequence[Tile]) -> tuple[Setting, str]:
    """The NSW house way of four tiles and the id of the App2 rule that decided it.

    Raises InputError (from all_settings) unless given four tiles the set can hold. The setting
    returned is the element of `all_settings(tiles)` with the chosen split.
    """
    settings = all_settings(tiles)
    (high, low), why = _decide(_norm(tiles))
    for s in settings:
        split = (_norm(s.high.tiles), _norm(s.low.tiles))
        if split in ((high, low), (low, high)):
            return s, why
    raise AssertionError("the house way is one of the hand's settings")  # pragma: no cover


def house_way_nsw(tiles: Sequence[Tile]) -> Setting:
    """The setting of four tiles by the NSW house way (The Star Sydney 2024, Appendix 2)."""
    return explain_nsw(tiles)[0]
