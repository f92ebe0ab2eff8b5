"""Each clause of each seed traced to the code that decides it, the tests that check it, or the
reason it is not the table's to decide (classified.toml): `tablectl rules trace`.

A clause is
- tested: a test cites it (tests/), whether or not the code does;
- implemented: code cites it (controller/, devices/, headoffice/) and no test does (the list
  "implemented but untested", to keep empty);
- people: left to people on purpose (classified.toml says why);
- n/a: not a table controller's to decide (classified.toml says why);
- unknown: none of these (a test fails on it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from controller.rules.citations import Citation, scan
from controller.rules.classify import CLASSIFIED, Classified, load
from controller.rules.clauses import BY_KEY, SEEDS, Clause, clauses

CODE = ("controller", "devices", "headoffice", "shared")
TESTS = ("tests",)
# Not scanned: this package and its test hold clause numbers as examples, not as citations.
SKIP = ("controller/rules/", "tests/test_traceability.py")
STATUSES = ("tested", "implemented", "people", "n/a", "unknown")
REFRESH = "python -m controller.rules --refresh"


@dataclass
class Row:
    clause: Clause
    status: str = "unknown"
    code: list[str] = field(default_factory=list)  # "path:line" of the citations in code
    tests: list[str] = field(default_factory=list)
    why: str = ""  # for people and n/a


@dataclass
class Trace:
    rows: dict[str, list[Row]]  # seed key -> its clauses in order
    problems: list[str]  # citations that name no clause, or no seed; stale or bad classifications
    stale: list[tuple[str, str]]  # (seed, id) classified but cited: --refresh drops them

    def totals(self, seed: str) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for row in self.rows[seed]:
            counts[row.status] += 1
        return counts

    def untested(self) -> list[Row]:
        return [r for rows in self.rows.values() for r in rows if r.status == "implemented"]

    def unknown(self) -> list[Row]:
        return [r for rows in self.rows.values() for r in rows if r.status == "unknown"]


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def _span(ids: list[str], ref: str) -> tuple[int, int] | None:
    """Where a clause, or every clause of a section, sits in the seed's order."""
    if ref in ids:
        i = ids.index(ref)
        return i, i
    inside = [i for i, cid in enumerate(ids) if cid.startswith((f"{ref}.", f"{ref} "))]
    return (inside[0], inside[-1]) if inside else None


def covered(cite: Citation, seed_clauses: tuple[Clause, ...]) -> tuple[list[Clause], str]:
    """The clauses a citation names, and what is wrong with it ('' when nothing)."""
    ids = [c.id for c in seed_clauses]
    tag = BY_KEY[cite.seed].tag
    span = _span(ids, cite.ref)
    if span is None:
        return [], f"{tag} {cite.ref}: no such clause"
    if cite.to:
        end = _span(ids, cite.to)
        if end is None:
            return [], f"{tag} {cite.to}: no such clause (the end of {cite.ref}-{cite.to})"
        if end[1] < span[0]:
            return [], f"{tag} {cite.ref}-{cite.to}: the range runs backwards"
        return list(seed_clauses[span[0]:end[1] + 1]), ""
    if span[0] != span[1] or ids[span[0]] != cite.ref:
        return [], ""  # a whole section: it exists, but names no one clause
    clause = seed_clauses[span[0]]
    if cite.letters and clause.letters is not None:
        wanted = cite.letters.split("-")
        missing = [w for w in wanted if w not in clause.letters]
        if missing:
            have = "".join(sorted(clause.letters)) or "none"
            return [], (f"{tag} {cite.ref}({missing[0]}): the clause has no ({missing[0]})"
                        f" (it has: {have})")
    return [clause], ""


def build(root: Path | None = None, seeds: Iterable[str] | None = None,
          classified: list[Classified] | None = None) -> Trace:
    root = root or repo_root()
    if not (root / "tests").is_dir():
        raise FileNotFoundError(
            f"{root}: no tests/ here; the trace reads a source checkout, not an installed table")
    keys = list(seeds or [s.key for s in SEEDS])
    rows = {k: [Row(c) for c in clauses(k)] for k in keys}
    index = {k: {r.clause.id: r for r in rows[k]} for k in keys}
    problems: list[str] = []
    for where, tops in (("code", CODE), ("tests", TESTS)):
        for cite in scan(root, tops, SKIP):
            at = f"{cite.path}:{cite.line}"
            if not cite.seed:
                if cite.strict:
                    problems.append(f"{at}: {cite.ref} names no seed: write NSW, NZ, ACT or UTH"
                                    f" before it ({cite.written})")
                continue
            if cite.seed not in index:
                continue
            named, wrong = covered(cite, clauses(cite.seed))
            if wrong and cite.strict:
                problems.append(f"{at}: {wrong} ({cite.written})")
            for clause in named:
                row = index[cite.seed][clause.id]
                (row.code if where == "code" else row.tests).append(at)
    stale: list[tuple[str, str]] = []
    for entry in classified if classified is not None else load():
        if entry.kind not in ("people", "n/a"):
            problems.append(f"{CLASSIFIED}: {entry.seed} {entry.ids}: 'as' is people or n/a,"
                            f" not {entry.kind!r}")
            continue
        if entry.seed not in BY_KEY:
            problems.append(f"{CLASSIFIED}: no seed {entry.seed!r}")
            continue
        if entry.seed not in index:
            continue
        ids = [r.clause.id for r in rows[entry.seed]]
        for ref in entry.ids:
            span = _span(ids, ref)
            if span is None:
                problems.append(f"{CLASSIFIED}: {BY_KEY[entry.seed].tag} {ref}: no such clause")
                continue
            for row in rows[entry.seed][span[0]:span[1] + 1]:
                if row.code or row.tests:
                    if row.clause.id == ref:
                        stale.append((entry.seed, ref))
                    continue
                row.status, row.why = entry.kind, entry.why
    for key in keys:
        for row in rows[key]:
            if row.tests:
                row.status = "tested"
            elif row.code:
                row.status = "implemented"
            elif row.clause.deleted and row.status == "unknown":
                row.status, row.why = "n/a", "deleted from the rules"
    for seed, ref in stale:
        problems.append(f"{CLASSIFIED}: {BY_KEY[seed].tag} {ref} is cited now, not left"
                        f" to people or n/a: run `{REFRESH}`")
    return Trace(rows, problems, stale)
