"""The 32 Pai Gow tiles, their names and their individual ranking.

Tiles are written in pip notation `a-b` with a <= b. The set (NSW 3.1, NZ 3.3(a), ACT 3.1) holds
21 kinds: 11 kinds of which there are two identical tiles, and 10 single tiles that form the five
"mixed" pairs (nines, low eights, low sevens, fives, Gee Joon).

Individual ranking (NSW Appendix 1, NZ Appendix 3, ACT Appendix C): Teen highest, then Day, High 8,
High 4, High 10, High 6, Low 4, Eleven, Low 10, High 7, Low 6, the nines, low eights, low sevens,
fives, and Gee Joon lowest (NSW 3.2.2). The two tiles of a mixed pair rank equally as singles.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from shared.errors import InputError


@dataclass(frozen=True, slots=True)
class Tile:
    low_pips: int
    high_pips: int
    name: str  # English listing name used in the seeds, e.g. "teen", "high-8"
    chinese: str
    copies: int  # how many of this exact tile a set holds
    single_rank: int  # 1 = Teen (highest) .. 16 = Gee Joon (lowest); mixed pairs share a rank
    pair_rank: int  # rank of the pair this tile forms with its partner, 1 = Gee Joon .. 16 = fives

    @property
    def pips(self) -> int:
        return self.low_pips + self.high_pips

    @property
    def notation(self) -> str:
        return f"{self.low_pips}-{self.high_pips}"

    @property
    def is_gee_joon(self) -> bool:
        return self.pair_rank == 1

    @property
    def single_score(self) -> int:
        """Higher is better: 16 for Teen down to 1 for Gee Joon."""
        return 17 - self.single_rank

    def __str__(self) -> str:
        return self.notation

    def __repr__(self) -> str:
        return f"Tile({self.notation})"


def _t(a: int, b: int, name: str, chinese: str, copies: int, single: int, pair: int) -> Tile:
    return Tile(a, b, name, chinese, copies, single, pair)


# fmt: off
TILES: tuple[Tile, ...] = (
    _t(6, 6, "teen",    "Teen",          2, 1, 2),
    _t(1, 1, "day",     "Day",           2, 2, 3),
    _t(4, 4, "high-8",  "Yun",           2, 3, 4),
    _t(1, 3, "high-4",  "Gor",           2, 4, 5),
    _t(5, 5, "high-10", "Mooy",          2, 5, 6),
    _t(3, 3, "high-6",  "Chong",         2, 6, 7),
    _t(2, 2, "low-4",   "Bon",           2, 7, 8),
    _t(5, 6, "eleven",  "Foo",           2, 8, 9),
    _t(4, 6, "low-10",  "Ping",          2, 9, 10),
    _t(1, 6, "high-7",  "Tit",           2, 10, 11),
    _t(1, 5, "low-6",   "Look",          2, 11, 12),
    _t(4, 5, "nine",    "Chop Gow",      1, 12, 13),
    _t(3, 6, "nine",    "Chop Gow",      1, 12, 13),
    _t(3, 5, "low-8",   "Chop Bot",      1, 13, 14),
    _t(2, 6, "low-8",   "Chop Bot",      1, 13, 14),
    _t(3, 4, "low-7",   "Chop Chit",     1, 14, 15),
    _t(2, 5, "low-7",   "Chop Chit",     1, 14, 15),
    _t(1, 4, "five",    "Chop Ng",       1, 15, 16),
    _t(2, 3, "five",    "Chop Ng",       1, 15, 16),
    _t(1, 2, "gee-joon", "Gee Joon",     1, 16, 1),
    _t(2, 4, "gee-joon", "Gee Joon",     1, 16, 1),
)
# fmt: on

BY_NOTATION: dict[str, Tile] = {t.notation: t for t in TILES}

# Every tile of the set, each physical tile once (32 entries; identical tiles appear twice).
FULL_SET: tuple[Tile, ...] = tuple(t for t in TILES for _ in range(t.copies))


def tiles_of(*notations: str) -> frozenset[Tile]:
    """The tiles named in pip notation ("1-2", "2-4"): a class of tiles a house way names."""
    return frozenset(BY_NOTATION[n] for n in notations)


TEEN = BY_NOTATION["6-6"]
DAY = BY_NOTATION["1-1"]

# Names a technician may type. Names of a mixed pair's tiles are ambiguous, so they take the pips
# (e.g. "nine-4-5"); "gee-joon-3" / "gee-joon-6" are the seeds' own way to tell the two apart.
_ALIASES: dict[str, str] = {}
for _tile in TILES:
    if _tile.copies == 2:
        _ALIASES[_tile.name] = _tile.notation
        _ALIASES[_tile.chinese.lower().replace(" ", "-")] = _tile.notation
    _ALIASES[f"{_tile.name}-{_tile.notation}"] = _tile.notation
_ALIASES.update({
    "12": "6-6", "2": "1-1", "yun": "4-4", "gor": "1-3", "ngor": "1-3", "nhor": "1-3",
    "mooy": "5-5", "chong": "3-3", "cheong-sum": "3-3", "bon": "2-2", "ban-tang": "2-2",
    "11": "5-6", "foo": "5-6", "foo-tau": "5-6", "ping": "4-6", "hoong-tau-sap": "4-6",
    "tit": "1-6", "ka-kiok-chaat": "1-6", "look": "1-5", "lim-lum-lok": "1-5",
    "gee-joon-3": "1-2", "gee-joon-6": "2-4", "gee-jun-3": "1-2", "gee-jun-6": "2-4",
})
_AMBIGUOUS = {
    t.name: [u.notation for u in TILES if u.name == t.name] for t in TILES if t.copies == 1
}
_AMBIGUOUS.update({"gee-jun": _AMBIGUOUS["gee-joon"], "gee": _AMBIGUOUS["gee-joon"]})


def parse_tile(token: str) -> Tile:
    """A tile from pip notation (`a-b`, either order) or a name; InputError names a bad token."""
    text = token.strip().lower().replace("_", "-").replace(" ", "-")
    if text in _ALIASES:
        return BY_NOTATION[_ALIASES[text]]
    if text in _AMBIGUOUS:
        choices = " or ".join(_AMBIGUOUS[text])
        raise InputError(f"tile {token!r} is ambiguous: write {choices}")
    parts = text.split("-")
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        a, b = sorted(int(p) for p in parts)
        tile = BY_NOTATION.get(f"{a}-{b}")
        if tile is not None:
            return tile
        raise InputError(f"tile {token!r} is not in the Pai Gow set")
    raise InputError(f"tile {token!r} is not a tile (write pips as a-b, e.g. 6-6, or a name)")


def parse_tiles(tokens: Iterable[str], count: int | None = None) -> tuple[Tile, ...]:
    """Parse tiles and check the set could hold them all; InputError names the problem."""
    tiles = tuple(parse_tile(t) for t in tokens)
    if count is not None and len(tiles) != count:
        raise InputError(f"expected {count} tiles, got {len(tiles)}")
    check_available(tiles)
    return tiles


def check_available(tiles: Iterable[Tile]) -> None:
    """A hand (or a table) can't hold more copies of a tile than the set has (NSW 15.17)."""
    for tile, n in Counter(tiles).items():
        if n > tile.copies:
            raise InputError(
                f"tile {tile.notation} appears {n} times but a set holds {tile.copies}"
            )
