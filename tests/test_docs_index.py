"""docs/README.md sends each person to one page first, and every page it names exists;
docs/cli.md names every `tablectl` command, and docs/daemon.md no longer carries the CLI
reference among its benchmark history (issue 28 item 12)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from controller.cli.main import build_parser

DOCS = Path(__file__).resolve().parent.parent / "docs"
PEOPLE = ("a new developer", "a technician at a table", "a head-office operator",
          "a regulator's test lab")


def links(text: str) -> list[str]:
    return [m for m in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
            if not m.startswith("http")]


def test_each_person_has_one_first_page_that_exists() -> None:
    text = (DOCS / "README.md").read_text()
    section = text.split("## Read this first", 1)[1].split("\n## ", 1)[0]
    rows = {r.split("|")[1].strip(): r for r in section.splitlines() if r.startswith("| a")}
    assert set(rows) == set(PEOPLE)
    for who, row in rows.items():
        first = links(row.split("|")[2])
        assert len(first) == 1, (who, first)
        assert (DOCS / first[0]).is_file(), (who, first[0])


def test_every_page_the_index_names_exists() -> None:
    for target in links((DOCS / "README.md").read_text()):
        assert (DOCS / target).resolve().exists(), target


def commands() -> list[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def test_the_cli_page_names_every_command() -> None:
    text = (DOCS / "cli.md").read_text()
    missing = [c for c in commands() if not re.search(rf"^tablectl {c}\b", text, re.M)]
    assert missing == []


def test_the_daemon_page_points_to_the_cli_page_instead_of_holding_it() -> None:
    text = (DOCS / "daemon.md").read_text()
    assert "[cli.md](cli.md)" in text
    assert "tablectl status [--json]" not in text
