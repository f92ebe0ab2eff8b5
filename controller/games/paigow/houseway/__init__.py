"""The house way of each profile, behind one entry point.

NSW Appendix 2, NZ Appendix 4, ACT rule 11 and Appendix D; docs/paigow-house-way.md explains the
order in which each profile's rules apply and every ambiguity resolved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from controller.games.paigow.houseway.act import explain_act, house_way_act
from controller.games.paigow.houseway.nsw import explain_nsw, house_way_nsw
from controller.games.paigow.houseway.nz import explain_nz, house_way_nz
from controller.games.paigow.profiles import Profile
from controller.games.paigow.settings import Setting
from controller.games.paigow.tiles import Tile, check_available

_HOUSE_WAY: dict[Profile, Callable[[Sequence[Tile]], Setting]] = {
    Profile.NSW: house_way_nsw,
    Profile.NZ: house_way_nz,
    Profile.ACT: house_way_act,
}
_EXPLAIN: dict[Profile, Callable[[Sequence[Tile]], tuple[Setting, str]]] = {
    Profile.NSW: explain_nsw,
    Profile.NZ: explain_nz,
    Profile.ACT: explain_act,
}


def house_way(tiles: Sequence[Tile], profile: Profile) -> Setting:
    check_available(tiles)
    return _HOUSE_WAY[profile](tiles)


def house_way_function(profile: Profile) -> Callable[[Sequence[Tile]], Setting]:
    return _HOUSE_WAY[profile]


def explain(tiles: Sequence[Tile], profile: Profile) -> tuple[Setting, str]:
    """The house-way setting and the rule that decided it."""
    check_available(tiles)
    return _EXPLAIN[profile](tiles)
