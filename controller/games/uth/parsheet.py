"""Exact par sheet: every five- and seven-card hand counted by category, the Trips return and
the jackpot's event probabilities and return (issue 3, "Par sheet").

Counting, not dealing: a hand is a rank pattern (how many cards of each rank) times a suit
distribution. For a rank pattern with counts c_r there are prod C(4, c_r) hands and, unless
five of them share a suit, the pattern alone decides the hand (``nonflush_rank``). The hands
where some suit holds k >= 5 of n <= 7 cards are counted apart: k ranks of that suit (a 13-bit
mask) and n - k <= 2 cards from the other three suits, which cannot make a second flush. Those
hands are moved from their pattern's category to the flush table's category. That is 49,205
patterns and about 140,000 flush cases for seven cards instead of 133,784,560 evaluations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from math import comb, prod

from controller.games.uth.evaluator import (
    Category,
    category_of,
    flush_rank,
    nonflush_rank,
    rank_multisets,
)
from controller.games.uth.jackpot import expected_return
from controller.games.uth.paytables import TRIPS_PAYTABLE, JackpotPayTable, PayTable

Progress = Callable[[str, int, int], None]  # (stage, done, total)


def _other_suits(extra: int) -> list[tuple[tuple[int, ...], int]]:
    """Rank patterns of ``extra`` (0..2) cards from three suits, with the number of ways."""
    if extra == 0:
        return [((0,) * 13, 1)]
    out = []
    for counts in rank_multisets(extra):
        out.append((counts, prod(comb(3, c) for c in counts)))
    return out


def category_counts(n: int, progress: Progress | None = None) -> dict[Category, int]:
    """Number of ``n``-card hands (5 <= n <= 7) of one deck in each category, exactly."""
    if not 5 <= n <= 7:
        raise ValueError("n must be 5, 6 or 7")
    counts = dict.fromkeys(Category, 0)
    patterns = rank_multisets(n)
    step = max(1, len(patterns) // 50)
    for i, pattern in enumerate(patterns):
        counts[category_of(nonflush_rank(pattern))] += prod(comb(4, c) for c in pattern)
        if progress and i % step == 0:
            progress(f"{n}-card rank patterns", i, len(patterns))
    # Hands holding k >= 5 cards of one suit (4 suits, symmetric).
    for k in range(5, n + 1):
        others = _other_suits(n - k)
        masks = [sum(1 << r for r in c) for c in combinations(range(13), k)]
        for j, mask in enumerate(masks):
            flush_category = category_of(flush_rank(mask))
            for other, ways in others:
                pattern = [((mask >> r) & 1) + other[r] for r in range(13)]
                counts[category_of(nonflush_rank(pattern))] -= 4 * ways
                counts[flush_category] += 4 * ways
            if progress and j % 100 == 0:
                progress(f"{n}-card flushes ({k} suited)", j, len(masks))
    return counts


@dataclass(frozen=True)
class TripsPar:
    hit: dict[Category, Fraction]  # probability of each paying category
    hit_frequency: Fraction  # probability the Trips wager wins
    return_: Fraction  # expected amount back (stake + winnings) per unit wagered
    house_edge: Fraction


def trips_par(seven: Mapping[Category, int], table: PayTable = TRIPS_PAYTABLE) -> TripsPar:
    """Trips settles on the best five of the player's seven cards (10.7.1), regardless of the
    dealer; assumes the player does not fold (a fold forfeits Trips, 9.1.1)."""
    total = sum(seven.values())
    hit = {c: Fraction(seven[c], total) for c in table}
    win_p = sum(hit.values(), Fraction(0))
    back = sum((p * (1 + Fraction(table[c].win, table[c].per)) for c, p in hit.items()), Fraction())
    return TripsPar(hit, win_p, back, 1 - back)


@dataclass(frozen=True)
class JackpotPar:
    probability: dict[Category, Fraction]  # per event, on hole cards + flop (15.2.6)
    fixed_return: Fraction  # fixed awards per unit wagered
    return_at_pool: Fraction  # everything per unit wagered with the meter at ``pool``
    long_run_return: Fraction  # fixed + increment + max(hidden, P(royal) * seed / wager)
    break_even_pool: Fraction | None  # meter at which return_at_pool reaches 1


JACKPOT_EVENTS = (
    Category.ROYAL_FLUSH,
    Category.STRAIGHT_FLUSH,
    Category.FOUR_OF_A_KIND,
    Category.FULL_HOUSE,
    Category.FLUSH,
)


def jackpot_par(
    five: Mapping[Category, int],
    table: JackpotPayTable,
    *,
    pool: int,
    wager: int,
    seed: int,
    increment: Fraction,
    hidden: Fraction = Fraction(0),
) -> JackpotPar:
    """One jackpot wager's odds and return. The qualifying hand is five cards (15.2.6), so the
    five-card distribution gives the event probabilities exactly. ``long_run_return`` is the
    steady-state estimate: every meter contribution is paid out eventually, plus the seed of
    each reset unless the hidden rate already funds it; it assumes single winners and that the
    guarantees do not bind (seed >= both minimums' pools)."""
    total = sum(five.values())
    p = {c: Fraction(five[c], total) for c in Category}
    fixed = sum((p[c] * a for c, a in table.fixed.items()), Fraction()) / wager
    at_pool = expected_return(pool, wager, table, p)
    seed_rate = max(hidden, p[Category.ROYAL_FLUSH] * seed / wager)
    slope = (
        p[Category.ROYAL_FLUSH] * table.royal_share
        + p[Category.STRAIGHT_FLUSH] * table.straight_flush_share
    ) / wager
    break_even = (1 - fixed) / slope if slope else None
    return JackpotPar(
        {c: p[c] for c in JACKPOT_EVENTS}, fixed, at_pool, fixed + increment + seed_rate, break_even
    )


@dataclass(frozen=True)
class ParSheet:
    seven_card: dict[Category, int]
    five_card: dict[Category, int]
    trips: TripsPar
    jackpot: JackpotPar


def par_sheet(
    *,
    trips_table: PayTable = TRIPS_PAYTABLE,
    jackpot_table: JackpotPayTable | None = None,
    pool: int = 5_000_000,
    wager: int = 100,
    seed: int = 5_000_000,
    increment: Fraction = Fraction(1, 10),
    hidden: Fraction = Fraction(0),
    progress: Progress | None = None,
) -> ParSheet:
    five = category_counts(5, progress)
    seven = category_counts(7, progress)
    jackpot = jackpot_par(
        five,
        jackpot_table or JackpotPayTable(),
        pool=pool,
        wager=wager,
        seed=seed,
        increment=increment,
        hidden=hidden,
    )
    return ParSheet(seven, five, trips_par(seven, trips_table), jackpot)
