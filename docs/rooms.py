"""The room table of docs/architecture.md, generated from docs/rooms.toml (the rooms of tablectl
and which rooms each may import; tests/test_architecture.py checks every import against it and
fails when the page differs from what this prints).

    .venv/bin/python docs/rooms.py           # rewrites the table in docs/architecture.md
    .venv/bin/python docs/rooms.py --print   # prints it
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "docs" / "rooms.toml"
PAGE = REPO / "docs" / "architecture.md"
TABLE = re.compile(r"(<!-- rooms: begin -->\n).*?(\n<!-- rooms: end -->)", re.S)


@dataclass(frozen=True)
class Room:
    name: str  # dotted: "controller.journal", "headoffice.console.money"
    holds: str
    may_import: tuple[str, ...]

    def covers(self, room: str) -> bool:
        """Whether `may_import` lets this room import `room` (a name covers the rooms under
        it)."""
        return any(room == r or room.startswith(r + ".") for r in self.may_import)


def load(path: Path = DATA) -> dict[str, Room]:
    """The rooms by name, in the file's order."""
    rows = tomllib.loads(path.read_text(encoding="utf-8"))["room"]
    return {r["name"]: Room(r["name"], r["holds"], tuple(r["may_import"])) for r in rows}


def room_of(module: str, rooms: dict[str, Room]) -> str | None:
    """The longest room that is `module` or a package above it; None: in no room."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in rooms:
            return ".".join(parts[:n])
    return None


def where(name: str) -> str:
    """controller.journal -> "controller/journal/", shared.money -> "shared/money.py"."""
    path = name.replace(".", "/")
    return f"{path}/" if (REPO / path).is_dir() else f"{path}.py"


def markdown(rooms: dict[str, Room]) -> str:
    lines = ["| room | holds | may import |", "|---|---|---|"]
    for room in rooms.values():
        allowed = ", ".join(f"`{where(r)}`" for r in room.may_import) or "nothing"
        lines.append(f"| `{where(room.name)}` | {room.holds} | {allowed} |")
    return "\n".join(lines)


def page_with_table(page: str, rooms: dict[str, Room]) -> str:
    table = markdown(rooms)
    return TABLE.sub(lambda m: m.group(1) + table + m.group(2), page)


if __name__ == "__main__":
    if sys.argv[1:] == ["--print"]:
        print(markdown(load()))
    elif not sys.argv[1:]:
        PAGE.write_text(page_with_table(PAGE.read_text(encoding="utf-8"), load()),
                        encoding="utf-8")
    else:
        sys.exit("usage: docs/rooms.py [--print]")
