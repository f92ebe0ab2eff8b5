"""Poker hand evaluator: the best five of five, six or seven cards (rules 8.1-8.2, 10.1, 10.6).

``hand_rank(cards)`` returns a dense integer rank: 1 (7-5-4-3-2 high) .. 7462 (royal flush).
Higher is better and two hands tie exactly when their ranks are equal, so 10.7 comparisons are
integer comparisons. Suits never rank (8.1) and an ace plays high or low in a straight
(3.3.1.1-3.3.1.2, 8.2(b), 8.2(f)).

How it is fast: each card maps to one integer holding a 4-bit count for its rank (bits 0..51)
and a 4-bit count for its suit (bits 52..67). Summing the cards' integers gives the rank
multiset and the suit counts at once; no suit holding five cards -> the rank multiset's entry
in a flat table. A flush suit -> one list lookup on the 13-bit rank mask of that suit. With
five of one suit among at most seven cards there is no room for quads or a full house, so the
flush table alone decides those hands. Both tables are computed (tables_compute.py) from the
7,462 classes of five-card hands (about 0.6 s) by taking, for six and seven cards, the best table
entry after removing one card: once, when the package is built, into a file loaded on first use
(or by `build_tables`) with a checked digest (tables_file.py); computed here only when that file
is absent.

The rank-multiset table is compact rather than a dict (a dict of its 73,775 multisets held
~5.9 MB of the daemon's ~45 MB; this one ~0.5 MB, docs/uth.md "Benchmark"): a multiset of at
most seven cards splits into its low ranks (2-8, key bits 0..27) and high ranks (9-A, bits
28..51). `_HIGH` numbers the high parts in order of their card count, so those of at most t
cards come first; `_LOW` gives each low part of n cards an offset to a block of as many entries
as there are high parts of at most 7 - n cards. Entry = `_LOW[low] + _HIGH[high]`: one per
multiset of at most seven cards (~76,000), in an array of 16-bit ranks.

In memory (issue 31), `_LOW` and `_HIGH` are arrays indexed by the part's counts read as a
base-5 number (a rank holds 0-4 cards: 5**7 low, 5**6 high indices), not dicts keyed by the
nibble form: ~0.34 MB rather than ~0.7 MB of dicts and their int objects. So a card's integer
holds its rank as a base-5 digit (low ranks in bits 0..16, high ranks in bits 17..30) beside
its suit nibble, and summing cards sums the digits: a rank's count never exceeds four, so a
digit never carries. The tables file keeps the nibble-keyed form (`_base5` converts it).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

from controller.games.uth import tables_file
from controller.games.uth.cards import RANKS, Card, check_distinct, rank_of
from controller.games.uth.category import Category
from controller.games.uth.tables_compute import (
    ACE,
    LOW_RANKS,
    MOST,
    compute_tables,
    multisets,
    rank_key,
)
from shared.errors import InputError

_SUIT_SHIFT = 52


# In memory: the base-5 rank digits (the module's docstring), in two fields.
_LOW_INDICES = 5**LOW_RANKS
_HIGH_INDICES = 5 ** (13 - LOW_RANKS)
_DIGITS_LOW_MASK = (1 << _LOW_INDICES.bit_length()) - 1  # bits 0..16
_DIGITS_HIGH_SHIFT = _LOW_INDICES.bit_length()  # 17
_DIGITS_HIGH_MASK = (1 << _HIGH_INDICES.bit_length()) - 1  # 14 bits


def _rank_digit(rank: int) -> int:
    """+1 card of `rank` in the base-5 fields."""
    if rank < LOW_RANKS:
        return 5**rank
    return 5 ** (rank - LOW_RANKS) << _DIGITS_HIGH_SHIFT


# Per-card integer: +1 in the card's base-5 rank digit and +1 in its suit nibble.
_CARD_VALUE: list[int] = [
    _rank_digit(c >> 2) | (1 << (_SUIT_SHIFT + 4 * (c & 3))) for c in range(52)
]


# Byte k of a nibble key holds places 2k and 2k+1: its share of the base-5 number, by its value.
_BYTE0, _BYTE1, _BYTE2, _BYTE3 = (
    [((b >> 4) * 5 + (b & 15)) * 25**k for b in range(256)] for k in range(4)
)
assert LOW_RANKS <= 7  # four bytes hold seven places: the last byte's low nibble only


def _base5(nibbles: int) -> int:
    """A part's nibble key (4 bits a rank's count) as the base-5 number of the same counts: the
    sum of nibble * 5**place over the key's seven places, by bytes (a loop over the places was
    half of loading the tables before READY, 13 ms of 26 ms here)."""
    return (_BYTE0[nibbles & 255] + _BYTE1[nibbles >> 8 & 255] + _BYTE2[nibbles >> 16 & 255]
            + _BYTE3[nibbles >> 24 & 15])


# Loaded (or computed) on first use, not at import: head office imports this module for
# `Category` and evaluates a hand only when a jackpot hit arrives. Filled in place, so every
# reference to these objects sees them once loaded.
_LOW: array[int] = array("I")  # by the low part's base-5 index: its offset in _NONFLUSH
_HIGH: array[int] = array("H")  # by the high part's base-5 index: its entry in a block
_NONFLUSH: array[int] = array("H")
_FLUSH: array[int] = array("H")  # not a list: 8,192 int objects are ~0.3 MB of the daemon
_CATEGORY_START: list[int] = []
MAX_RANK = 7462  # the royal flush: distinct five-card hand values (checked when built)


def _tables() -> None:
    if not _FLUSH:
        # A file with a wrong digest raises TablesFileError: refused, never used or recomputed.
        parts = tables_file.load_parts()
        low: Iterable[tuple[int, int]]
        high: Iterable[tuple[int, int]]
        flush: Sequence[int]
        if parts is None:
            low_dict, high_dict, nonflush, flush, starts = compute_tables()
            low, high = low_dict.items(), high_dict.items()
        else:  # the arrays as they are: no dicts on the way (tables_file.load_parts)
            low_keys, low_values, high_keys, high_values, nonflush, flush, start_items = parts
            low = zip(low_keys, low_values, strict=True)
            high = zip(high_keys, high_values, strict=True)
            starts = start_items.tolist()
        assert max(flush) == MAX_RANK, max(flush)
        _LOW.frombytes(bytes(4 * _LOW_INDICES))
        for key, offset in low:
            _LOW[_base5(key)] = offset
        _HIGH.frombytes(bytes(2 * _HIGH_INDICES))
        for key, entry in high:
            _HIGH[_base5(key)] = entry
        _NONFLUSH.extend(nonflush)
        _CATEGORY_START.extend(starts)
        _FLUSH.extend(flush)  # last: a non-empty _FLUSH means every table is built


def build_tables() -> None:
    """Load (or compute) the tables now rather than at the first hand (the UTH round machine
    does, so that the daemon has them before READY, not in its event loop at the first showdown).
    Raises `tables_file.TablesFileError` for a tables file with a wrong digest."""
    _tables()


def hand_rank(cards: Sequence[Card]) -> int:
    """Rank of the best five of 5-7 distinct cards. Hot path: no validation (``evaluate`` checks;
    every caller passes cards it has checked): more than seven cards may rank as some other
    multiset's entry, fewer than five rank 0, which ``category_of`` refuses."""
    total = sum(map(_CARD_VALUE.__getitem__, cards))
    suits = total >> _SUIT_SHIFT
    try:  # free in 3.11 unless raised: the tables' first use builds them
        if (suits + 0x3333) & 0x8888:  # some suit nibble >= 5: a flush (8.2(e))
            for suit in range(4):
                if (suits >> (4 * suit)) & 15 >= 5:
                    mask = 0
                    for c in cards:
                        if c & 3 == suit:
                            mask |= 1 << (c >> 2)
                    return _FLUSH[mask]
        # The slot (the base-5 fields), the suit counts above the rank fields masked off.
        return _NONFLUSH[
            _LOW[total & _DIGITS_LOW_MASK]
            + _HIGH[(total >> _DIGITS_HIGH_SHIFT) & _DIGITS_HIGH_MASK]
        ]
    except LookupError:
        if _FLUSH:
            raise
        _tables()
        return hand_rank(cards)


