"""The writer's side of segments (segments.py): closing one at a checkpoint, archiving the
closed ones, recording head office's acknowledgement, and pruning what retention allows."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.journal import archived, segments
from controller.journal.checkpoint import Checkpoint
from controller.journal.errors import EntryRefused, JournalError
from controller.journal.lock import WriteGuard
from controller.journal.mac import JournalKey, fsync_dir
from controller.journal.schema import read_meta, utc_now
from controller.journal.segments import Segment, SegmentState

MOVED_SCHEMA = "5"  # a segment moved out of the file: code before it must refuse the file
_RESTORE = {"commits": "SELECT seq, round, rec, out, body, hash, mac FROM commits",
            "snapshots": "SELECT seq, state, hash, mac FROM snapshots",
            "checkpoints": "SELECT seq, body, mac FROM checkpoints"}
_COMMITS_NAME = re.compile(r'CREATE TABLE\s+(IF NOT EXISTS\s+)?"?commits"?', re.IGNORECASE)


@dataclass(frozen=True)
class PrunePlan:
    """What `prune` does (or, dry, would do) to one segment, and why."""

    number: int
    first: int
    last: int
    rounds: tuple[int, int]
    prune: bool
    why: str

    def as_json(self) -> dict[str, Any]:
        return {"segment": self.number, "seq": [self.first, self.last],
                "rounds": list(self.rounds), "prune": self.prune, "why": self.why}


class Retention:
    def __init__(self, path: Path, conn: sqlite3.Connection, mutex: threading.RLock,
                 guard: WriteGuard, key: JournalKey, table_id: str, game: str,
                 segment_rounds: int) -> None:
        self.path = path
        self._conn = conn
        self._mutex = mutex
        self._guard = guard
        self._key, self._table_id, self._game = key, table_id, game
        self.segment_rounds = segment_rounds
        self._v1_last = int(read_meta(conn)["v1_last_seq"])
        last = conn.execute("SELECT body FROM segments ORDER BY number DESC LIMIT 1").fetchone()
        self._last: Segment | None = None if last is None else Segment(**_loads(last[0]))
        # Set when a segment closes or head office's acknowledgement is recorded: the daemon's
        # upkeep then runs within seconds, not at the hour (background.py), so that a segment
        # is archived soon after it closes and moved soon after it is held, while few commits
        # follow it (each is copied by the move, and the VACUUM rewrites what remains).
        self.due = threading.Event()
        # What the daemon's background verification last found wrong with the archives
        # (background.py): `tablectl status` shows it until the next pass finds them whole.
        self.archive_faults: list[str] = []

    def states(self) -> list[SegmentState]:
        with self._mutex:
            return segments.read_all(self._conn, self._key, self._table_id, self._game)

    def pruned_through(self) -> int:
        return segments.pruned_through(self.states())[0]

    def close_if_due(self, c: sqlite3.Connection, cp: Checkpoint) -> None:
        """Inside the commit that writes checkpoint `cp`: close the open segment there once it
        holds `segment_rounds` rounds. (A failed commit fails the journal, which is reopened
        before another write: `_last` never runs ahead of the file for long.)"""
        last = self._last
        rounds = cp.completed + cp.voided
        if rounds - (0 if last is None else last.rounds) < self.segment_rounds:
            return
        if last is None:
            prev = str(c.execute("SELECT value FROM meta WHERE key = 'genesis'").fetchone()[0])
        else:
            prev = last.head
        seg = Segment(1 if last is None else last.number + 1, 1 if last is None else last.last + 1,
                      cp.seq, prev, cp.hash, 1 if last is None else last.last_round + 1,
                      cp.round, rounds, utc_now())
        c.execute("INSERT INTO segments(number, body, mac) VALUES (?,?,?)",
                  (seg.number, seg.text(), segments.seg_mac(self._key, self._table_id,
                                                            self._game, seg)))
        self._last = seg
        self.due.set()

    def archive(self, archive_dir: Path) -> list[tuple[int, str, str]]:
        """Archive every closed segment not archived yet; (number, file name, digest) each.
        The file is written from the writer's connection outside any write transaction; only
        the row update takes the write lock."""
        done = []
        meta = read_meta(self._conn)
        for st in self.states():
            if st.archive is not None or st.pruned_utc is not None:
                continue
            # Its own read connection (WAL): the writer commits on meanwhile.
            reader = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            try:
                name, digest = segments.write_archive(reader, st.segment, meta, archive_dir)
            finally:
                reader.close()
            with self._mutex:
                self._guard.check()
                self._write("UPDATE segments SET archive = ?, digest = ? WHERE number = ?",
                            (name, digest, st.segment.number))
            done.append((st.segment.number, name, digest))
        return done

    def ack(self, number: int, head: str, digest: str, utc: str | None = None) -> bool:
        """Head office holds segment `number` with this head and digest (the link calls this
        with head office's acknowledgement). False, and nothing recorded, unless they are the
        segment's own: head office must hold exactly what the table archived."""
        with self._mutex:
            st = next((s for s in self.states() if s.segment.number == number), None)
            if st is None or not st.mac_ok or st.segment.head != head or st.digest != digest:
                return False
            utc = utc or utc_now()
            self._write("UPDATE segments SET ack_utc = ?, ack_mac = ? WHERE number = ?",
                        (utc, segments.ack_mac(self._key, self._table_id, self._game,
                                               st.segment, digest, utc), number))
            self.due.set()
            return True

    def move(self, archive_dir: Path, acked_upto: int, marked: int) -> list[int]:
        """Move out of the journal file, oldest first, each closed segment head office holds,
        stopping at the first that is not ready: genuine (its MAC), acknowledged, its archive
        there and checking out (archived.py: it becomes the segment's only copy on the table)
        with the columns a downgrade needs to put it back (an older archive: the segment stays
        until retention prunes it), every outbox message up to its end acknowledged (the link
        never reads it again), the high-water mark (`marked`) at or past its end (the mark
        must go on naming a commit in the file), no schema-1 rows, every older one out of the
        file already. Until retention prunes it (`prune` marks it, `expire_archives` deletes
        the file) its archive is its copy on the table.

        In one transaction each: the commit ending at its last seq and every later one copied
        into a fresh `commits` table and the old table dropped (a drop frees pages without
        writing them, where a delete rewrote every leaf it emptied); the snapshots, checkpoints
        and acks before its last seq deleted, but for the checkpoint and snapshot at it (the
        start of what remains) and the checkpoints at the ends of earlier segments (one a
        segment: a downgrade that puts this one back goes on from the one before it); the
        segment marked moved, the meta schema 5. Then a VACUUM of what remains (the dictionary,
        the segment rows, the commits since): a file with no free pages, which grows as a new
        one does, so that no later commit pays for a freed page's reuse (docs/daemon.md, "What
        the prune itself costs"). The segments moved."""
        moved: list[int] = []
        for st in self.states():
            if st.out_of_file:
                continue
            seg = st.segment
            if (not (st.mac_ok and st.ack_ok) or st.archive is None or seg.first <= self._v1_last
                    or seg.last > marked):
                break
            with self._mutex:
                cp = self._conn.execute("SELECT body FROM checkpoints WHERE seq = ?",
                                        (seg.last,)).fetchone()
            try:
                out = Checkpoint.parse(cp[0] if cp and isinstance(cp[0], str) else "").out
            except ValueError:
                break  # verification says what is wrong with it
            # The archive read and checked outside the writer's lock (~0.3 s for 2,000 rounds).
            if out > acked_upto or not self._restorable(archive_dir, st):
                break
            with self._mutex:
                self._guard.check()
                with self._guard.transaction(f"move of segment {seg.number}") as c:
                    ddl = c.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND "
                                    "name = 'commits'").fetchone()[0]
                    c.execute(_COMMITS_NAME.sub("CREATE TABLE commits_next", ddl, count=1))
                    c.execute("INSERT INTO commits_next SELECT * FROM commits WHERE seq >= ?",
                              (seg.last,))
                    c.execute("DROP TABLE commits")
                    c.execute("ALTER TABLE commits_next RENAME TO commits")
                    c.execute("DELETE FROM snapshots WHERE seq < ?", (seg.last,))
                    # The checkpoints at segment ends stay (one a segment): put back by a
                    # downgrade, a segment goes on from the checkpoint at the one before it.
                    c.execute("DELETE FROM checkpoints WHERE seq < ? AND seq NOT IN (SELECT "
                              "json_extract(body, '$.last') FROM segments)", (seg.last,))
                    c.execute("DELETE FROM outbox_acked WHERE upto_id < (SELECT "
                              "coalesce(max(upto_id), 0) FROM outbox_acked)")
                    if not segments.has_moved(c):
                        c.execute(segments.ADD_MOVED)
                    c.execute("UPDATE segments SET moved_utc = ? WHERE number = ?",
                              (utc_now(), seg.number))
                    c.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (MOVED_SCHEMA,))
            moved.append(seg.number)
        if moved:
            with self._mutex:
                self._guard.check()
                try:
                    self._conn.execute("VACUUM")
                except sqlite3.Error as exc:  # e.g. no room: the journal is whole, only larger
                    raise JournalError(f"journal {self.path}: segments {moved} moved to their "
                                       f"archives, but the VACUUM after failed: {exc}") from exc
        return moved

    def _restorable(self, archive_dir: Path, st: SegmentState) -> bool:
        """The archive is there, checks out (it becomes the segment's only copy on the table)
        and keeps the columns a downgrade needs to put the segment back (an archive written
        before them: the segment stays in the file until retention prunes it)."""
        try:
            conn = archived.open_checked(archive_dir / str(st.archive), st, self._table_id,
                                         self._game)
        except archived.ArchiveRefused:
            return False
        try:
            return _has_columns(conn)
        finally:
            conn.close()

    def restore(self, archive_dir: Path) -> list[int]:
        """Schema 5 -> 4 (`tablectl journal downgrade`, for the software before schema 5):
        every segment moved out of the file and not pruned is put back from its archive
        (checked first: archived.py), and the meta says schema 4, in one transaction; the
        segments put back. JournalError naming the segment if an archive is missing, does not
        check out, or was written before archives kept the columns the journal bisects."""
        rows: dict[str, list[tuple[Any, ...]]] = {"commits": [], "snapshots": [],
                                                  "checkpoints": []}
        back = []
        for st in self.states():
            if st.moved_utc is None or st.pruned_utc is not None:
                continue
            number = st.segment.number
            try:
                conn = archived.open_checked(archive_dir / str(st.archive), st, self._table_id,
                                             self._game)
            except archived.ArchiveRefused as exc:
                raise JournalError(f"journal {self.path}: segment {number} cannot be put back "
                                   f"into the journal: {exc}") from exc
            try:
                if not _has_columns(conn):
                    raise JournalError(
                        f"journal {self.path}: segment {number} cannot be put back into the "
                        "journal: its archive was written before archives kept the columns "
                        "round, rec and out")
                for table, sql in _RESTORE.items():
                    rows[table] += conn.execute(sql).fetchall()
            finally:
                conn.close()
            back.append(number)
        with self._mutex:
            self._guard.check()
            with self._guard.transaction("segments put back from their archives") as c:
                c.executemany("INSERT OR IGNORE INTO commits(seq, round, rec, out, body, hash, "
                              "mac) VALUES (?,?,?,?,?,?,?)", rows["commits"])
                c.executemany("INSERT OR IGNORE INTO snapshots(seq, state, hash, mac) "
                              "VALUES (?,?,?,?)", rows["snapshots"])
                c.executemany("INSERT OR IGNORE INTO checkpoints(seq, body, mac) "
                              "VALUES (?,?,?)", rows["checkpoints"])
                c.executemany("UPDATE segments SET moved_utc = NULL WHERE number = ?",
                              [(n,) for n in back])
                c.execute("UPDATE meta SET value = '4' WHERE key = 'schema'")
        return back

    def missing_archives(self, archive_dir: Path) -> list[str]:
        """The archives that should be on the table and are not (and not deleted by retention),
        each named as `journal verify` names it: the daemon's hourly look (a stat a segment;
        whether one that is there checks out is the background pass's and `journal verify`'s
        to say, archived.py)."""
        return [text for st in self.states() if (text := archived.whereabouts(
            st, archive_dir, self._table_id, self._game, whole=False)[1]) is not None]

    def pruned_segment(self, number: int) -> SegmentState | None:
        """The segment that held round `number` if its rows are out of the journal file,
        pruned or moved to its archive (None: the round is in the file)."""
        return next((st for st in self.states() if st.out_of_file
                     and st.segment.first_round <= number <= st.segment.last_round), None)

    def where_pruned(self, number: int, archive_dir: Path,
                     st: SegmentState | None = None) -> str | None:
        """Where round `number` went, if it is out of the file (None: it is not); `st`: its
        segment, when the caller has it already. What became of its archive is said as it is:
        there, deleted by retention (and when), or missing and not deleted by retention."""
        st = st or self.pruned_segment(number)
        if st is None:
            return None
        return f"{pruned_head(st, number)}; {archived.archive_whereabouts(st, archive_dir)}"

    def plan(self, keep_rounds: int | None, archive_dir: Path, last_round: int, *,
             keep_days: int | None = None) -> list[PrunePlan]:
        return plan(self.states(), keep_rounds, archive_dir, last_round, self._v1_last,
                    keep_days=keep_days)

    def expire_archives(self, archive_dir: Path, keep_days: int,
                        now: datetime | None = None) -> list[int]:
        """Delete the archive files of segments pruned at least `keep_days` ago, oldest first;
        return their numbers. Only a segment whose row and head office's acknowledgement check
        out with the table's key, and whose file is still the digest head office acknowledged:
        an archive head office never held is never deleted. The segment row stays (head,
        digest, when acknowledged): what an auditor asks head office for. The deletion is
        recorded in the row (MAC'd, before the file goes: a stop between the two leaves the
        file, deleted at the next upkeep), so that `journal verify` and `round show` tell an
        archive retention deleted from one that is missing."""
        if type(keep_days) is not int or keep_days < 0:
            raise EntryRefused(f"days to keep archives must be an int >= 0, got {keep_days!r}")
        now = now or datetime.now(UTC)
        gone = []
        for st in self.states():
            if st.pruned_utc is None or not (st.mac_ok and st.ack_ok) or st.archive is None:
                continue
            path = archive_dir / st.archive
            if not path.exists() or segments.file_digest(path) != st.digest:
                continue  # gone already, or changed: left for a technician to look at
            if not st.deleted_by_retention:
                if _age_days(st.pruned_utc, now) < keep_days:
                    continue
                self._record_deleted(st, utc_now())
            path.unlink()
            gone.append(st.segment.number)
        if gone:
            fsync_dir(archive_dir)
        return gone

    def _record_deleted(self, st: SegmentState, utc: str) -> None:
        """Segment `st`'s archive is deleted by retention at `utc` (segments.ADD_DELETED)."""
        mac = segments.deleted_mac(self._key, self._table_id, self._game, st.segment,
                                   str(st.digest), utc)
        self._record_in_row("archive deletion recorded", segments.ADD_DELETED,
                            segments.has_deleted,
                            "UPDATE segments SET archive_deleted_utc = ?, archive_deleted_mac = ? "
                            "WHERE number = ?", (utc, mac, st.segment.number))

    def _record_in_row(self, what: str, add: tuple[str, ...],
                       has: Callable[[sqlite3.Connection], bool], sql: str,
                       args: tuple[Any, ...]) -> None:
        """A MAC'd record written into a segment's row (`sql`, `args`) in one transaction named
        `what`; its columns (`add`) are added first to a file that has none yet (`has`)."""
        with self._mutex:
            self._guard.check()
            with self._guard.transaction(what) as c:
                if not has(c):
                    for alter in add:
                        c.execute(alter)
                c.execute(sql, args)

    def accept_lost(self, number: int, archive_dir: Path, *, user: str, reason: str,
                    utc: str | None = None) -> dict[str, Any]:
        """A person accepts that segment `number`'s archive is lost for good (`tablectl journal
        accept-archive-loss`): only a segment whose rows are out of the journal file (its
        archive was their only copy on the table) and whose archive is missing or altered. An
        altered file is kept beside, renamed `.altered-UTC`, for whoever looks into it. The
        record (who, why, when, what was found) is MAC'd into the segment's row; from then on
        `journal verify`, the daemon and `round show` say the archive was lost and accepted,
        not raise it again. Head office's copy is untouched: it holds the digest and head
        only. JournalError naming why it is refused."""
        if not reason.strip():
            raise JournalError("a reason is required: why the archive cannot be put back")
        st = next((s for s in self.states() if s.segment.number == number), None)
        if st is None:
            raise JournalError(f"the journal has no segment {number}")
        if not st.mac_ok:
            raise JournalError(f"segment {number}'s row does not check out with the table's "
                               "key: it is not a loss to accept but an alteration to report")
        what, found = archived.whereabouts(st, archive_dir, self._table_id, self._game)
        if found is None:
            raise JournalError(f"segment {number}'s archive is not missing or altered ({what}):"
                               " nothing to accept")
        if not st.out_of_file:
            raise JournalError(
                f"segment {number}'s records are still in the journal file: nothing is lost "
                "yet, and it is neither moved nor pruned while its archive is missing or "
                "altered; put back a copy of the archive (sha256 "
                f"{st.digest}) or leave it to be reported (docs/operations.md, \"An archive "
                "missing or altered\")")
        utc = utc or utc_now()
        assert st.archive is not None  # whereabouts found a fault in a named archive
        path = archive_dir / st.archive
        if path.exists():  # altered: kept for whoever looks into it, out of the way
            path.rename(path.with_name(f"{path.name}.altered-{utc.replace(':', '')}"))
            fsync_dir(archive_dir)
        rec = {"utc": utc, "by": user, "reason": reason.strip(), "found": found}
        text = json.dumps(rec, sort_keys=True)
        mac = segments.lost_mac(self._key, self._table_id, self._game, st.segment, text)
        self._record_in_row("archive loss accepted", segments.ADD_LOST, segments.has_lost,
                            "UPDATE segments SET archive_lost = ?, archive_lost_mac = ? "
                            "WHERE number = ?", (text, mac, number))
        self.archive_faults = [f for f in self.archive_faults
                               if not f.startswith(f"segment {number} ")]
        return {"segment": number, "rounds": [st.segment.first_round, st.segment.last_round],
                "archive": str(path), "sha256": st.digest, **rec}

    def prune(self, plans: list[PrunePlan]) -> int:
        """Delete the rows of the planned segments, each in one transaction; the checkpoint
        and snapshot at a pruned segment's last seq stay (the start of what remains)."""
        n = 0
        for p in plans:
            if not p.prune:
                break
            with self._mutex:
                self._guard.check()
                self._write_many([
                    ("DELETE FROM commits WHERE seq BETWEEN ? AND ?", (p.first, p.last)),
                    ("DELETE FROM snapshots WHERE seq < ?", (p.last,)),
                    ("DELETE FROM checkpoints WHERE seq < ?", (p.last,)),
                    ("DELETE FROM outbox_acked WHERE upto_id < (SELECT coalesce(max(upto_id), 0) "
                     "FROM outbox_acked)", ()),
                    ("UPDATE segments SET pruned_utc = ? WHERE number = ?", (utc_now(), p.number)),
                ])
            n += 1
        return n

    def _write(self, sql: str, args: tuple[Any, ...]) -> None:
        self._write_many([(sql, args)])

    def _write_many(self, stmts: list[tuple[str, tuple[Any, ...]]]) -> None:
        with self._guard.transaction("segment update") as c:
            for sql, args in stmts:
                c.execute(sql, args)


