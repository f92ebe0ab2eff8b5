"""classified.toml: the clauses no code or test cites, each left to people or not applicable to a
table controller, with why. Written back in one layout so `--refresh` can prune it."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

CLASSIFIED = "classified.toml"
HEADER = """\
# The clauses of the approved rules that no code or test cites, each either left to people
# ("people") or not a table controller's to decide ("n/a"), with why (docs/traceability.md).
# `ids` are clauses, or sections meaning every clause in them that nothing cites.
# `python -m controller.rules --refresh` drops the ids that code or tests cite now; a reason is
# written by hand.
"""


@dataclass(frozen=True)
class Classified:
    seed: str
    ids: tuple[str, ...]  # clauses, or sections meaning every clause in them no one cites
    kind: str  # people or n/a
    why: str


def load(text: str | None = None) -> list[Classified]:
    if text is None:
        text = resources.files("controller.rules").joinpath(CLASSIFIED).read_text("utf-8")
    data = tomllib.loads(text)
    return [Classified(e["seed"], tuple(e["ids"]), e["as"], e["why"])
            for e in data.get("clause", [])]


def dump(entries: Iterable[Classified]) -> str:
    out = [HEADER]
    for e in entries:
        out.append("[[clause]]")
        out.append(f"seed = {json.dumps(e.seed)}")
        out.append(f"ids = [{', '.join(json.dumps(i) for i in e.ids)}]")
        out.append(f"as = {json.dumps(e.kind)}")
        out.append(f"why = {json.dumps(e.why, ensure_ascii=False)}")
        out.append("")
    return "\n".join(out)


def path(root: Path) -> Path:
    return root / "controller" / "rules" / CLASSIFIED


def prune(stale: Iterable[tuple[str, str]], root: Path) -> list[tuple[str, str]]:
    """Drop the (seed, id)s that are cited now; the ones dropped."""
    gone = set(stale)
    entries = load(path(root).read_text("utf-8"))
    kept = []
    for e in entries:
        ids = tuple(i for i in e.ids if (e.seed, i) not in gone)
        if ids:
            kept.append(Classified(e.seed, ids, e.kind, e.why))
    path(root).write_text(dump(kept), encoding="utf-8")
    return sorted(gone)