def category_of(rank: int) -> Category:
    """Category of a rank from ``hand_rank``."""
    if not 1 <= rank <= MAX_RANK:
        raise InputError(f"bad hand rank {rank!r}")
    if not _FLUSH:
        _tables()
    return Category(bisect_right(_CATEGORY_START, rank) - 1)


def category_floor(category: Category) -> int:
    """Lowest rank in ``category``; ``rank >= category_floor(STRAIGHT)``: straight or better."""
    _tables()
    return _CATEGORY_START[category]


def _display_order(five: Sequence[Card]) -> tuple[Card, ...]:
    """Groups first, then high to low; a five-high straight shows the ace last."""
    ranks = [rank_of(c) for c in five]
    counts = {r: ranks.count(r) for r in ranks}
    if sorted(ranks) == [0, 1, 2, 3, ACE]:
        return tuple(sorted(five, key=lambda c: (rank_of(c) + 1) % 13, reverse=True))
    return tuple(sorted(five, key=lambda c: (counts[rank_of(c)], c), reverse=True))


@dataclass(frozen=True)
class HandValue:
    category: Category
    rank: int
    best: tuple[Card, ...]


def best_five(cards: Sequence[Card]) -> tuple[Card, ...]:
    """One five-card subset that achieves ``hand_rank(cards)`` (10.1.1-10.1.3, 10.6.1-10.6.3)."""
    target = hand_rank(cards)
    for five in combinations(cards, 5):
        if hand_rank(five) == target:
            return _display_order(five)
    raise AssertionError("unreachable: some five cards make the hand")


