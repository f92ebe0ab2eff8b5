"""A round read back from its segment's archive (segments.py), while the archive is still on
the table: `tablectl round show N` once round N is out of the journal file (retention pruned it,
or its segment moved out once head office held it: retention.py); and the check that `journal
verify` makes of a moved segment's archive, its only copy on the table.

The archive is a file on the data partition, so it is trusted only as far as it checks out:
its sha256 must be the digest the segment row records (the one head office acknowledged), it
must inflate within MAX_INFLATED bytes to an SQLite database whose meta names this table, game
and segment, and its records, chained from the segment's `prev`, must reach the segment's
`head` at its `last` seq: the segment row is MAC'd with the table's key, so a record altered,
added or dropped in the archive shows there. Anything else is refused, naming what failed
(`ArchiveRefused`); nothing in the journal changes.
"""

from __future__ import annotations

import hashlib
import sqlite3
import zlib
from dataclasses import dataclass
from pathlib import Path

from controller.journal.chain import chain_hash
from controller.journal.codec import Codec, parse_body
from controller.journal.records import RoundRecord, StoredEvent, stored_event
from controller.journal.segments import SegmentState, archive_name
from shared.errors import TablectlError

# A segment of 2,000 UTH rounds inflates to ~3 MB; far beyond that is not an archive we wrote.
MAX_COMPRESSED = 64 << 20
MAX_INFLATED = 256 << 20


class ArchiveRefused(TablectlError, ValueError):
    """The archive is missing, is not the one recorded, or does not check out; `what` says
    which: "missing" (no file), "unreadable" (the file cannot be read) or "altered" (not the
    digest recorded, or, with that digest, not the records that chain to the segment's MAC'd
    head: the recorded digest was changed too)."""

    def __init__(self, text: str, what: str = "altered") -> None:
        super().__init__(text)
        self.what = what


@dataclass(frozen=True)
class ArchivedRound:
    path: Path
    digest: str
    segment: int
    events: list[StoredEvent]  # the round's events in the segment, in order
    record: RoundRecord | None  # how it ended, if it ended in this segment


def read_round(path: Path, st: SegmentState, number: int, table_id: str, game: str
               ) -> ArchivedRound:
    """Round `number`'s events and record from the archive `path` of segment `st`, after the
    checks above. ArchiveRefused naming the first check that failed."""
    seg = st.segment
    if not (seg.first_round <= number <= seg.last_round):
        raise ArchiveRefused(f"round {number} is not in segment {seg.number} (rounds "
                             f"{seg.first_round}..{seg.last_round})")
    conn = _open(path, st, table_id, game)
    try:
        events = _walk(conn, path, st, number)
    finally:
        conn.close()
    record = next((r for ev in events for r in ev.rounds if r.number == number), None)
    return ArchivedRound(path, str(st.digest), seg.number, events, record)


def check(path: Path, st: SegmentState, table_id: str, game: str) -> None:
    """The archive `path` of segment `st` checks out (the checks above), or ArchiveRefused:
    what `journal verify` and the background pass ask of a segment moved out of the file."""
    open_checked(path, st, table_id, game).close()


def open_checked(path: Path, st: SegmentState, table_id: str, game: str
                 ) -> sqlite3.Connection:
    """The archive as an in-memory database, once it checks out (the caller closes it)."""
    conn = _open(path, st, table_id, game)
    try:
        _walk(conn, path, st, None)
    except BaseException:
        conn.close()
        raise
    return conn


def _walk(conn: sqlite3.Connection, path: Path, st: SegmentState, number: int | None
          ) -> list[StoredEvent]:
    """The archive's chain walked from the segment's `prev` to its `head`; round `number`'s
    events on the way (None: none kept)."""
    seg = st.segment
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        codec = Codec(str(meta.get("deflate_dict", "")))
        h, seq = seg.prev, seg.first - 1
        events: list[StoredEvent] = []
        for key, body in conn.execute("SELECT seq, body FROM commits ORDER BY seq"):
            try:
                records = parse_body(codec.unpack(body))
            except ValueError as exc:
                raise ArchiveRefused(f"archive {path}: commit at seq {key} unreadable: {exc}"
                                     ) from exc
            first = key - len(records) + 1
            if first > seq + 1 or key <= seq:
                raise ArchiveRefused(f"archive {path}: commit at seq {key} ({len(records)} "
                                     f"records) does not follow seq {seq}")
            for i, (text, (utc, mono, kind, rnd, data, fx)) in enumerate(records):
                # A commit may straddle the segment's start (chained in the segment before)
                # or its end (the rest is the next segment's).
                if not seq < first + i <= seg.last:
                    continue
                seq += 1
                h = chain_hash(h, seq, text)
                if rnd == number:
                    events.append(stored_event(seq, utc, mono, kind, rnd, data, fx, h))
    except sqlite3.DatabaseError as exc:
        raise ArchiveRefused(f"archive {path} is not a readable segment archive: {exc}"
                             ) from exc
    if (seq, h) != (seg.last, seg.head):
        raise ArchiveRefused(
            f"archive {path}: its records, chained from the segment's start, end at seq {seq} "
            f"with chain hash {h[:16]}..., not at the segment's seq {seg.last} with its head "
            f"{seg.head[:16]}... (records altered, added or dropped)")
    return events


