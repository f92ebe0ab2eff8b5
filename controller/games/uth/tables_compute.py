"""The hand evaluator's tables computed from rule 8 alone (`compute_tables`, about 0.6 s): by the
package's build, into the file a UTH table loads (tables_file.py), and by the evaluator only when
that file is absent. Its own module, apart from evaluator.py (which looks hands up) and
tables_file.py (which writes and reads the bytes), so that neither imports the other
(tests/test_architecture.py: no import circles, lazy ones included). evaluator.py's docstring
says what the tables hold and how they are laid out."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from itertools import combinations_with_replacement

from controller.games.uth.category import Category

# (_LOW, _HIGH, _NONFLUSH, _FLUSH, _CATEGORY_START) as computed: evaluator.py's tables, keyed by
# the rank parts' nibble form (`rank_key`), as the tables file keeps them.
Tables = tuple[dict[int, int], dict[int, int], "array[int]", "array[int] | list[int]", list[int]]

ACE = 12
_WHEEL = (1 << 12) | 0b1111  # A-2-3-4-5: the ace plays low (3.3.1.2)


def _straight_high(mask: int) -> int:
    """Highest rank of a five-card straight in a 13-bit rank mask, or -1."""
    for high in range(ACE, 3, -1):
        run = 0b11111 << (high - 4)
        if mask & run == run:
            return high
    if mask & _WHEEL == _WHEEL:
        return 3  # the five-high straight: the ace counts low (8.2(b), 8.2(f))
    return -1


def _score5(counts: Sequence[int], flush: bool) -> tuple[int, tuple[int, ...]]:
    """(category, tie-break ranks) of exactly five cards given rank counts; rule 8.2."""
    groups = sorted(((n, r) for r, n in enumerate(counts) if n), reverse=True)
    shape = tuple(n for n, _ in groups)
    order = tuple(r for _, r in groups)  # larger groups first (8.2(d), (h)), then higher ranks
    if shape == (1, 1, 1, 1, 1):
        mask = sum(1 << r for r in order)
        high = _straight_high(mask)
        if flush and high == ACE:
            return Category.ROYAL_FLUSH, ()
        if flush and high >= 0:
            return Category.STRAIGHT_FLUSH, (high,)
        if flush:
            return Category.FLUSH, order
        if high >= 0:
            return Category.STRAIGHT, (high,)
        return Category.HIGH_CARD, order
    category = {
        (4, 1): Category.FOUR_OF_A_KIND,
        (3, 2): Category.FULL_HOUSE,
        (3, 1, 1): Category.THREE_OF_A_KIND,
        (2, 2, 1): Category.TWO_PAIR,
        (2, 1, 1, 1): Category.ONE_PAIR,
    }[shape]
    return category, order


def multisets(size: int, ranks: int = 13) -> Iterator[tuple[int, ...]]:
    """Rank count vectors of ``size`` cards over the lowest ``ranks`` ranks of one deck (at most
    four of a rank). A generator: the build never holds the 49,205 seven-card ones at once."""
    for combo in combinations_with_replacement(range(ranks), size):
        counts = [0] * ranks
        for r in combo:
            counts[r] += 1
        if max(counts, default=0) <= 4:
            yield tuple(counts)


def rank_key(counts: Sequence[int]) -> int:
    """Rank counts as their nibble key: 4 bits a rank's count, the lowest rank lowest."""
    return sum(n << (4 * r) for r, n in enumerate(counts))


LOW_RANKS = 7  # 2..8: key bits 0..27
_LOW_MASK = (1 << (4 * LOW_RANKS)) - 1
_HIGH_SHIFT = 4 * LOW_RANKS
_HIGH_MASK = (1 << (4 * (13 - LOW_RANKS))) - 1
MOST = 7  # cards in a hand, at most


def _slot(key: int, low: dict[int, int], high: dict[int, int]) -> int:
    """The entry of a rank-multiset key (at most seven cards) in the compact table."""
    return low[key & _LOW_MASK] + high[key >> _HIGH_SHIFT]


def _index() -> tuple[dict[int, int], dict[int, int], int]:
    """(_LOW, _HIGH, entries): see the module's docstring."""
    high: dict[int, int] = {}
    up_to = [0] * (MOST + 1)  # up_to[t]: high parts of at most t cards
    for n in range(MOST + 1):
        for counts in multisets(n, 13 - LOW_RANKS):
            high[rank_key(counts)] = len(high)
        up_to[n] = len(high)
    low: dict[int, int] = {}
    entries = 0
    for n in range(MOST + 1):
        for counts in multisets(n, LOW_RANKS):
            low[rank_key(counts)] = entries
            entries += up_to[MOST - n]
    return low, high, entries


def compute_tables() -> Tables:
    """(_LOW, _HIGH, _NONFLUSH, _FLUSH, _CATEGORY_START) from rule 8 alone: what the build
    writes to the tables file (tables_file.py) and what evaluator.py falls back to without it."""
    five = list(multisets(5))
    flush_masks = [m for m in range(1 << 13) if m.bit_count() == 5]
    scores = {_score5(c, False) for c in five}
    scores.update(_score5([(m >> r) & 1 for r in range(13)], True) for m in flush_masks)
    ordered = sorted(scores)
    dense = {score: i + 1 for i, score in enumerate(ordered)}

    low, high, entries = _index()
    nonflush = array("H", bytes(2 * entries))  # 0: fewer than five cards, never looked up

    for counts in five:
        nonflush[_slot(rank_key(counts), low, high)] = dense[_score5(counts, False)]
    for size in (6, 7):  # best five of six / seven: best after removing any one card
        for counts in multisets(size):
            key = rank_key(counts)
            nonflush[_slot(key, low, high)] = max(
                nonflush[_slot(key - (1 << (4 * r)), low, high)] for r in range(13) if counts[r]
            )

    flush = [0] * (1 << 13)
    for m in flush_masks:
        flush[m] = dense[_score5([(m >> r) & 1 for r in range(13)], True)]
    for bits in (6, 7):
        for m in range(1 << 13):
            if m.bit_count() == bits:
                flush[m] = max(flush[m & ~(1 << r)] for r in range(13) if m >> r & 1)

    starts = [0] * len(Category)
    for i in range(len(ordered) - 1, -1, -1):
        starts[ordered[i][0]] = i + 1
    return low, high, nonflush, flush, starts