def evaluate(cards: Sequence[Card]) -> HandValue:
    """Validated evaluation of 5-7 distinct cards."""
    if not 5 <= len(cards) <= 7:
        raise InputError(f"need 5 to 7 cards, got {len(cards)}")
    check_distinct(cards)
    rank = hand_rank(cards)
    return HandValue(category_of(rank), rank, best_five(cards))


def describe_rank(rank: int) -> str:
    """Short human text, e.g. ``four_of_a_kind (rank 7297)``."""
    return f"{category_of(rank).label} (rank {rank})"


__all__ = [
    "MAX_RANK",
    "RANKS",
    "Category",
    "HandValue",
    "best_five",
    "build_tables",
    "category_floor",
    "category_of",
    "describe_rank",
    "evaluate",
    "hand_rank",
]


# --- table access for exact counting (parsheet) ------------------------------------------------


def rank_multisets(size: int) -> list[tuple[int, ...]]:
    """Every rank-count vector of ``size`` cards from one deck (counts per rank 2..A, <= 4)."""
    return list(multisets(size))


def nonflush_rank(counts: Sequence[int]) -> int:
    """Rank of 5-7 cards with these rank counts when no suit holds five of them."""
    if not 5 <= sum(counts) <= MOST:
        raise InputError(f"need 5 to 7 cards, got {sum(counts)}")
    _tables()
    low = _base5(rank_key(counts[:LOW_RANKS]))
    return _NONFLUSH[_LOW[low] + _HIGH[_base5(rank_key(counts[LOW_RANKS:]))]]


def flush_rank(mask: int) -> int:
    """Rank of the five to seven ranks in ``mask`` (13 bits) all of one suit."""
    _tables()
    return _FLUSH[mask]
