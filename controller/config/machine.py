"""The round machine a table's config describes: the daemon plays on it, and `tablectl journal
accept-loss` voids a round left open in a restored copy through it (issue 27)."""

from __future__ import annotations

from typing import Any

from controller.config.model import TableConfig
from controller.rounds.base import RoundMachine


def build_machine(cfg: TableConfig) -> RoundMachine[Any]:
    """The round machine on the config's own (controller/config/games.py builds it)."""
    if cfg.paigow is not None:
        from controller.rounds.paigow import PaiGowMachine

        return PaiGowMachine(cfg.paigow)
    from controller.rounds.uth import UthMachine

    assert cfg.uth is not None
    return UthMachine(cfg.uth)