def plan(states: list[SegmentState], keep_rounds: int | None, archive_dir: Path,
         last_round: int, v1_last: int, *, keep_days: int | None = None,
         now: datetime | None = None) -> list[PrunePlan]:
    """What retention allows: a segment is pruned only if closed, genuine, archived with
    its file still there and of that digest, acknowledged by head office, every older one
    pruned too, its last round more than `keep_rounds` behind `last_round` and it closed more
    than `keep_days` before `now` (each that is set; neither set: nothing is pruned)."""
    for name, value in (("rounds", keep_rounds), ("days", keep_days)):
        if value is not None and (type(value) is not int or value < 0):
            raise EntryRefused(f"{name} to keep must be an int >= 0, got {value!r}")
    now = now or datetime.now(UTC)
    plans, blocked = [], False
    for st in states:
        seg = st.segment
        if st.pruned_utc is not None:
            continue
        why = ("its MAC does not check out" if not st.mac_ok else
               "it holds schema-1 rows (never pruned)" if seg.first <= v1_last else
               "not archived" if st.archive is None else
               "not acknowledged by head office" if not st.ack_ok else
               "its archive is missing or changed"
               if segments.file_digest(archive_dir / st.archive) != st.digest else
               "no retention set" if keep_rounds is None and keep_days is None else
               f"within the {keep_rounds} rounds kept"
               if keep_rounds is not None and last_round - seg.last_round < keep_rounds else
               f"within the {keep_days} days kept"
               if keep_days is not None and _age_days(seg.closed_utc, now) < keep_days else
               "an older segment is kept" if blocked else "")
        blocked = blocked or bool(why)
        plans.append(PrunePlan(seg.number, seg.first, seg.last,
                               (seg.first_round, seg.last_round), not why,
                               why or "archived, acknowledged, past retention"))
    return plans


def pruned_head(st: SegmentState, number: int) -> str:
    """"round N was pruned ... (seq a..b, segment S)": the first half of `where_pruned`."""
    seg = st.segment
    what = ("pruned from the table's journal" if st.pruned_utc is not None else
            "moved out of the journal file to its archive once head office held it")
    return f"round {number} was {what} (seq {seg.first}..{seg.last}, segment {seg.number})"


def _has_columns(archive: sqlite3.Connection) -> bool:
    """The archive's commits keep round/rec/out (segments.write_archive since schema 5)."""
    cols = {row[1] for row in archive.execute("PRAGMA table_info(commits)")}
    return cols >= {"round", "rec", "out"}


def _age_days(utc: str | None, now: datetime) -> float:
    """Days since `utc` (ISO 8601); an unreadable time is taken as just now (kept)."""
    try:
        then = datetime.fromisoformat(str(utc).replace("Z", "+00:00"))
        if then.tzinfo is None:
            then = then.replace(tzinfo=UTC)
    except ValueError:
        return 0.0
    return (now - then).total_seconds() / 86_400


def _loads(text: str) -> dict[str, Any]:
    import json

    value = json.loads(text)
    return value if isinstance(value, dict) else {}
