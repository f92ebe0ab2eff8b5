"""Reading and checking table.toml as a whole, and its JSON view.

`validate_text` reads every section (the table's, the game's, each device's in
devices/config.py) and raises one `ConfigError` listing every problem found.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from enum import Enum
from fractions import Fraction
from pathlib import Path
from typing import Any

from controller.config.games import GAMES, READERS
from controller.config.journal import read_journal
from controller.config.model import TableConfig, game_needs
from controller.config.reader import ConfigError, Errors, Table
from controller.config.sections import read_link, read_service
from devices.config import read_devices
from devices.config_reader import TomlError, parse_toml, read_text

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

    sections: dict[str, Any] = {}
    for name, reader in READERS.items():
        t = root.table(name)
        if t is None:
            if game == name:
                errors.add(name, f"required table [{name}] is missing for game {name}")
            continue
        if game is not None and game != name:
            errors.add(name, f"the table plays {game}: remove [{name}]")
            continue
        sections[name] = reader(t)
    devices = read_devices(root, game_needs(game, sections.get(game or "")))
    link = read_link(root, table_id)
    journal = read_journal(root)
    root.done()
    if errors.lines:
        raise ConfigError(errors.lines)
    return TableConfig(
        table_id=table_id,
        game=game,
        service=service,
        devices=devices,
        link=link,
        paigow=sections.get("paigow"),
        uth=sections.get("uth"),
        journal=journal,
    )


def load_config(path: str | Path = DEFAULT_PATH) -> TableConfig:
    path = Path(path)
    try:
        text = read_text(path)
    except TomlError as exc:
        raise ConfigError([str(exc)]) from None
    return validate_text(text, str(path))


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
    only the password file's path."""
    out = _jsonable(cfg)
    game = cfg.paigow if cfg.game == "paigow" else cfg.uth
    out["boxes"] = game.boxes if game else None
    return out
