"""Segments, archives and retention (docs/journal.md, "Segments, archive, retention").

The chain is cut into segments at checkpoints, every SEGMENT_ROUNDS rounds: a closed segment
(seq `first`..`last`, the chain hash before it and its head) is a MAC'd row, never changed; the
next one goes on from its head. A closed segment is archived: its commits, snapshots and
checkpoints copied into a small SQLite file, zlib-compressed, whose sha256 is the segment's
digest. Head office acknowledges a segment by its head and digest (a MAC'd row made when the link
hands the acknowledgement to `Journal.ack_segment`). Retention prunes, oldest first, only closed
segments that are archived, acknowledged, whose archive is still there with that digest, and
that are older than what the jurisdiction keeps: their rows are deleted in one transaction, and
the checkpoint at the last pruned seq stays as the verified start of what remains.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from controller.journal.chain import canonical
from controller.journal.mac import JournalKey, fsync_dir

SEGMENT_ROUNDS = 2000  # a closed segment every this many rounds (a busy UTH table: ~4 days)
ARCHIVE_DIR = "archive"  # beside the journal, unless the operator names another place
TABLE_SEGMENTS = """
CREATE TABLE IF NOT EXISTS segments(
    number INTEGER PRIMARY KEY,
    body TEXT NOT NULL,
    mac BLOB NOT NULL,
    archive TEXT,
    digest TEXT,
    ack_utc TEXT,
    ack_mac BLOB,
    pruned_utc TEXT,
    moved_utc TEXT
)
"""
# Schema 5 (a segment moved out of the journal file: retention.py): the column a schema-4 file
# is given when its first segment moves.
ADD_MOVED = "ALTER TABLE segments ADD COLUMN moved_utc TEXT"
# When retention deleted a segment's archive (keep_archives_days: retention.py), MAC'd: the
# record that lets `journal verify` and `round show` tell an archive retention deleted from
# one that is missing. Added to a file when its first archive is deleted (code before it
# selects its columns by name, so it reads the file as before).
ADD_DELETED = ("ALTER TABLE segments ADD COLUMN archive_deleted_utc TEXT",
               "ALTER TABLE segments ADD COLUMN archive_deleted_mac BLOB")
# A person's acceptance that a pruned or moved segment's archive is lost for good (`tablectl
# journal accept-archive-loss`: who, why, when, what was found), MAC'd like the deletion record:
# `journal verify`, the daemon and `round show` then say so instead of raising the same alarm
# forever. Added to a file at its first acceptance, as ADD_DELETED.
ADD_LOST = ("ALTER TABLE segments ADD COLUMN archive_lost TEXT",
            "ALTER TABLE segments ADD COLUMN archive_lost_mac BLOB")
_ARCHIVE_TABLES = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE commits(seq INTEGER PRIMARY KEY, body BLOB NOT NULL, hash BLOB NOT NULL,
                     mac BLOB, round INTEGER, rec INTEGER, out INTEGER);
CREATE TABLE snapshots(seq INTEGER PRIMARY KEY, state BLOB NOT NULL, hash TEXT NOT NULL,
                       mac BLOB);
CREATE TABLE checkpoints(seq INTEGER PRIMARY KEY, body TEXT NOT NULL, mac BLOB NOT NULL);
"""


@dataclass(frozen=True)
class Segment:
    number: int
    first: int  # seq of its first record
    last: int  # seq of its last record (a checkpoint's)
    prev: str  # the chain hash before `first`
    head: str  # the chain hash after `last`
    first_round: int
    last_round: int
    rounds: int  # rounds recorded (completed and voided) from the start of the journal to `last`
    closed_utc: str

    def text(self) -> str:
        return canonical(asdict(self))