def _open(path: Path, st: SegmentState, table_id: str, game: str) -> sqlite3.Connection:
    """The archive inflated into an in-memory database, once its digest and meta check out."""
    try:
        size = path.stat().st_size
        if size > MAX_COMPRESSED:
            raise ArchiveRefused(f"archive {path} is {size} bytes, more than a segment's "
                                 f"archive can be ({MAX_COMPRESSED})")
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise ArchiveRefused(f"archive {path} is missing", "missing") from exc
    except OSError as exc:
        raise ArchiveRefused(f"archive {path} cannot be read: {exc.strerror or exc}",
                             "unreadable") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != st.digest:
        raise ArchiveRefused(f"archive {path} is not the one recorded for segment "
                             f"{st.segment.number}: sha256 {digest}, recorded {st.digest}")
    d = zlib.decompressobj()
    try:
        raw = d.decompress(data, MAX_INFLATED)
    except zlib.error as exc:
        raise ArchiveRefused(f"archive {path} does not inflate: {exc}") from exc
    if d.unconsumed_tail:
        raise ArchiveRefused(f"archive {path} inflates past {MAX_INFLATED} bytes")
    conn = sqlite3.connect(":memory:")
    try:
        conn.deserialize(raw)
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise ArchiveRefused(f"archive {path} is not a readable segment archive: {exc}"
                             ) from exc
    want = {"table_id": table_id, "game": game, "segment": st.segment.text()}
    wrong = sorted(k for k, v in want.items() if meta.get(k) != v)
    if wrong:
        conn.close()
        raise ArchiveRefused(f"archive {path}: its meta {', '.join(wrong)} do not match "
                             f"segment {st.segment.number} of table {table_id} game {game}")
    return conn


def whereabouts(st: SegmentState, archive_dir: Path, table_id: str, game: str, *,
                whole: bool = True) -> tuple[str, str | None]:
    """What is true of segment `st`'s archive, as `journal verify` and the daemon say it:
    ("none", None) not archived yet; ("deleted", None) retention deleted it (a record that
    checks out); ("lost", None) a person accepted it as lost (`tablectl journal
    accept-archive-loss`, a record that checks out); ("whole", None) there and checking out
    (`whole=False`: only there, its content not read); ("fault", text) missing or altered and
    not deleted by retention, `text` naming the segment, the archive and what is wrong."""
    seg = st.segment
    name = (f"segment {seg.number} (rounds {seg.first_round}..{seg.last_round}"
            f"{'' if not st.out_of_file else ', out of the journal file'})")
    if st.archive is None:
        if st.out_of_file:
            return "fault", (f"{name}: its row names no archive (it was archived before it "
                             "left the file: the row was altered)")
        return "none", None
    if st.archive != archive_name(seg.number):
        return "fault", (f"{name}: its row names the archive {st.archive!r}, not "
                         f"{archive_name(seg.number)!r} (the row was altered)")
    path = archive_dir / st.archive
    there = path.exists()
    if st.deleted_by_retention and not there:
        return "deleted", None
    if st.lost is not None and not there:
        if st.lost_accepted:
            return "lost", None
        return "fault", (f"{name}: archive {path} is missing; its row says its loss was accepted "
                         f"by {st.lost['by']} at {st.lost['utc']}, but that record does not "
                         "check out with the table's key (forged)")
    if st.deleted_utc is not None and not st.deleted_ok and not there:
        return "fault", (f"{name}: archive {path} is missing; its row says retention deleted it "
                         f"at {st.deleted_utc}, but that record does not check out with the "
                         "table's key (forged)")
    if not there:
        return "fault", f"{name}: archive {path} is missing (not deleted by retention)"
    if not whole:
        return "whole", None
    try:
        check(path, st, table_id, game)
    except ArchiveRefused as exc:
        if exc.what == "missing":  # gone meanwhile
            return "fault", f"{name}: archive {path} is missing (not deleted by retention)"
        return "fault", f"{name}: {exc.what}: {exc}"
    return "whole", None


def archive_whereabouts(st: SegmentState, archive_dir: Path) -> str:
    """What became of segment `st`'s archive, as far as its file and its row tell (whether a
    file that is there checks out is archived.py's to say)."""
    if st.archive is None:
        return "its segment row names no archive (the row was altered: it was archived before "\
               "it left the file)"
    path = archive_dir / st.archive
    held = (f"head office holds its digest (sha256 {st.digest}) and head, not its records: "
            "they can be read only from a copy of the archive (docs/operations.md, \"An archive "
            "missing or altered\")")
    if path.exists():
        return f"its records are in the archive {path} (sha256 {st.digest})"
    if st.deleted_by_retention:
        return (f"its archive {path} was deleted by retention at {st.deleted_utc} "
                f"(keep_archives_days); {held}")
    if st.lost_accepted and st.lost is not None:
        return (f"its archive {path} was lost ({st.lost['found']}); the loss was accepted by "
                f"{st.lost['by']} at {st.lost['utc']}: {st.lost['reason']}; {held}")
    if st.deleted_utc is not None:
        return (f"its archive {path} is missing; its row says retention deleted it at "
                f"{st.deleted_utc}, but that record does not check out with the table's key "
                f"(forged): it was not deleted by retention; {held}")
    return f"its archive {path} is missing and was not deleted by retention; {held}"
