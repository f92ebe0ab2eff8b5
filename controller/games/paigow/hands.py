"""Two-tile hands: pairs, Wongs, Gongs, High Nines and points, and their ranking.

Ranking (NSW 3.2 and Appendix 1; NZ 4.1-4.7 and Appendix 2; ACT 3.5-3.9 and Appendices A-B):
the 16 pairs (Gee Joon highest), then Teen Wong, Day Wong, Teen Gong, Day Gong, Teen High Nine,
Day High Nine (rankings 17-22), then hands by points (0-9). A Wong is Teen or Day with any 9, a
Gong with any 8, a High Nine with any 7 (the note under each Wong table). Points are the pips
mod 10, a Gee Joon tile counting 3 or 6, whichever is better (NSW 3.2.2, NZ 4.2). Equal points
are decided by the higher-ranking single tile of each hand (NSW 9.2.1.2, NZ 4.3, ACT 12.3).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from functools import cache

from controller.games.paigow.tiles import DAY, TEEN, Tile


class Kind(IntEnum):
    POINTS = 0
    HIGH_NINE = 1
    GONG = 2
    WONG = 3
    PAIR = 4


_WONG_CLASS = {  # (kind, with Teen) -> ranking 17..22
    (Kind.WONG, True): 17,
    (Kind.WONG, False): 18,
    (Kind.GONG, True): 19,
    (Kind.GONG, False): 20,
    (Kind.HIGH_NINE, True): 21,
    (Kind.HIGH_NINE, False): 22,
}

# Keys are integers, higher is better; the bands never overlap:
# points v>=1: 20*v + best single score (21..196); Wong class: 201..206; pairs: 301..316.
_PAIR_BASE = 300
_WONG_BASE = 200


@dataclass(frozen=True, slots=True)
class TwoTileHand:
    first: Tile  # the higher-ranking single tile of the two
    second: Tile
    kind: Kind
    ranking: int  # 1..22 for ranked hands (NSW 3.2.1 numbering), 0 for a points hand
    points: int  # 0..9 (meaningful for POINTS; also computed for ranked hands)

    @property
    def tiles(self) -> tuple[Tile, Tile]:
        return (self.first, self.second)

    @property
    def key(self) -> int:
        """Strength; one hand beats another only with a strictly greater key.

        All zero-point hands share key 0: they have no ranking (NZ 4.7) and the bank takes them.
        """
        if self.kind is Kind.PAIR:
            return _PAIR_BASE + 17 - self.ranking
        if self.kind is not Kind.POINTS:
            return _WONG_BASE + 23 - self.ranking
        if self.points == 0:
            return 0
        return 20 * self.points + self.first.single_score

    @property
    def key_by_tile(self) -> int:
        """As `key`, but zero-point hands are still told apart by their higher tile.

        Used where a rule compares two hands of the same total by their highest tile without the
        zero exception, i.e. the ACT high hand (ACT 12.3 with 12.5 naming only the low hand).
        """
        if self.kind is Kind.POINTS and self.points == 0:
            return self.first.single_score
        return self.key

    @property
    def is_ranked(self) -> bool:
        return self.kind is not Kind.POINTS

    def describe(self) -> str:
        a, b = self.first.notation, self.second.notation
        if self.kind is Kind.PAIR:
            return f"{a} {b} pair of {self.first.name} (rank {self.ranking})"
        if self.kind is not Kind.POINTS:
            name = {Kind.WONG: "wong", Kind.GONG: "gong", Kind.HIGH_NINE: "high nine"}[self.kind]
            owner = "teen" if self.first == TEEN else "day"
            return f"{a} {b} {owner} {name} (rank {self.ranking})"
        return f"{a} {b} {self.points} points"

    def __str__(self) -> str:
        return f"{self.first.notation} {self.second.notation}"


def _points(a: Tile, b: Tile) -> int:
    # A Gee Joon tile may count 3 or 6 (NSW 3.2.2, NZ 4.2); take whichever makes more points.
    options_a = (3, 6) if a.is_gee_joon else (a.pips,)
    options_b = (3, 6) if b.is_gee_joon else (b.pips,)
    return max((x + y) % 10 for x in options_a for y in options_b)


@cache
def make_hand(a: Tile, b: Tile) -> TwoTileHand:
    """Classify two tiles as a hand (order does not matter)."""
    # Higher-ranking tile first; equal ranks (a mixed pair) by notation, so order never matters.
    first, second = sorted((a, b), key=lambda t: (t.single_rank, t.notation))
    points = _points(first, second)
    if first.pair_rank == second.pair_rank:
        return TwoTileHand(first, second, Kind.PAIR, first.pair_rank, points)
    if first in (TEEN, DAY):
        other_pips = second.pips
        kind = {9: Kind.WONG, 8: Kind.GONG, 7: Kind.HIGH_NINE}.get(other_pips)
        # Teen+Day is no Wong; Gee Joon 2-4 has 6 pips, never 7-9, so it can't make one.
        if kind is not None and second not in (TEEN, DAY):
            return TwoTileHand(first, second, kind, _WONG_CLASS[(kind, first == TEEN)], points)
    return TwoTileHand(first, second, Kind.POINTS, 0, points)
