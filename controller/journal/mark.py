"""The journal's high-water mark: the last commit the table knows it made, kept OUTSIDE the
SQLite file and its WAL (docs/journal.md, "High-water mark").

A lost, truncated or damaged `journal.sqlite3-wal` leaves a shorter journal whose chain verifies;
only something that is not in those files can tell. `journal.mark` beside the journal holds the
seq, last outbox id and chain hash of the last commit, MAC'd with the journal's key. It is
rewritten in place (one `pwrite` of one 256-byte block at offset 0) after every commit and
never fsync'd: the page stays dirty in the page cache and the kernel writes it back with its
periodic writeback, so a burst of commits costs one page write, not one each. A process killed
at any moment leaves the page cache (and the mark) current; a power cut may leave it behind
the journal (on the image up to ~6 minutes: its writeback sysctls, image/overlay/etc/sysctl.d),
which is safe (a lagging mark only narrows what is detected). It is never ahead: it is written
after the commit returned.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from controller.journal.anchor import ChainHashes
from controller.journal.chain import genesis_hash
from controller.journal.codec import Codec
from controller.journal.mac import MAC_BYTES, JournalKey
from shared.errors import TablectlError

MARK_FILE = "journal.mark"
MARK_SIZE = 256  # one fixed-size record at offset 0: within one disk sector
_MAGIC = "tablectl-journal-mark"
_VERSION = "2"  # 2: with the last round number (1: without; still read)
_DOMAIN = "mark"


class MarkError(TablectlError):
    """The mark is unreadable, malformed or its MAC does not match."""


@dataclass(frozen=True)
class MarkValue:
    seq: int
    out: int  # the last outbox id written by then (ids to skip after a loss)
    hash: str  # the chain hash after record `seq` (hex)
    round: int | None = None  # the last round number by then (None: a version-1 mark)


def _line(key: JournalKey, table_id: str, game: str, seq: int, out: int, chain: str,
          round_: int, version: int = 2) -> bytes:
    # Version 2 adds the round after the chain hash: the fields before it stay where they were
    # (the auditor's snippet in docs/journal.md reads the seq and hash by position). Version 1
    # is written where the software before it may read the mark again (store.py).
    if version == 1:
        mac = key.mac(_DOMAIN, table_id, game, seq, out, chain).hex()
        text = f"{_MAGIC} 1 {seq} {out} {chain} {mac}"
    else:
        mac = key.mac(_DOMAIN, table_id, game, seq, out, chain, round_).hex()
        text = f"{_MAGIC} {_VERSION} {seq} {out} {chain} {round_} {mac}"
    return (text + " " * (MARK_SIZE - 1 - len(text)) + "\n").encode("ascii")


def parse(raw: bytes, key: JournalKey | None, table_id: str, game: str) -> MarkValue:
    """A mark's value; MarkError unless well-formed and (given the key) its MAC matches."""
    if len(raw) != MARK_SIZE or not raw.endswith(b"\n"):
        raise MarkError(f"mark is {len(raw)} bytes, not one {MARK_SIZE}-byte record")
    try:
        parts = raw.decode("ascii").split()
    except UnicodeDecodeError:
        raise MarkError("mark is not ASCII") from None
    if not ((len(parts) == 6 and parts[1] == "1") or (len(parts) == 7 and parts[1] == "2")
            ) or parts[0] != _MAGIC:
        raise MarkError("mark is not a tablectl journal mark of version 1 or 2")
    seq_text, out_text, chain = parts[2:5]
    round_text, mac_text = (parts[5], parts[6]) if parts[1] == "2" else ("0", parts[5])
    if not (seq_text.isdigit() and out_text.isdigit() and round_text.isdigit()
            and max(len(seq_text), len(out_text), len(round_text)) <= 18
            and len(chain) == 64 and len(mac_text) == 2 * MAC_BYTES):
        raise MarkError("mark fields malformed")
    try:
        bytes.fromhex(chain)
        mac = bytes.fromhex(mac_text)
    except ValueError:
        raise MarkError("mark fields malformed") from None
    seq, out = int(seq_text), int(out_text)
    round_ = int(round_text) if parts[1] == "2" else None
    fields = (seq, out, chain) if round_ is None else (seq, out, chain, round_)
    if key is not None and not key.check(mac, _DOMAIN, table_id, game, *fields):
        raise MarkError("mark MAC does not match (written without this table's key)")
    return MarkValue(seq, out, chain, round_)


def read_mark(path: Path, key: JournalKey | None, table_id: str, game: str) -> MarkValue:
    """FileNotFoundError if there is none; MarkError if it is damaged or forged."""
    with open(path, "rb") as f:
        raw = f.read(MARK_SIZE + 1)
    return parse(raw, key, table_id, game)


