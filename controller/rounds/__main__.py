"""`python -m controller.rounds --accepted paigow|uth`: the machine's phase x event table, as
docs/rounds-<game>.md embeds it (a test fails when the page differs)."""

from __future__ import annotations

import sys
from typing import Any

from controller.games.paigow.profiles import Profile
from controller.rounds.base import Guarded
from controller.rounds.paigow import PaiGowConfig, PaiGowMachine
from controller.rounds.uth import UthMachine


def machine(game: str) -> Guarded[Any]:
    if game == "paigow":
        return PaiGowMachine(PaiGowConfig(Profile.NSW))  # the routes are the same per profile
    if game == "uth":
        return UthMachine()
    raise SystemExit(f"unknown game {game!r}: paigow or uth")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--accepted":
        sys.exit("usage: python -m controller.rounds --accepted paigow|uth")
    print(machine(sys.argv[2]).accepted_markdown())