@dataclass(frozen=True)
class SegmentState:
    """A segment row as the technician's commands show it."""

    segment: Segment
    archive: str | None
    digest: str | None
    ack_utc: str | None
    pruned_utc: str | None
    mac_ok: bool
    ack_ok: bool
    # Its rows moved out of the journal file once head office held it (its archive is then
    # their copy on the table until retention prunes it): retention.py, `Retention.move`.
    moved_utc: str | None = None
    # When retention deleted its archive (keep_archives_days), and whether that record's MAC
    # checks out (without the key: taken as it is, as the other rows are).
    deleted_utc: str | None = None
    deleted_ok: bool = False
    # A person accepted its archive as lost (ADD_LOST): {utc, by, reason, found}, and whether
    # that record's MAC checks out.
    lost: dict[str, str] | None = None
    lost_ok: bool = False

    @property
    def lost_accepted(self) -> bool:
        """A person accepted its archive as lost, by a record that checks out."""
        return self.lost is not None and self.lost_ok

    @property
    def deleted_by_retention(self) -> bool:
        """Retention deleted its archive, by a record that checks out."""
        return self.deleted_utc is not None and self.deleted_ok

    @property
    def out_of_file(self) -> bool:
        """Its rows are no longer in the journal file (pruned, or moved to its archive)."""
        return self.pruned_utc is not None or self.moved_utc is not None

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self.segment), "archive": self.archive, "digest": self.digest,
                "acknowledged_utc": self.ack_utc if self.ack_ok else None,
                "pruned_utc": self.pruned_utc, "moved_utc": self.moved_utc,
                "archive_deleted_utc": self.deleted_utc if self.deleted_ok else None,
                "archive_lost": self.lost if self.lost_ok else None,
                "mac_ok": self.mac_ok}


def has_table(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND "
                        "name='segments'").fetchone() is not None


def seg_mac(key: JournalKey, table_id: str, game: str, seg: Segment) -> bytes:
    return key.mac("segment", table_id, game, seg.number, seg.text())


def ack_mac(key: JournalKey, table_id: str, game: str, seg: Segment, digest: str,
            utc: str) -> bytes:
    return key.mac("segment_ack", table_id, game, seg.number, seg.head, digest, utc)


def deleted_mac(key: JournalKey, table_id: str, game: str, seg: Segment, digest: str,
                utc: str) -> bytes:
    return key.mac("archive_deleted", table_id, game, seg.number, seg.head, digest, utc)


def lost_mac(key: JournalKey, table_id: str, game: str, seg: Segment, text: str) -> bytes:
    return key.mac("archive_lost", table_id, game, seg.number, seg.head, text)


def archive_name(number: int) -> str:
    """The file name of segment `number`'s archive (write_archive)."""
    return f"segment-{number:06d}.sqlite3.z"


def read_all(conn: sqlite3.Connection, key: JournalKey | None, table_id: str, game: str
             ) -> list[SegmentState]:
    """Every segment row, oldest first, with whether its MACs check."""
    if not has_table(conn):
        return []
    out = []
    moved_col = "moved_utc" if has_moved(conn) else "NULL"
    deleted_cols = ("archive_deleted_utc, archive_deleted_mac" if has_deleted(conn)
                    else "NULL, NULL")
    lost_cols = "archive_lost, archive_lost_mac" if has_lost(conn) else "NULL, NULL"
    for (number, body, mac, archive, digest, ack_utc, a_mac, pruned, moved, d_utc,
         d_mac, l_text, l_mac) in conn.execute(
            "SELECT number, body, mac, archive, digest, ack_utc, ack_mac, pruned_utc, "
            f"{moved_col}, {deleted_cols}, {lost_cols} FROM segments ORDER BY number"):
        try:
            seg = Segment(**json.loads(body))
        except (TypeError, ValueError):
            seg = Segment(number, 0, 0, "", "", 0, 0, 0, "")
        # Without the key (a technician) the MACs cannot be checked: the rows are taken as
        # they are, as the plain chain is.
        ok = seg.number == number and seg.text() == body and (
            key is None or key.check(mac, "segment", table_id, game, number, body))
        acked = ok and ack_utc is not None and digest is not None and (
            key is None or key.check(a_mac, "segment_ack", table_id, game, number, seg.head,
                                     digest, ack_utc))
        deleted = ok and d_utc is not None and digest is not None and (
            key is None or key.check(d_mac, "archive_deleted", table_id, game, number,
                                     seg.head, digest, d_utc))
        lost = _lost_record(l_text)
        lost_ok = ok and lost is not None and (
            key is None or key.check(l_mac, "archive_lost", table_id, game, number, seg.head,
                                     str(l_text)))
        out.append(SegmentState(seg, archive, digest, ack_utc, pruned, ok, acked, moved,
                                None if d_utc is None else str(d_utc), deleted, lost, lost_ok))
    return out


