"""Setting four tiles into a high hand and a low hand (NSW 12.4, NZ 1.0 "Set", ACT 10.1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from controller.games.paigow.hands import TwoTileHand, make_hand
from controller.games.paigow.tiles import Tile, check_available, parse_tiles
from shared.errors import InputError


@dataclass(frozen=True, slots=True)
class Setting:
    high: TwoTileHand
    low: TwoTileHand

    @property
    def is_valid(self) -> bool:
        """A low hand may not outrank the high hand (a set hand has a high and a low, NZ 1.0)."""
        return self.low.key <= self.high.key

    @property
    def tiles(self) -> tuple[Tile, Tile, Tile, Tile]:
        return (*self.high.tiles, *self.low.tiles)

    def in_high(self, tile: Tile) -> bool:
        """Whether `tile` is in the high hand (the house ways place tiles by this)."""
        return tile in self.high.tiles

    def as_json(self) -> dict[str, list[str]]:
        return {
            "high": [t.notation for t in self.high.tiles],
            "low": [t.notation for t in self.low.tiles],
        }

    def __str__(self) -> str:
        return f"{self.high} / {self.low}"


def make_setting(high: Sequence[Tile], low: Sequence[Tile]) -> Setting:
    """A setting as the player placed it; InputError if it is not a legal setting."""
    if len(high) != 2 or len(low) != 2:
        raise InputError(f"a setting is two tiles high and two low, got {len(high)} and {len(low)}")
    check_available([*high, *low])
    setting = Setting(make_hand(*high), make_hand(*low))
    if not setting.is_valid:
        raise InputError(
            f"low hand {setting.low} outranks high hand {setting.high}: not a valid setting"
        )
    return setting


def parse_setting(text: str) -> Setting:
    """Parse "H H / L L" (pip notation or names)."""
    if text.count("/") != 1:
        raise InputError(f"setting {text!r} must be written 'H H / L L'")
    high_text, low_text = text.split("/")
    high = parse_tiles(high_text.split(), 2)
    low = parse_tiles(low_text.split(), 2)
    return make_setting(high, low)


def ordered(a: TwoTileHand, b: TwoTileHand) -> Setting:
    """The setting of two hands with the stronger one high.

    Equally strong hands (two zero hands, say) are ordered by their higher tile and then by
    notation, so the result never depends on the order the tiles came in.
    """

    def strength(h: TwoTileHand) -> tuple[int, int, str]:
        return (h.key, h.key_by_tile, str(h))

    return Setting(a, b) if strength(a) >= strength(b) else Setting(b, a)


def all_settings(tiles: Sequence[Tile]) -> list[Setting]:
    """The distinct ways to split four tiles into two hands (three, fewer with duplicate tiles)."""
    if len(tiles) != 4:
        raise InputError(f"a Pai Gow hand is four tiles, got {len(tiles)}")
    return list(_all_settings(tuple(tiles)))


# Tiles and settings are immutable: the house ways and the par sheet ask again and again for
# the same few thousand hands (8,130 distinct ones; 35,960 combinations of the set), and this was
# most of their time. Bounded: the table's daemon asks a few times a round.
@lru_cache(maxsize=8192)
def _all_settings(tiles: tuple[Tile, ...]) -> tuple[Setting, ...]:
    check_available(tiles)
    a, b, c, d = tiles
    seen: set[tuple[tuple[str, str], tuple[str, str]]] = set()
    result = []
    for (w, x), (y, z) in (((a, b), (c, d)), ((a, c), (b, d)), ((a, d), (b, c))):
        s = ordered(make_hand(w, x), make_hand(y, z))
        ident = (_ident(s.high), _ident(s.low))
        if ident not in seen:
            seen.add(ident)
            result.append(s)
    return tuple(result)


def _ident(h: TwoTileHand) -> tuple[str, str]:
    return (h.first.notation, h.second.notation)
