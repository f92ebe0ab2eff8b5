"""`python -m controller.rounds --accepted paigow|uth`: the machine's phase x event table, as
docs/rounds-<game>.md embeds it (a test fails when the page differs); `--write-docs` rewrites
the tables in both pages."""

from __future__ import annotations

import re
import sys
from pathlib import Path
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


TABLE = re.compile(r"(<!-- accepted: begin -->\n).*?(\n<!-- accepted: end -->)", re.S)


def write_docs(docs: Path) -> None:
    for game in ("paigow", "uth"):
        page = docs / f"rounds-{game}.md"
        table = machine(game).accepted_markdown()
        text = TABLE.sub(lambda m, t=table: m.group(1) + t + m.group(2), page.read_text())
        page.write_text(text)


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-docs"]:
        write_docs(Path("docs"))
    elif len(sys.argv) == 3 and sys.argv[1] == "--accepted":
        print(machine(sys.argv[2]).accepted_markdown())
    else:
        sys.exit("usage: python -m controller.rounds --accepted paigow|uth | --write-docs")
