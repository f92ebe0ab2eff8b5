"""Reading and checking table.toml as a whole, and its JSON view.

`validate_text` reads every section (the table's, the game's, each device's in
devices/config.py) and raises one `ConfigError` listing every problem found.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from enum import Enum
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.config.games import GAMES, READERS, Section
from controller.config.journal import read_journal
from controller.config.model import JackpotConfig, TableConfig, game_needs
from controller.config.reader import ConfigError, Errors, Table
from controller.config.sections import read_cards, read_link, read_service
from devices.config import read_devices
from shared.config_reader import TomlError, load_file, parse_toml
from shared.errors import InputError

if TYPE_CHECKING:
    from controller.rounds.paigow.state import PaiGowConfig
    from controller.rounds.uth.state import UthConfig

DEFAULT_PATH = Path("/etc/tablectl/table.toml")
_TABLE_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
_UTH_PAYTABLES = "controller.games.uth.paytables"


def validate_text(text: str, source: str = "table.toml") -> TableConfig:
    """Parse and check a configuration; ConfigError lists every problem found."""
    errors = Errors(source)
    try:
        data = parse_toml(text, source)
    except TomlError as exc:
        raise ConfigError([str(exc)]) from None
    root = Table(errors, "", data)
    table_id = root.string("table_id", pattern=_TABLE_ID, what="1-32 characters of A-Z a-z 0-9 _ -")
    game = root.string("game", choices=GAMES)
    service = read_service(root)

    sections: dict[str, Section] = {}
    clean: set[str] = set()  # sections read without an error: their config can be built
    for name, reader in READERS.items():
        t = root.table(name)
        if t is None:
            if game == name:
                errors.add(name, f"required table [{name}] is missing for game {name}")
            continue
        if game is not None and game != name:
            errors.add(name, f"the table plays {game}: remove [{name}]")
            continue
        before = len(errors.lines)
        sections[name] = reader(t)
        if len(errors.lines) == before:
            clean.add(name)
    section = sections.get(game or "")
    devices = read_devices(root, game_needs(game, section.needs if section else None))
    link = read_link(root, table_id)
    # NSW Pai Gow 9.1, 16.1 and UTH 13.1 require Player Cards; NZ and ACT Pai Gow do not.
    profile = section.needs.get("profile") if section else None
    cards = read_cards(
        root,
        profile_requires=game == "uth" or str(profile) == "nsw",
        link=link,
        simulated=devices.simulate,
    )
    journal = read_journal(root)
    root.done()
    built: dict[str, Any] = {}
    if not errors.lines and section is not None and game in clean:
        try:
            built[game] = dataclasses.replace(section.build(table_id, link), cards=cards)
        except InputError as exc:  # a check of the round machine's own (rounds/*/state.py)
            errors.add(game, str(exc))
    if errors.lines:
        raise ConfigError(errors.lines)
    return TableConfig(
        table_id=table_id,
        game=game,
        service=service,
        devices=devices,
        link=link,
        paigow=built.get("paigow"),
        uth=built.get("uth"),
        jackpot=section.jackpot if section else None,
        journal=journal,
    )


def load_config(path: str | Path = DEFAULT_PATH) -> TableConfig:
    return load_file(path, validate_text, ConfigError)


def _jsonable(value: Any) -> Any:
    paytables = sys.modules.get(_UTH_PAYTABLES)  # only loaded if the config holds UTH values
    if isinstance(value, Fraction | Path) or (paytables and isinstance(value, paytables.Odds)):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Mapping):
        return {
            # Category keys (pay tables, awards) by their JSON label, e.g. "four_of_a_kind".
            (k.label if isinstance(k, Enum) and hasattr(k, "label") else str(k)): _jsonable(v)
            for k, v in value.items()
        }
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    return value


def config_json(cfg: TableConfig) -> dict[str, Any]:
    """The configuration as plain JSON (for `tablectl status` and the log); no secrets in it,
    only the password file's path. The game's section is shown as the file has it, not as the
    round machine holds it (tests/config: the same bytes as before the machines' configs were
    the only ones)."""
    out = {
        "table_id": cfg.table_id,
        "game": cfg.game,
        "service": _jsonable(cfg.service),
        "devices": _jsonable(cfg.devices),
        "link": _jsonable(cfg.link),
        "paigow": None if cfg.paigow is None else paigow_json(cfg.paigow),
        "uth": None if cfg.uth is None else uth_json(cfg.uth, cfg.jackpot),
        "journal": _jsonable(cfg.journal),
    }
    game = cfg.paigow if cfg.game == "paigow" else cfg.uth
    out["boxes"] = game.boxes if game else None
    return out


def paigow_json(p: PaiGowConfig) -> dict[str, Any]:
    """[paigow] as written, from the machine's config (docs/configuration.md)."""
    m = p.money
    return {
        "rules": p.profile.value,
        "limits": {
            "minimum": m.minimum,
            "maximum": m.maximum,
            "chip_unit": m.chip_unit,
            "house_liability": m.house_liability,
        },
        "boxes": p.boxes,
        "commission_bp": m.commission_bp,
        "steal_offered": p.steal_offered,
        "multiples_notice": p.multiples_notice,
        "banks_per_box": p.max_banks_per_box,
        "cobank_box_maximum": m.cobank_box_maximum,
        "unpayable_up": m.unpayable_up,
        "clockwise_delivery": p.clockwise_delivery,
        "miscount_make_up": p.miscount_make_up,
    }


def uth_json(u: UthConfig, jackpot: JackpotConfig | None) -> dict[str, Any]:
    """[uth] as written, from the machine's config and [uth.jackpot]."""
    from controller.games.uth.settlement import Spot

    ante, trips = u.rules.limits_for(Spot.ANTE), u.rules.limits_for(Spot.TRIPS)
    return {
        "limits": {
            "ante_min": ante.minimum,
            "ante_max": ante.maximum,
            "play_max": u.rules.limits_for(Spot.PLAY).maximum,  # UTH 6.1; default 4 x ante_max
            "trips_min": trips.minimum,
            "trips_max": trips.maximum,
            "chip_unit": u.chip_unit,
        },
        "boxes": u.boxes,
        "blind_paytable": _jsonable(u.rules.blind),
        "trips_paytable": _jsonable(u.rules.trips),
        "deal_method": u.deal_method.value,
        "decks": len(u.decks),
        "jackpot": _jsonable(jackpot),
        "exposure_preflop_only": u.exposure_preflop_only,  # UTH 11.4.1 reading
    }
