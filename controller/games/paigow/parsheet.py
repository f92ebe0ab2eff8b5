"""Exact par sheet of Pai Gow: every player hand against every banker hand, both set house way.

35,960 player hands x 20,475 banker hands from the remaining 28 tiles = 736,281,000 matchups.
Rather than loop over physical tiles, hands are grouped by their multiset of tile kinds (a
"type"): a type T occurs prod_k C(copies_k, T_k) times, and after it is dealt a banker type U
can be dealt in prod_k C(copies_k - T_k, U_k) ways. Outcomes depend only on the types, so the
count over types, vectorised with numpy across banker types, is exact.

The edges are per matchup, with the commission as a continuous rate (the table's chip rounding,
NSW 14.3, is left out, as in published analyses).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from controller.games.paigow.money import BASIS_POINTS, STANDARD_COMMISSION_BP
from controller.games.paigow.profiles import Profile
from controller.games.paigow.settings import Setting
from controller.games.paigow.tiles import TILES, Tile

HouseWay = Callable[[Sequence[Tile]], Setting]
Progress = Callable[[int, int], None]

_COMB = np.array([[1, 0, 0], [1, 1, 0], [1, 2, 1]], dtype=np.int64)  # C(n, k), n, k in 0..2


@dataclass(frozen=True, slots=True)
class ParSheet:
    profile: Profile
    commission_bp: int
    matchups: int
    wins: int
    pushes: int
    losses: int

    @property
    def house_edge_player(self) -> Fraction:
        """The house's expected gain per unit on a player's wager against the bank."""
        net = self.wins * (BASIS_POINTS - self.commission_bp) - self.losses * BASIS_POINTS
        return Fraction(-net, BASIS_POINTS * self.matchups)

    @property
    def house_edge_banker(self) -> Fraction:
        """The expected loss per unit of a player/banker against one player, commission included."""
        net = self.losses * (BASIS_POINTS - self.commission_bp) - self.wins * BASIS_POINTS
        return Fraction(-net, BASIS_POINTS * self.matchups)

    def as_json(self) -> dict[str, object]:
        n = self.matchups
        return {
            "rules": self.profile.value,
            "commission": self.commission_bp / BASIS_POINTS,
            "matchups": n,
            "player_win": self.wins / n,
            "push": self.pushes / n,
            "player_lose": self.losses / n,
            "house_edge_player": float(self.house_edge_player),
            "house_edge_banker": float(self.house_edge_banker),
            "counts": {"player_win": self.wins, "push": self.pushes, "player_lose": self.losses},
            "exact": {
                "house_edge_player": str(self.house_edge_player),
                "house_edge_banker": str(self.house_edge_banker),
            },
        }


@dataclass(frozen=True, slots=True)
class HandTypes:
    """Every four-tile hand type with how often it is dealt and its house-way keys."""

    counts: np.ndarray  # (n_types, 21): copies of each tile kind in the hand
    multiplicity: np.ndarray  # (n_types,): physical hands of this type, sums to 35,960
    high: np.ndarray  # (n_types,): strength of the high hand as the profile compares it
    low: np.ndarray  # (n_types,)


def hand_types(profile: Profile, house_way: HouseWay) -> HandTypes:
    copies = np.array([t.copies for t in TILES], dtype=np.int64)
    index = {t: i for i, t in enumerate(TILES)}
    pool = [t for t in TILES for _ in range(t.copies)]
    seen: dict[tuple[int, ...], None] = {}
    for combo in itertools.combinations(range(len(pool)), 4):
        seen.setdefault(tuple(sorted(index[pool[i]] for i in combo)), None)
    kinds = list(seen)
    counts = np.zeros((len(kinds), len(TILES)), dtype=np.int64)
    high = np.zeros(len(kinds), dtype=np.int64)
    low = np.zeros(len(kinds), dtype=np.int64)
    for row, kind in enumerate(kinds):
        for k, n in Counter(kind).items():
            counts[row, k] = n
        setting = house_way([TILES[k] for k in kind])
        # ACT 12.3/12.5: zero high hands are still compared by their highest tile.
        high[row] = setting.high.key_by_tile if profile is Profile.ACT else setting.high.key
        low[row] = setting.low.key
    multiplicity = _COMB[copies[None, :], counts].prod(axis=1)
    return HandTypes(counts, multiplicity, high, low)


def matchup_counts(types: HandTypes, i: int) -> tuple[int, int, int]:
    """(wins, pushes, losses) of one physical player hand of type i against every banker hand."""
    copies = np.array([t.copies for t in TILES], dtype=np.int64)
    remaining = copies - types.counts[i]
    ways = _COMB[remaining[None, :], types.counts].prod(axis=1)
    p_high = types.high[i] > types.high
    p_low = types.low[i] > types.low
    wins = int(ways[p_high & p_low].sum())
    losses = int(ways[~p_high & ~p_low].sum())
    return wins, int(ways.sum()) - wins - losses, losses


def compute(
    profile: Profile,
    house_way: HouseWay,
    commission_bp: int = STANDARD_COMMISSION_BP,
    progress: Progress | None = None,
) -> ParSheet:
    types = hand_types(profile, house_way)
    n = len(types.multiplicity)
    wins = pushes = losses = 0
    for i in range(n):
        w, p, lose = matchup_counts(types, i)
        m = int(types.multiplicity[i])
        wins, pushes, losses = wins + m * w, pushes + m * p, losses + m * lose
        if progress is not None and (i % 256 == 0 or i == n - 1):
            progress(i + 1, n)
    return ParSheet(profile, commission_bp, wins + pushes + losses, wins, pushes, losses)