def has_moved(conn: sqlite3.Connection) -> bool:
    """The segments table has the schema-5 column (a segment may have moved)."""
    return _has_column(conn, "moved_utc")


def _lost_record(text: object) -> dict[str, str] | None:
    """The acceptance record's fields (None: none, or not the record's shape: not accepted)."""
    if not isinstance(text, str):
        return None
    try:
        rec = json.loads(text)
    except ValueError:
        return None
    fields = ("utc", "by", "reason", "found")
    if not isinstance(rec, dict) or sorted(rec) != sorted(fields) or not all(
            isinstance(rec[f], str) for f in fields):
        return None
    return {f: rec[f] for f in fields}


def has_lost(conn: sqlite3.Connection) -> bool:
    """The segments table records archives accepted as lost (ADD_LOST)."""
    return _has_column(conn, "archive_lost")


def has_deleted(conn: sqlite3.Connection) -> bool:
    """The segments table records archives deleted by retention (ADD_DELETED)."""
    return _has_column(conn, "archive_deleted_utc")


def _has_column(conn: sqlite3.Connection, name: str) -> bool:
    return any(row[1] == name for row in conn.execute("PRAGMA table_info(segments)"))


def pruned_through(states: list[SegmentState]) -> tuple[int, list[str]]:
    """The last seq whose rows are out of the journal file, pruned or moved (0: none), and
    what is wrong with those segments: each must be genuine and acknowledged by head office,
    and they must be the oldest ones."""
    errors, last, done = [], 0, False
    for st in states:
        if not st.out_of_file:
            done = True
            continue
        what = "pruned" if st.pruned_utc is not None else "moved out of the journal"
        if done:
            errors.append(f"segment {st.segment.number} is {what} after one that is not")
        if not (st.mac_ok and st.ack_ok):
            errors.append(f"segment {st.segment.number} is marked {what} but its MAC or head "
                          "office's acknowledgement does not check out")
        last = max(last, st.segment.last)
    return last, errors


def write_archive(conn: sqlite3.Connection, seg: Segment, meta: dict[str, str],
                  archive_dir: Path) -> tuple[str, str]:
    """Copy a closed segment's rows into `segment-NNNNNN.sqlite3.z` (an SQLite database,
    zlib-compressed) in `archive_dir`, durably (temporary file, fsync, rename, directory
    fsync); return its name and sha256. Killed before the rename, it leaves only a temporary
    file that the next attempt replaces."""
    archive_dir.mkdir(mode=0o750, parents=True, exist_ok=True)
    name = archive_name(seg.number)
    out = sqlite3.connect(":memory:", isolation_level=None)  # built in memory: written once
    try:
        out.executescript(_ARCHIVE_TABLES)
        out.execute("BEGIN")
        out.executemany("INSERT INTO meta(key, value) VALUES (?,?)", [
            ("table_id", meta["table_id"]), ("game", meta["game"]),
            ("deflate_dict", meta["deflate_dict"]), ("key_id", meta.get("key_id", "")),
            ("segment", seg.text())])
        # round/rec/out (the journal's bisected columns): so that a segment moved out of the
        # journal can be put back into it (`tablectl journal downgrade`, retention.restore).
        # A segment may end inside a commit (a batch whose first event closed it): that commit
        # is archived too, so that the archive holds every record up to the segment's head.
        end = conn.execute("SELECT min(seq) FROM commits WHERE seq >= ?", (seg.last,)
                           ).fetchone()[0] or seg.last
        for table, cols, upto in (("commits", "seq, body, hash, mac, round, rec, out", end),
                                  ("snapshots", "seq, state, hash, mac", seg.last),
                                  ("checkpoints", "seq, body, mac", seg.last)):
            rows = conn.execute(f"SELECT {cols} FROM {table} WHERE seq BETWEEN ? AND ? "
                                "ORDER BY seq", (seg.first, upto))
            marks = ",".join("?" * (cols.count(",") + 1))
            out.executemany(f"INSERT INTO {table}({cols}) VALUES ({marks})", rows)
        out.execute("COMMIT")
        out.execute("VACUUM")
        data = zlib.compress(out.serialize(), 9)
    finally:
        out.close()
    tmp = archive_dir / f".{name}.tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o640), "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, archive_dir / name)
    fsync_dir(archive_dir)
    return name, hashlib.sha256(data).hexdigest()


def file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
