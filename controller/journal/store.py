"""The durable journal: every input event, hash-chained, in one SQLite file (docs/journal.md).

The daemon appends each event (with the `outbox` and `round` effects it produced) in one
transaction before it acts on it; at start it verifies the chain from the newest checkpoint that
checks out (checkpoint.py; the whole chain: `verify`, the daemon's background pass) and replays
from the latest snapshot. A journal that fails verification is never reused or replaced:
`Journal.open` raises `JournalError` and the daemon stays out of service until a technician
looks at it.

`Journal` opens, commits and closes; reading is its `Reader` (read.py), the outbox and acks its
`Outbox` (outbox.py). The hash of a record is in chain.py, the stored form in codec.py and
schema.py (schema 3: one deflated row per commit, MAC'd with the table's key, mac.py), the
checks in verify.py, the high-water marks in mark.py and marks.py. ~520 lines because opening
(lock, key, verification, upgrades, marks) and the commit path share the writer's private state;
everything else it does is in those modules.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from controller.events import Effect, EffectKind, Event, Now
from controller.journal import checkpoint, segments
from controller.journal.chain import genesis_hash, snapshot_hash
from controller.journal.codec import snapshot_text
from controller.journal.errors import EntryRefused, JournalError, JournalLossError, RoundPruned
from controller.journal.lock import LOCK_WAIT_S, WriteGuard, take_lock
from controller.journal.mac import JournalKey, find_journal_key
from controller.journal.marks import Marks, check_open, version_for
from controller.journal.outbox import Outbox
from controller.journal.position import load_state
from controller.journal.read import Reader
from controller.journal.records import (
    LOSS_KIND,
    Entry,
    OutboxMessage,
    RoundRecord,
    Row,
    StoredEvent,
    outbox_next,
    prepare,
    round_next,
)
from controller.journal.retention import MOVED_SCHEMA, Retention
from controller.journal.schema import (
    JOURNAL_FILE,
    KEYED_SCHEMAS,
    LOCK_FILE,
    SCHEMAS_READ,
    create_journal,
    read_meta,
    set_pragmas,
)
from controller.journal.segment_calls import SegmentCalls
from controller.journal.upgrade import (
    downgrade_to_v3,
    upgrade_to_v2,
    upgrade_to_v3,
    upgrade_to_v4,
)
from controller.journal.verify import verify_conn
from controller.journal.walfile import prefill_wal
from controller.journal.walk import VerifyReport

# Effects a commit must be fsync'd for before they are acted on: head office hears of them, or
# they close a round (settlement).
MONEY_EFFECTS = frozenset({EffectKind.OUTBOX, EffectKind.ROUND})


class Journal(SegmentCalls):
    """The daemon's journal. One writer per state dir (a lock file enforces it); calls are
    serialised by an internal lock, so a worker thread may do the appends."""

    def __init__(self, path: Path, conn: sqlite3.Connection, lock_fd: int, table_id: str,
                 game: str, state: VerifyReport, key: JournalKey,
                 mark_problem: tuple[str, int | None] | None = None,
                 segment_rounds: int | None = None, archive_dir: Path | None = None,
                 marks: Marks | None = None) -> None:
        self.path = path
        self.key = key
        # Set only when opened for `accept_loss`: what is wrong with the high-water mark.
        self.mark_problem = mark_problem
        # The mark beside the file and, with [journal] outside_mark, its copy (marks.py).
        self.marks = marks or Marks(path.parent, None, key, table_id, game, 2)
        self.marks.open_writers()
        self.table_id = table_id
        self.game = game
        self._conn = conn
        self._guard = WriteGuard(path, conn, lock_fd)
        self._mutex = threading.RLock()
        self._last_seq = state.last_seq
        self._last_hash = state.last_hash or genesis_hash(table_id, game)
        self._last_event_round = state.last_event_round
        self._round_told: int | None = None  # last_round_told's cache
        self._rounds = {"completed": state.rounds_completed, "voided": state.rounds_voided,
                        "skipped": state.rounds_skipped}
        self.reader = Reader(path, conn, self._mutex, table_id, game, lambda: self._last_seq)
        self.outbox = Outbox(conn, self._mutex, self._guard, self.reader, self._mac,
                             state.next_outbox_id, state.acked_upto)
        self.retention = Retention(path, conn, self._mutex, self._guard, key, table_id, game,
                                   segment_rounds or segments.SEGMENT_ROUNDS)
        # Where closed segments are archived ([journal] archive_dir; default beside the file).
        self.archive_dir = archive_dir or path.parent / segments.ARCHIVE_DIR
        self.reader.pruned = (state.pruned_through, state.pruned_hash)
        # How the last open verified: from the checkpoint at this seq (0: the whole chain), and
        # the checkpoints it refused (each a sign of damage or tampering, for the log).
        self.verified_from = 0
        self.refused_checkpoints: list[str] = []
        self._may_move = False  # set by `open`: a writer that may upgrade, of schema 4 or 5

    # ---- opening -------------------------------------------------------------------------

    @classmethod
    def open(cls, state_dir: Path | str, *, table_id: str, game: str, create: bool = True,
             verify: bool = True, key_file: Path | None = None, fast: bool = False,
             segment_rounds: int | None = None, archive_dir: Path | None = None,
             full_wal: bool = False, upgrade: bool = True, fresh_ok: bool = True,
             outside_mark: Path | None = None, _recovering: bool = False) -> Journal:
        """Open (or, with `create`, make) the journal of this table and game; verify it, its
        MACs (with the key `find_key` finds, or `key_file`) and its high-water mark.

        Raises JournalError if it is of another table/game, fails verification, is locked by
        another process, or is missing with create=False; JournalLossError if it is shorter
        than its high-water mark or the mark is missing or forged. Never replaces an existing
        file. A schema-1 or -2 journal is upgraded in place (its records stay as they are).

        `fast` (the daemon): verify only what follows the latest checkpoint that checks out
        (checkpoint.py), so that start-up does not grow with the journal's age; the whole chain
        is then verified in the background (background.py) and offline. `segment_rounds` and
        `archive_dir`: the `[journal]` configuration's (default: segments.py's). `full_wal`
        (the daemon): a missing WAL is first made at its full size (walfile.py), ~2.2 MB
        written once, so that its commits never grow the file. `upgrade=False` (a trial boot
        of an update, the technician's tools): a schema-3 journal stays schema 3, its new rows
        storing their chain hash as before, so that the software it came from still reads it
        (a new journal is made as schema 3 then too); schema 1 and 2 are still upgraded to 3.
        `fresh_ok=False` (the daemon): no new journal where one was (marks.fresh_refusal);
        `outside_mark`: the mark's copy outside the state directory (marks.py)."""
        if not table_id or not game:
            raise EntryRefused("table_id and game are required")
        state_dir = Path(state_dir)
        path = state_dir / JOURNAL_FILE
        check_open(path, outside_mark, create and not fresh_ok)  # marks.py
        if create:
            state_dir.mkdir(mode=0o750, parents=True, exist_ok=True)
        elif not state_dir.is_dir():
            raise JournalError(f"state directory {state_dir} does not exist")
        try:
            lock_fd = take_lock(state_dir / LOCK_FILE, exclusive=True, wait_s=LOCK_WAIT_S)
        except OSError as exc:
            if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):  # not a lock: the disk
                rofs = exc.errno == errno.EROFS
                why = "is on a read-only file system" if rofs else "is not writable by this user"
                hint = "" if rofs else " (changing the journal is root's or the service's: sudo)"
                raise JournalError(f"journal {path}: the state directory {state_dir} {why} "
                                   f"({exc.strerror}); cannot take the journal lock{hint}"
                                   ) from exc
            raise JournalError(f"journal {path} is locked by another process (a running "
                               f"tablectld or journal verify): {exc}") from exc
        try:
            j = cls._open_locked(path, lock_fd, table_id, game, create, verify, key_file,
                                 fast, _recovering, segment_rounds, full_wal, upgrade,
                                 outside_mark)
        except BaseException:
            os.close(lock_fd)
            raise
        if archive_dir is not None:
            j.archive_dir = archive_dir
        return j

    @classmethod
    def _open_locked(cls, path: Path, lock_fd: int, table_id: str, game: str, create: bool,
                     verify: bool, key_file: Path | None, fast: bool, recovering: bool,
                     segment_rounds: int | None = None, full_wal: bool = False,
                     upgrade: bool = True, outside_mark: Path | None = None) -> Journal:
        state_dir, genesis = path.parent, genesis_hash(table_id, game)
        mv = version_for(state_dir, upgrade)  # the marks' version (marks.py)
        if not path.exists():
            if Path(f"{path}-wal").exists():
                raise JournalError(f"journal {path} is missing but its write-ahead log "
                                   f"{path}-wal exists: refusing to start a new journal")
            if not create:
                raise JournalError(f"journal {path} does not exist")
            key = find_journal_key(path, key_file, create=True, key_id=None)
            create_journal(path, table_id, game, key, hashless=upgrade)
            Marks(state_dir, outside_mark, key, table_id, game, mv).create(0, 0, genesis, 0)
        with open(path, "rb") as f:
            magic = f.read(16)
        if magic != b"SQLite format 3\x00":
            # SQLite would happily turn an empty file into a new database: refuse first.
            raise JournalError(f"journal {path} is not an SQLite database (empty or damaged "
                               "header); refusing to use or replace it")
        if full_wal:
            # Before SQLite opens it: a WAL of full size, so commits never grow it (walfile.py).
            prefill_wal(path)
        try:
            # mode=rw: never let SQLite create an empty file in place of a vanished journal.
            conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as exc:
            raise JournalError(f"cannot open journal {path}: {exc}") from exc
        try:
            # Read before any pragma writes: a foreign or damaged file must stay as it is.
            meta = read_meta(conn)
            schema = meta.get("schema")
            if schema not in SCHEMAS_READ:
                raise JournalError(f"journal {path}: unknown schema {schema!r}")
            if (meta.get("table_id"), meta.get("game")) != (table_id, game):
                raise JournalError(
                    f"journal {path} belongs to table {meta.get('table_id')!r} game "
                    f"{meta.get('game')!r}, not table {table_id!r} game {game!r}; refusing "
                    "to use it")
            # A key is made (development only) for a journal that has no MACs yet.
            key = find_journal_key(path, key_file, create=create and schema not in KEYED_SCHEMAS,
                                   key_id=meta.get("key_id"))
            marks = Marks(state_dir, outside_mark, key, table_id, game, mv)
            set_pragmas(conn, path)
            start, refused = None, {}
            if verify and fast and schema in KEYED_SCHEMAS:
                start, refused = checkpoint.latest(conn, key, table_id, game,
                                                   int(meta["v1_last_seq"]))
            if verify:
                state = verify_conn(conn, (table_id, game), key, start=start, passed=refused)
                if not state.ok:
                    first = "; ".join(state.errors[:3])
                    raise JournalError(
                        f"journal {path} is corrupt ({state.error_count} errors; first: {first})."
                        f" The table stays out of service; inspect with `tablectl journal "
                        f"verify --state-dir {path.parent}`. It is never replaced automatically.")
            else:
                state = load_state(conn, table_id, game)
            problem = None
            if schema not in KEYED_SCHEMAS:
                # The mark first: a crash before the upgrade commits leaves a schema-1/2 journal
                # (upgraded again next time) with a mark, never a schema-3 one without.
                marks.create(state.last_seq, state.next_outbox_id - 1,
                             state.last_hash or genesis, state.last_round_number, marks.paths[:1])
                if schema == "1":
                    upgrade_to_v2(conn, path, game, state.last_seq)
                upgrade_to_v3(conn, path, key, table_id, game, state)
                if upgrade:
                    upgrade_to_v4(conn, path, state.last_seq)
            else:
                problem = marks.problem(conn, read_meta(conn), state, genesis)
                if problem is not None and not recovering:
                    raise JournalLossError(
                        f"journal {path}: {problem[0]}. The table stays out of service. Put back "
                        "a copy of the journal that holds those records, or record the loss: "
                        f"`tablectl journal accept-loss --state-dir {state_dir} --reason TEXT` "
                        "(docs/journal.md, \"Recovering\").", problem[1], state.last_seq)
                if problem is None and state.last_seq == 0 and not marks.paths[0].exists():
                    # Killed between making the journal and its mark: make the mark now, or
                    # the records written next would have none (out of service at the next
                    # start: the SIGKILL crash test found it).
                    marks.create(0, 0, genesis, 0, marks.paths[:1])
                if schema == "3" and upgrade:
                    upgrade_to_v4(conn, path, state.last_seq)
            conn.execute(checkpoint.TABLE_CHECKPOINTS)
            conn.execute(segments.TABLE_SEGMENTS)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise JournalError(f"journal {path} is unreadable (corrupt?): {exc}") from exc
        except BaseException:
            conn.close()
            raise
        j = cls(path, conn, lock_fd, table_id, game, state, key, problem, segment_rounds,
                marks=marks)
        j._may_move = upgrade and read_meta(conn).get("schema") in ("4", "5")
        j.verified_from, j.refused_checkpoints = state.checkpoint_seq, list(refused.values())
        return j

    def write_held_ack(self) -> None:
        """Write head office's ack held for the next commit now (outbox.py); the close does."""
        with self._mutex:
            if not self._guard.closed:
                with contextlib.suppress(JournalError, sqlite3.Error):
                    self.outbox.write_held()

    def close(self) -> None:
        with self._mutex:
            if self._guard.closed:
                return
            self.write_held_ack()  # an ack held for the next commit: there is none
            self._conn.close()  # checkpoints the WAL into the file
            self.marks.close()
            self._guard.release()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- writing -------------------------------------------------------------------------

    @property
    def hashless(self) -> bool:
        """Schema 4: its rows store no chain hash. A schema-3 journal left so (`upgrade=False`,
        or downgraded) goes on storing it."""
        return self.reader.hashes.stored_through is not None

    @property
    def last_seq(self) -> int:
        return self._last_seq

    @property
    def last_hash(self) -> str:
        return self._last_hash

    @property
    def last_round_number(self) -> int:
        """The number of the last round recorded completed or voided, or skipped by a recovery
        (0 before the first): the next round is this + 1."""
        return self._rounds["completed"] + self._rounds["voided"] + self._rounds["skipped"]

    @property
    def rounds_skipped(self) -> int:
        """Round numbers skipped by recoveries (records.round_next): used by a lost journal."""
        return self._rounds["skipped"]

    @property
    def last_event_round(self) -> int:
        """The `round` of the last event appended (0 before the first)."""
        return self._last_event_round

    def last_round_told(self) -> int:
        """The highest round number head office may hold from this journal: the last round
        recorded, or the open round once a message naming it (its jackpot increments, UTH
        5.5) was written. What the link compares with head office's last ledgered round
        (extensions/numbering.py): a round the table only opened (a shuffle, a lamp) is not
        one head office can hold. Read from the open round's events once, then kept."""
        if self._round_told is None:
            told = 0
            if self._last_event_round > self.last_round_number:
                with contextlib.suppress(ValueError):  # pruned: not the open round's
                    told = max((_message_round(m) for e in self.reader.round_events(
                        self._last_event_round) for m in e.outbox), default=0)
            self._round_told = told
        return max(self.last_round_number, self._round_told)

    @property
    def _next_outbox_id(self) -> int:  # (tests of older journals read these two)
        return self.outbox.next_id

    @property
    def _lock_fd(self) -> int | None:  # (the daemon's tests check that close released it)
        return self._guard.lock_fd

    @property
    def _acked_upto(self) -> int:
        return self.outbox.acked_upto

    def append(self, event: Event, now: Now, *, round: int, effects: Sequence[Effect] = (),
               snapshot: Mapping[str, Any] | None = None) -> int:
        """Commit one event, its outbox and round effects and an optional snapshot (the state
        after this event) in one fsync'd transaction; return its seq.

        ValueError for bad input (nothing written). JournalError if the write failed: the
        journal then refuses further writes; reopen it (which re-verifies) to continue."""
        return self.append_batch([Entry(event, now, round, tuple(effects), snapshot)])[0]

    def append_batch(self, entries: Sequence[Entry], *, durable: bool = True) -> list[int]:
        """Commit several events, in order, in ONE fsync'd transaction; return their seqs.

        For events that were already waiting together: none of them has been acted on, and one
        fsync instead of one each saves most of the bytes written (each fsync'd commit costs at
        least one 4 KiB page). All or nothing, like `append`. The commit is one `commits` row.

        `durable=False` (the daemon, for events that move no money: docs/daemon.md "Where the
        bytes of a round go"): the same transaction without its own fsync (WAL,
        synchronous=NORMAL). A crash of the process loses nothing; a power cut may lose it and
        the commits after it up to the next fsync'd one, never a part of one, never one before
        (the WAL is a sequence). Refused for a batch with outbox messages, round records or a
        snapshot. The high-water mark is not moved past it."""
        if not durable and any(e.snapshot is not None or any(
                fx.kind in MONEY_EFFECTS for fx in e.effects) for e in entries):
            raise EntryRefused("outbox messages, round records and snapshots are always fsync'd")
        with self._mutex:
            self._guard.check()
            seq, last_hash = self._last_seq, self._last_hash
            last_round, next_id = self._last_event_round, self.outbox.next_id
            next_round = self.last_round_number + 1
            done = dict(self._rounds)
            rows: list[Row] = []
            cps: list[checkpoint.Checkpoint] = []
            for entry in entries:
                seq += 1
                if entry.event.kind == LOSS_KIND:  # outbox ids lost with the records: skipped
                    next_id = max(next_id, outbox_next(entry.event.data) or 0)
                    skip_to = round_next(entry.event.data) or 0
                    if skip_to > next_round:  # and the round numbers head office has ledgered
                        done["skipped"] += skip_to - next_round
                        next_round = skip_to
                row = prepare(entry, seq, last_hash, last_round, next_id, next_round)
                rows.append(row)
                last_hash, last_round = row.hash, entry.round
                next_id += len(row.outbox)
                next_round += len(row.rounds)
                for _number, status, _summary in row.rounds:
                    done[status] += 1
                if row.snapshot is not None:  # the state at a snapshot, for a fast start
                    cps.append(checkpoint.Checkpoint(
                        row.seq, row.hash, entry.round, done["completed"], done["voided"],
                        next_id - 1, self.outbox.acked_upto,
                        snapshot_hash(row.hash, row.snapshot), done["skipped"]))
            if not rows:
                return []
            body = self.reader.codec.pack("[" + ",".join(r.element for r in rows) + "]")
            with self._guard.transaction(f"append of seq {rows[0].seq}..{rows[-1].seq}",
                                         fsync=durable) as c:
                # Schema 4: no stored chain hash (schema.HASH_STORED_THROUGH); the MAC covers it.
                c.execute("INSERT INTO commits(seq, round, rec, out, body, hash, mac) "
                          "VALUES (?,?,?,?,?,?,?)",
                          (seq, last_round, next_round - 1, next_id - 1, body,
                           b"" if self.hashless else bytes.fromhex(last_hash),
                           self._mac("commit", seq, last_hash)))
                for row in rows:
                    if row.snapshot is not None:
                        checkpoint.insert_snapshot(c, row, self._mac)
                for cp in cps:
                    checkpoint.insert(c, self.key, self.table_id, self.game, cp)
                    self.retention.close_if_due(c, cp)
                held = self.outbox.insert_held(c)  # an ack held back rides this commit
            self.outbox.held_written(held)
            self._last_seq, self._last_hash = seq, last_hash
            self.reader.hashes.remember(seq, last_hash)
            if durable:  # after the commit: never ahead of it (nor of what a power cut may take)
                self.marks.advance(seq, next_id - 1, last_hash, next_round - 1)
            self._last_event_round = last_round
            if self._round_told is not None:
                self._round_told = max([self._round_told, *(
                    _message_round(m) for row in rows for m in row.outbox)])
            self.outbox.next_id = next_id
            self._rounds = done
            return [row.seq for row in rows]

    def downgrade_to_v3(self) -> int:
        """Schema 4 -> 3 for the software before it (upgrade.downgrade_to_v3): how many rows
        were given their chain hash. This writer then stores hashes as schema 3 does. A
        schema-5 journal first has its moved segments put back from their archives
        (`Retention.restore`; JournalError, nothing changed, if one cannot be)."""
        with self._mutex:
            self._guard.check()
            if self._rounds["skipped"]:  # the software before would find the numbers jump
                raise JournalError(f"journal {self.path}: a recovery skipped {self.rounds_skipped}"
                                   " round numbers; the software before cannot read it: not "
                                   "downgraded (docs/journal.md, \"Recovering\")")
            if read_meta(self._conn).get("schema") == MOVED_SCHEMA:
                # 5 -> 4 first: the moved segments back from their archives.
                self.retention.restore(self.archive_dir)
                self._rebase()
            self._may_move = False  # for the software before: nothing moves again
            rows = downgrade_to_v3(self._conn, self._guard, self.reader)
            # The marks as the software before reads them (version 1, without the round).
            self.marks.rewrite(self._last_seq, self.outbox.next_id - 1, self._last_hash,
                               self.last_round_number, 1)
            return rows

    def ack_outbox(self, upto_id: int, utc: str | None = None) -> int:
        """Head office acknowledged every message up to `upto_id` (`Outbox.ack`)."""
        return self.outbox.ack(upto_id, utc)

    def _mac(self, domain: str, *fields: Any) -> bytes:
        return self.key.mac(domain, self.table_id, self.game, *fields)

    # ---- reading -------------------------------------------------------------------------

    def replay_point(self) -> tuple[dict[str, Any] | None, list[StoredEvent]]:
        """The latest snapshot's state (None: start from the machine's initial state) and every
        event after it, in order: what the daemon replays at start."""
        with self._mutex:
            # Only a MAC'd snapshot (checked at open) is trusted; one from before the schema-3
            # upgrade is not, and replay then starts further back (from genesis if need be).
            row = self._conn.execute(
                "SELECT seq, state FROM snapshots WHERE mac IS NOT NULL ORDER BY seq DESC "
                "LIMIT 1").fetchone()
            after = 0 if row is None else row[0]
            return (None if row is None else json.loads(snapshot_text(row[1])),
                    list(self.reader.iter_events(after + 1)))

    # The reader's and the outbox's queries, as callers have always asked the journal.
    def iter_events(self, start_seq: int = 1, end_seq: int | None = None) -> Iterator[StoredEvent]:
        return self.reader.iter_events(start_seq, end_seq)

    def tail(self, n: int = 20) -> list[StoredEvent]:
        return self.reader.tail(n)

    def round_record(self, number: int) -> RoundRecord | None:
        return self.reader.round_record(number)

    def round_events(self, number: int) -> list[StoredEvent]:
        """RoundPruned (a ValueError: `round show` says it) if retention pruned it."""
        where = self.retention.where_pruned(number, self.archive_dir)
        if where is not None:
            raise RoundPruned(where)
        return self.reader.round_events(number)

    def pending_outbox(self, limit: int = 100) -> list[OutboxMessage]:
        return self.outbox.pending(limit)

    def summary(self) -> dict[str, Any]:
        """`tablectl journal summary`."""
        with self._mutex:
            snap = self._conn.execute("SELECT max(seq) FROM snapshots").fetchone()[0]
            first = next(self.iter_events(1, 1), None)
            last = next(self.iter_events(self._last_seq, self._last_seq), None)
            size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal"))
                       if p.exists())
            return {
                "path": str(self.path), "table_id": self.table_id, "game": self.game,
                "records": self._last_seq, "last_seq": self._last_seq,
                "rounds_completed": self._rounds["completed"],
                "rounds_voided": self._rounds["voided"],
                # Round numbers a recovery skipped (used by a lost journal): only once one did.
                **({"rounds_skipped": self._rounds["skipped"]} if self._rounds["skipped"] else {}),
                "last_round": self.last_round_number, "current_round": self._last_event_round,
                **self.outbox.summary(),
                "pruned_through_seq": self.reader.pruned[0],
                # Checkpoints refused when this writer opened (each logged by the daemon, E104).
                "refused_checkpoints": len(self.refused_checkpoints),
                "verified_from_seq": self.verified_from,
                "last_snapshot_seq": snap,
                "first_utc": first.utc if first else None, "last_utc": last.utc if last else None,
                "file_bytes": size,
                "key_id": self.key.key_id, "key_dev": self.key.dev,
                # Failed in-place writes of the mark: it lags (safe), detection narrows.
                "mark_write_errors": self.marks.errors,
            }

    def verify(self) -> VerifyReport:
        """Re-walk the whole chain (e.g. `tablectl selftest`); does not change the journal."""
        with self._mutex:
            return verify_conn(self._conn, (self.table_id, self.game))


def _message_round(message: Any) -> int:
    """The round an outbox message names (a stored message, or a row's [id, type, payload]);
    0 when it names none."""
    payload = message.payload if hasattr(message, "payload") else message[2]
    number = payload.get("round") if isinstance(payload, dict) else None
    return number if type(number) is int else 0
