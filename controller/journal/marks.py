"""The journal's high-water marks as its writer keeps them (docs/journal.md, "High-water
mark"): the one beside the file and, with `[journal] outside_mark`, its copy outside the state
directory; the version they are written in; what they say at open; and whether a missing
journal may be made new (`fresh_refusal`). One mark's format and checks are in mark.py.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path

from controller.journal.errors import JournalError
from controller.journal.mac import JournalKey
from controller.journal.mark import (
    MARK_FILE,
    MarkWriter,
    create_mark,
    mark_problem,
    mark_version,
)
from controller.journal.walk import VerifyReport


def fresh_refusal(state_dir: Path, outside_mark: Path | None = None) -> str | None:
    """Why a table whose journal is missing once had one (None: nothing here says so): its
    high-water mark outside the state directory ([journal] outside_mark), or its mark left in
    the state directory (a mark is made only after its journal). A key is no sign: a new table
    has its key before its first journal (tablectl-journal-key.service; a development key is
    made just before the journal, and a start killed between the two leaves it alone). A
    linked table is also checked against head office's record when it answers the table's
    birth (controller/link/numbering.py)."""
    if outside_mark is not None and outside_mark.exists():
        return (f"the high-water mark outside the state directory {outside_mark} names an "
                "earlier journal")
    if (state_dir / MARK_FILE).exists():
        return f"the high-water mark {state_dir / MARK_FILE} of an earlier journal is there"
    return None


def check_open(path: Path, outside_mark: Path | None, new_refused: bool) -> None:
    """Before a journal at `path` is opened: the outside mark must be outside the state
    directory; with `new_refused` (the daemon) a missing journal is not made where
    `fresh_refusal` says one was. JournalError naming what is wrong and what to do."""
    state_dir = path.parent
    if outside_mark is not None and outside_mark.resolve().is_relative_to(state_dir.resolve()):
        raise JournalError(f"[journal] outside_mark {outside_mark} is inside the state "
                           f"directory {state_dir}: it must be outside it")
    why = fresh_refusal(state_dir, outside_mark) if new_refused and not path.exists() else None
    if why is not None:
        raise JournalError(
            f"journal {path} is missing and {why}: refusing to start a new journal (its round "
            "numbers would start again at 1). Put back the state directory, or start a new "
            "journal on purpose, logged: `sudo tablectl journal start-fresh --state-dir "
            f"{state_dir} --config FILE --reason TEXT` (docs/journal.md, \"Recovering\")")


def version_for(state_dir: Path, upgrade: bool) -> int:
    """2 (with the round) for a writer that may upgrade; else (a trial boot, the technician's
    tools) the version the mark is, so that the software before this one reads it again."""
    return 2 if upgrade else (mark_version(state_dir / MARK_FILE) or 1)


class Marks:
    """The writer's marks: made, checked at open, moved after each commit, rewritten."""

    def __init__(self, state_dir: Path, outside: Path | None, key: JournalKey, table_id: str,
                 game: str, version: int) -> None:
        self.paths = [state_dir / MARK_FILE] + ([outside] if outside is not None else [])
        self.outside = outside
        self.version = version
        self._key, self._table_id, self._game = key, table_id, game
        self._writers: list[MarkWriter] = []

    def create(self, seq: int, out: int, chain: str, round_: int,
               paths: list[Path] | None = None) -> None:
        """Written durably (each of `paths`, default all); the writers then follow them."""
        self.close()
        for path in self.paths if paths is None else paths:
            create_mark(path, self._key, self._table_id, self._game, seq, out, chain, round_,
                        self.version)

    def problem(self, conn: sqlite3.Connection, meta: Mapping[str, str],
                state: VerifyReport, genesis: str) -> tuple[str, int | None] | None:
        """What is wrong between the journal (ending at `state`) and its marks; the outside
        one is made from where the journal stands when it is missing (its first use)."""
        problem = mark_problem(conn, self.paths[0], self._key, meta, state.last_seq)
        if self.outside is None or problem is not None:
            return problem
        if not self.outside.exists():
            self.create(state.last_seq, state.next_outbox_id - 1, state.last_hash or genesis,
                        state.last_round_number, [self.outside])
            return None
        outside = mark_problem(conn, self.outside, self._key, meta, state.last_seq)
        if outside is None:
            return None
        return (f"{outside[0]} (the high-water mark outside the state directory, "
                f"{self.outside})", outside[1])

    def open_writers(self) -> None:
        self._writers = [MarkWriter(p, self._key, self._table_id, self._game, self.version)
                         for p in self.paths if p.exists()]

    def advance(self, seq: int, out: int, chain: str, round_: int) -> None:
        for writer in self._writers:
            writer.advance(seq, out, chain, round_)

    def sync(self) -> None:
        """Every open mark made durable where it stands now (MarkWriter.sync)."""
        for writer in self._writers:
            writer.sync()

    @property
    def errors(self) -> int:
        return sum(w.errors for w in self._writers)

    def rewrite(self, seq: int, out: int, chain: str, round_: int, version: int) -> None:
        """Every mark made again durably, in `version` (a downgrade: 1)."""
        self.version = version
        self.create(seq, out, chain, round_, [p for p in self.paths if p.exists()])
        self.open_writers()

    def close(self) -> None:
        for writer in self._writers:
            writer.close()
        self._writers = []
