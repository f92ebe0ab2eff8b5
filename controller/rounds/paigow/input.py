"""Reading event data for the Pai Gow round machine.

Every function takes untrusted JSON (from a device, the keypad or the CLI) and either returns a
typed value or raises InputError naming the field, which the machine turns into a log/alarm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.games.paigow.cuts import Cut, CutOption, check_options, parse_cut
from controller.games.paigow.dice import NOT_FLAT, Die, Shake
from controller.games.paigow.houseway import house_way
from controller.games.paigow.profiles import Profile
from controller.games.paigow.settings import Setting, parse_setting
from controller.games.paigow.tiles import parse_tiles
from controller.rounds import fields
from shared.errors import InputError


def _die(name: str, value: Any) -> Die:
    if value == "not_flat":
        return NOT_FLAT
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name} reads {value!r}: a die shows 1..6 or \"not_flat\"")
    return value


def parse_shake(data: Mapping[str, Any]) -> Shake:
    """dice.result {box_dice: [a, b, c], cut_die: n|null}; a die may read "not_flat"."""
    box_dice = data.get("box_dice")
    if not isinstance(box_dice, list):
        raise InputError(f"box_dice must be a list of three dice, got {box_dice!r}")
    dice = tuple(_die(f"box die {i}", v) for i, v in enumerate(box_dice, start=1))
    raw_cut = data.get("cut_die")
    cut_die = None if raw_cut is None else _die("cut die", raw_cut)
    return Shake(dice, cut_die)  # checks three dice, each 1..6


def shake_json(shake: Shake) -> dict[str, Any]:
    """A shake whose dice all lie flat (callers check needs_reshake first)."""
    return {"box_dice": list(shake.box_dice), "cut_die": shake.cut_die, "total": shake.total}


def parse_cut_data(profile: Profile, data: Mapping[str, Any]) -> tuple[Cut, frozenset[CutOption]]:
    """{cut: name, options: ["right", "top"]}: the cut by any of its names and its options."""
    cut = parse_cut(profile, fields.text(data, "cut"))
    raw = data.get("options", [])
    if not isinstance(raw, list) or not all(isinstance(o, str) for o in raw):
        raise InputError(f"options must be a list of option names, got {raw!r}")
    try:
        options = [CutOption(o.strip().lower()) for o in raw]
    except ValueError:
        raise InputError(f"unknown cut option in {raw!r}") from None
    if len(set(options)) != len(options):
        raise InputError(f"repeated cut option in {raw!r}")
    return cut, check_options(profile, cut, options)


def options_json(options: frozenset[CutOption] | None) -> list[str] | None:
    return None if options is None else sorted(o.value for o in options)


def parse_hand(spec: Any, profile: Profile, where: str) -> Setting | None:
    """A box's hand: "H H / L L" as set, {"tiles": [4]} set the house way on request
    (NSW 12.6, NZ 10.4, ACT 10.5), or {"conceded": true} (NSW 12.17, NZ 10.13) -> None."""
    if isinstance(spec, str):
        return parse_setting(spec)
    if isinstance(spec, Mapping) and spec.get("conceded") is True:
        return None
    if isinstance(spec, Mapping) and isinstance(spec.get("tiles"), list):
        tiles = spec["tiles"]
        if not all(isinstance(t, str) for t in tiles):
            raise InputError(f"{where}: tiles must be strings like \"6-6\"")
        return house_way(parse_tiles(tiles, 4), profile)
    raise InputError(
        f'{where}: expected "H H / L L", {{"tiles": [4 tiles]}} or {{"conceded": true}}'
    )