def mark_version(path: Path) -> int | None:
    """The version a mark file says it is (1 or 2), None if it is missing or not a mark."""
    try:
        with open(path, "rb") as f:
            parts = f.read(MARK_SIZE + 1).split()
    except OSError:
        return None
    if len(parts) >= 2 and parts[0] == _MAGIC.encode() and parts[1] in (b"1", b"2"):
        return int(parts[1])
    return None


def create_mark(path: Path, key: JournalKey, table_id: str, game: str, seq: int, out: int,
                chain: str, round_: int = 0, version: int = 2) -> None:
    """Write a mark durably (temporary file, fsync, rename, directory fsync): done once when
    the journal is made or upgraded, and when a loss is accepted; never per commit."""
    tmp = path.with_name(path.name + ".new")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
    try:
        os.write(fd, _line(key, table_id, game, seq, out, chain, round_, version))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


class MarkWriter:
    """The open mark of a writer: `advance` after each commit, without fsync."""

    def __init__(self, path: Path, key: JournalKey, table_id: str, game: str,
                 version: int = 2) -> None:
        self.path = path
        self.version = version
        self._key, self._table_id, self._game = key, table_id, game
        self._fd: int | None = os.open(path, os.O_RDWR)
        self.errors = 0  # failed writes: the mark lags (safe), counted in the journal summary

    def advance(self, seq: int, out: int, chain: str, round_: int) -> None:
        if self._fd is None:
            return
        try:
            os.pwrite(self._fd, _line(self._key, self._table_id, self._game, seq, out, chain,
                                      round_, self.version), 0)
        except OSError:
            self.errors += 1

    def sync(self) -> None:
        """The mark on the disk as it stands in the page cache (before records leave the file:
        a mark lagging after a power cut must still name a commit in the file)."""
        if self._fd is None:
            return
        try:
            os.fsync(self._fd)
        except OSError:
            self.errors += 1

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


# ---- the mark against the journal ---------------------------------------------------------


def hash_at(conn: sqlite3.Connection, seq: int, genesis: str) -> str | None:
    """The chain hash after record `seq` if it ends a commit (stored, or recomputed where
    schema 4 does not store it: anchor.py), is a schema-1 row, or is 0 (the genesis); None
    otherwise."""
    if seq == 0:
        return genesis
    row = conn.execute("SELECT hash FROM commits WHERE seq = ?", (seq,)).fetchone()
    if row is not None:
        if row[0] == b"":  # schema 4: recomputed
            meta = dict(conn.execute("SELECT key, value FROM meta"))
            try:
                return ChainHashes(conn, meta, Codec(meta.get("deflate_dict", ""))).after(seq)
            except ValueError:
                return None
        return row[0].hex() if isinstance(row[0], bytes) else None
    row = conn.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
    return None if row is None else str(row[0])


def last_seq_now(conn: sqlite3.Connection) -> int:
    """The journal's last seq as a read started now sees it."""
    row = conn.execute("SELECT max(seq) FROM commits").fetchone()
    if row[0] is not None:
        return int(row[0])
    return int(conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0])


def mark_problem(conn: sqlite3.Connection, mark_path: Path, key: JournalKey | None,
                 meta: Mapping[str, str], last_seq: int | None
                  ) -> tuple[str, int | None] | None:
    """What is wrong between a schema-3 journal ending at `last_seq` and its high-water mark
    (the text, and the mark's seq when it is readable), or None.

    `last_seq` None: a daemon may be appending (verify_dir): the journal is read after the
    mark, and the mark is written after each commit, so the commit it names is visible then."""
    table_id, game = meta["table_id"], meta["game"]
    try:
        mark: MarkValue = read_mark(mark_path, key, table_id, game)
        if last_seq is None:
            last_seq = last_seq_now(conn)
    except FileNotFoundError:
        if last_seq is None:
            last_seq = last_seq_now(conn)
        if last_seq == 0:
            return None  # a journal made a moment before it (creation is not atomic with it)
        return (f"its high-water mark {mark_path} is missing beside a journal of {last_seq} "
                "records: the journal cannot show it is complete", None)
    except (OSError, MarkError) as exc:
        return f"its high-water mark {mark_path} is unusable ({exc})", None
    if mark.seq > last_seq:
        return (f"LOST RECORDS: its high-water mark says seq {mark.seq} was committed, the "
                f"journal ends at seq {last_seq} (seq {last_seq + 1}..{mark.seq} missing: a "
                "lost or damaged write-ahead log, or an older copy put back)", mark.seq)
    if hash_at(conn, mark.seq, genesis_hash(table_id, game)) != mark.hash:
        return (f"it does not hold the commit its high-water mark names (seq {mark.seq}, "
                f"journal ends at seq {last_seq}): replaced or rewritten", mark.seq)
    return None
