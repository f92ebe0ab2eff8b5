"""The journal's calls on its segments (segments.py, retention.py, archived.py): archive,
move out of the file, head office's acknowledgement, retention, and a pruned or moved round read
back from its archive. A part of `Journal` (store.py), kept apart so that each file holds one
concern."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from pathlib import Path

from controller.journal import archived, checkpoint
from controller.journal.archived import ArchivedRound
from controller.journal.errors import EntryRefused, RoundPruned
from controller.journal.mac import JournalKey
from controller.journal.mark import MARK_FILE, MarkError, read_mark
from controller.journal.marks import Marks
from controller.journal.outbox import Outbox
from controller.journal.read import Reader
from controller.journal.retention import PrunePlan, Retention, pruned_head


class SegmentCalls:
    # What Journal (store.py) holds.
    path: Path
    key: JournalKey
    table_id: str
    game: str
    archive_dir: Path
    retention: Retention
    marks: Marks
    reader: Reader
    outbox: Outbox
    _conn: sqlite3.Connection
    _mutex: threading.RLock
    _may_move: bool
    last_round_number: int
    rounds_skipped: int

    def _rebase(self) -> None:
        """Reads start after the last seq out of the file (pruned or moved)."""
        base = self.retention.pruned_through()
        self.reader.pruned = (base, checkpoint.hash_at(self._conn, base) if base else "")

    def archive(self, archive_dir: Path | None = None) -> list[tuple[int, str, str]]:
        """Archive the closed segments not archived yet (`Retention.archive`)."""
        return self.retention.archive(archive_dir or self.archive_dir)

    def move(self, archive_dir: Path | None = None) -> list[int]:
        """Move the segments head office holds out of the file (`Retention.move`); none when
        opened with `upgrade=False` (a trial boot: the software before must still read it)."""
        if not self._may_move:
            return []
        # The marks are written back lazily (mark.py): on the disk one may still name a commit
        # this move takes out of the file, and after a power cut the journal would be refused as
        # "replaced or rewritten" though nothing was lost (issue 27's flush-point replay found
        # it). Made durable first, and the move never goes past the mark read now.
        self.marks.sync()
        try:  # never past the mark: it must still name a commit in the file (mark.py)
            marked = read_mark(self.path.parent / MARK_FILE, self.key, self.table_id,
                               self.game).seq
        except (OSError, MarkError):
            return []
        try:
            return self.retention.move(archive_dir or self.archive_dir, self.outbox.acked_upto,
                                       marked)
        finally:  # also when the VACUUM after a move failed: the moves are committed
            self._rebase()

    def ack_segment(self, number: int, head: str, digest: str, utc: str | None = None) -> bool:
        """Head office holds segment `number` (`Retention.ack`): the link's call."""
        return self.retention.ack(number, head, digest, utc)

    def prune(self, keep_rounds: int | None, archive_dir: Path | None = None, *,
              keep_days: int | None = None, dry_run: bool = False) -> list[PrunePlan]:
        """Prune what retention allows (`Retention.plan`), oldest first; with `dry_run` only
        say what would be pruned and why the rest is kept."""
        # Round numbers a recovery skipped are no rounds: not counted towards `keep_rounds`
        # (counted as if skipped before every segment, so never fewer rounds are kept).
        plans = self.retention.plan(keep_rounds, archive_dir or self.archive_dir,
                                    self.last_round_number - self.rounds_skipped,
                                    keep_days=keep_days)
        if not dry_run and any(p.prune for p in plans):
            self.marks.sync()  # as before a move: a mark on the disk names a commit still kept
        if not dry_run and self.retention.prune(plans):
            self._rebase()
        return plans

    def expire_archives(self, keep_days: int, archive_dir: Path | None = None) -> list[int]:
        """Delete archives of segments pruned `keep_days` ago (`Retention.expire_archives`)."""
        return self.retention.expire_archives(archive_dir or self.archive_dir, keep_days)

    def archived_round(self, number: int) -> ArchivedRound:
        """Round `number`, pruned or moved out of the file, read back from its segment's
        archive while the archive is on the table (archived.py: trusted only once its digest,
        meta and chain to the segment's MAC'd head check out), with any of its events still in
        the journal.
        RoundPruned saying where it went, and why it cannot be read, if the archive is gone or
        does not check out; ValueError if the round was not pruned."""
        st = self.retention.pruned_segment(number)
        where = None if st is None else self.retention.where_pruned(number, self.archive_dir, st)
        if st is None or where is None:
            raise EntryRefused(f"round {number} was not pruned from the journal")
        path = self.archive_dir / str(st.archive)
        if st.archive is None or not path.exists():
            raise RoundPruned(where)
        if not st.mac_ok:
            raise RoundPruned(f"{where}; its segment row's MAC does not check out")
        try:
            got = archived.read_round(path, st, number, self.table_id, self.game)
        except archived.ArchiveRefused as exc:
            what = {"altered": "is altered", "missing": "is missing",
                    "unreadable": "cannot be read"}.get(exc.what, "does not check out")
            raise RoundPruned(f"{pruned_head(st, number)}; its archive {path} {what}, it "
                              f"cannot be read back: {exc}") from exc
        with self._mutex:  # a round never spans segments today; were it to, the rest is here
            rest = [e for e in self.reader.round_events(number) if e.seq > st.segment.last]
            record = got.record or (self.reader.round_record(number) if rest else None)
        return dataclasses.replace(got, events=got.events + rest, record=record)
