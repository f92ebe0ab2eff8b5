"""`python -m controller.rounds --accepted paigow|uth`: the machine's phase x event table, and
`--graph paigow|uth`: its declared transitions as a Mermaid state diagram, as docs/rounds-<game>.md
embeds them (a test fails when a page differs); `--dot paigow|uth`: the same graph in Graphviz
DOT (`| dot -Tsvg` where Graphviz is installed); `--write-docs` rewrites both blocks in both
pages."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from controller.games.paigow.profiles import Profile
from controller.rounds.base import Guarded
from controller.rounds.paigow import PaiGowConfig, PaiGowMachine
from controller.rounds.uth import UthMachine

GAMES = ("paigow", "uth")


def machine(game: str) -> Guarded[Any]:
    if game == "paigow":
        return PaiGowMachine(PaiGowConfig(Profile.NSW))  # the routes are the same per profile
    if game == "uth":
        return UthMachine()
    raise SystemExit(f"unknown game {game!r}: paigow or uth")


def block(name: str) -> re.Pattern[str]:
    """A generated block of a page: between `<!-- name: begin -->` and `<!-- name: end -->`."""
    return re.compile(rf"(<!-- {name}: begin -->\n)(?:(.*?)\n)?(<!-- {name}: end -->)", re.S)


TABLE, GRAPH = block("accepted"), block("transitions")


def generated(game: str) -> dict[re.Pattern[str], str]:
    m = machine(game)
    return {TABLE: m.accepted_markdown(), GRAPH: m.transition_mermaid()}


def write_docs(docs: Path) -> None:
    for game in GAMES:
        page = docs / f"rounds-{game}.md"
        text = page.read_text()
        for pattern, body in generated(game).items():
            text = pattern.sub(lambda m, b=body: m.group(1) + b + "\n" + m.group(3), text)
        page.write_text(text)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args == ["--write-docs"]:
        write_docs(Path("docs"))
    elif len(args) == 2 and args[0] == "--accepted":
        print(machine(args[1]).accepted_markdown())
    elif len(args) == 2 and args[0] == "--graph":
        print(machine(args[1]).transition_mermaid())
    elif len(args) == 2 and args[0] == "--dot":
        print(machine(args[1]).transition_dot())
    else:
        sys.exit(
            "usage: python -m controller.rounds --accepted|--graph|--dot paigow|uth | --write-docs"
        )
