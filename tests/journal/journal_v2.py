# FROZEN copy of controller/journal.py at commit 8eba9a1 (journal schema 2). Tests use it to
# write journals exactly as tables running that code have them (one row per commit in `commits`,
# no MACs, no high-water mark), then open, verify and upgrade them with the current code.
# Never import it outside tests; never edit it.
# ruff: noqa
"""The durable journal: every input event, hash-chained, in one SQLite file (docs/journal.md).

The daemon appends each event (with the `outbox` and `round` effects it produced) in one
transaction before it acts on it; at start it verifies the whole chain and replays from the latest
snapshot. A journal that fails verification is never reused or replaced: `Journal.open` raises
`JournalError` and the daemon stays out of service until a technician looks at it.

Record hash (also the record's checksum):
    hash_n = hex(sha256(utf8(hash_{n-1} + canonical_json(
                 [seq, utc, mono_ms, kind, round, data, fx]))))
    hash_0 = hex(sha256(utf8("tablectl:" + table_id + ":" + game)))
`fx` is the journaled effects of the event, `{"outbox": [[id, type, payload]...],
"round": [[number, status, summary]...]}` (empty keys omitted; null when none), so a pending
outbox message or a round record cannot be altered without breaking the chain.

Storage (schema 2): one row per commit in `commits`, keyed by the seq of its last record: the
records' canonical JSON without their seq (`[utc, mono_ms, kind, round, data, fx]`, each exactly the
hashed text), compressed with raw deflate and the journal's preset dictionary, and the chain hash
after the last record. Each fsync'd commit dirties at least one 4 KiB page of the WAL whatever it
holds, so what is left to save is the bytes a commit adds: one small row per commit instead of a
row per event (each with its own 64-character hash) plus `outbox`/`rounds` index rows.
A schema-1 journal (one row per event in `events`, `outbox`/`rounds` index tables) is upgraded in
place when a writer opens it: its records stay as they are and new commits follow in `commits`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.journal.dicts import deflate_dict
from controller.rounds.base import Effect, Event, Now

JOURNAL_FILE = "journal.sqlite3"
LOCK_FILE = "journal.lock"
SCHEMA_VERSION = "2"
SCHEMAS_READ = ("1", "2")  # 1: a journal of the old format, upgraded when a writer opens it
# Small pages: each commit appends every page it modified to the WAL, so the page size sets the
# bytes written per commit (one 512-byte page is 536 bytes of WAL). Commit rows are ~50-700 bytes;
# a big one overflows, harmlessly.
PAGE_SIZE = 512
WAL_CHECKPOINT_PAGES = 4000  # 2 MB of WAL at 512-byte pages
MAX_ERRORS = 50  # a wrecked file must not produce a million-line report
ROUND_STATUSES = ("completed", "voided")
LOCK_WAIT_S = 5.0
DEFLATE_LEVEL = 9

_TABLES_V1 = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE events(
    seq INTEGER PRIMARY KEY,
    utc TEXT NOT NULL,
    mono_ms INTEGER NOT NULL,
    kind TEXT NOT NULL,
    round INTEGER NOT NULL,
    data TEXT NOT NULL,
    fx TEXT,
    hash TEXT NOT NULL
);
CREATE TABLE outbox(id INTEGER PRIMARY KEY, seq INTEGER NOT NULL REFERENCES events(seq));
CREATE TABLE outbox_acked(upto_id INTEGER PRIMARY KEY, utc TEXT NOT NULL);
CREATE TABLE rounds(
    number INTEGER PRIMARY KEY,
    status TEXT NOT NULL,
    seq INTEGER NOT NULL REFERENCES events(seq)
);
CREATE TABLE snapshots(
    seq INTEGER PRIMARY KEY,
    state BLOB NOT NULL,
    hash TEXT NOT NULL
);
"""
# Schema 2 adds one table; the schema-1 tables stay (empty in a journal created as schema 2) and
# hold the records written before an upgrade.
_TABLE_COMMITS = """
CREATE TABLE commits(
    seq INTEGER PRIMARY KEY,
    round INTEGER NOT NULL,
    rec INTEGER NOT NULL,
    out INTEGER NOT NULL,
    body BLOB NOT NULL,
    hash BLOB NOT NULL
)
"""
_INDEX_COLUMNS = ("round", "rec", "out")  # commits columns that are bisected


class JournalError(Exception):
    """The journal cannot be used: corrupt, of another table, locked, or a write failed.

    The message names the file and, where one is at fault, the record's seq.
    """


def canonical(obj: Any) -> str:
    """The one JSON spelling that is hashed and stored."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def genesis_hash(table_id: str, game: str) -> str:
    return hashlib.sha256(f"tablectl:{table_id}:{game}".encode()).hexdigest()


def element(utc: str, mono_ms: int, kind: str, round_: int, data: str, fx: str | None) -> str:
    """A record as stored in a commit body: `[utc, mono_ms, kind, round, data, fx]`, canonical;
    `data`/`fx` are already canonical JSON (embedded as is). The hashed text is this with the
    record's seq in front."""
    return (f"[{canonical(utc)},{mono_ms},{canonical(kind)},{round_},{data},"
            f"{'null' if fx is None else fx}]")


def chain_hash(prev: str, seq: int, elem: str) -> str:
    """hash_n from hash_{n-1} and the record's stored text (`element`)."""
    return hashlib.sha256(f"{prev}[{seq},{elem[1:]}".encode()).hexdigest()


def record_hash(prev: str, seq: int, utc: str, mono_ms: int, kind: str, round_: int,
                data: str, fx: str | None) -> str:
    """Chain hash over the stored text; `data`/`fx` are already canonical JSON (embedded as is)."""
    return chain_hash(prev, seq, element(utc, mono_ms, kind, round_, data, fx))


def snapshot_hash(event_hash: str, state: str) -> str:
    return hashlib.sha256((event_hash + state).encode("utf-8")).hexdigest()


def _json_value(obj: Any, what: str) -> str:
    """Canonical text of a JSON value that round-trips exactly (str keys only, no NaN)."""
    _check_keys(obj, what)
    try:
        text = canonical(obj)
        text.encode("utf-8")  # lone surrogates would fail later, inside the transaction
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} is not JSON: {exc}") from exc
    return text


def _check_keys(obj: Any, what: str) -> None:
    # json.dumps silently turns int keys into strings; replay would then differ from the input.
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if not isinstance(k, str):
                raise ValueError(f"{what} has a non-string key {k!r}")
            _check_keys(v, what)
    elif isinstance(obj, list | tuple):
        for v in obj:
            _check_keys(v, what)


class Codec:
    """Commit bodies: raw deflate (RFC 1951) with the journal's preset dictionary (meta
    `deflate_dict`, UTF-8; empty: none). Inflate with any zlib: `zlib.decompressobj(-15,
    zdict=dict)`."""

    def __init__(self, zdict: str) -> None:
        self.zdict = zdict.encode("utf-8")
        args: tuple[bytes, ...] = (self.zdict,) if self.zdict else ()
        # Primed once: a copy per commit does not hash the dictionary again.
        self._deflate = zlib.compressobj(DEFLATE_LEVEL, zlib.DEFLATED, -15, 9,
                                         zlib.Z_DEFAULT_STRATEGY, *args)

    def pack(self, text: str) -> bytes:
        c = self._deflate.copy()
        return c.compress(text.encode("utf-8")) + c.flush()

    def unpack(self, body: Any) -> str:
        """The body's text; ValueError if it is not one complete deflate stream of UTF-8."""
        if not isinstance(body, bytes):
            raise ValueError("commit body is not a blob")
        d = zlib.decompressobj(-15, zdict=self.zdict) if self.zdict else zlib.decompressobj(-15)
        try:
            out = d.decompress(body) + d.flush()
        except zlib.error as exc:
            raise ValueError(f"commit body does not inflate: {exc}") from exc
        if not d.eof or d.unused_data:
            raise ValueError("commit body is not one complete deflate stream")
        try:
            return out.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"commit body is not UTF-8: {exc}") from exc


_DECODER = json.JSONDecoder()


def _elements(text: str) -> list[tuple[str, list[Any]]]:
    """A commit body's records: each one's exact stored text (what is hashed) and its value.
    ValueError unless it is `[element,element,...]` with nothing else, each a well-formed record."""
    if len(text) < 3 or text[0] != "[" or text[-1] != "]":
        raise ValueError("commit body is not a non-empty JSON array")
    out = []
    i, end = 1, len(text) - 1
    while True:
        try:
            value, j = _DECODER.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            raise ValueError(f"commit body is not JSON: {exc}") from exc
        if not (isinstance(value, list) and len(value) == 6 and isinstance(value[0], str)
                and type(value[1]) is int and isinstance(value[2], str)
                and type(value[3]) is int and isinstance(value[4], dict)
                and (value[5] is None or isinstance(value[5], dict))):
            raise ValueError("commit body holds a malformed record")
        out.append((text[i:j], value))
        if j == end:
            return out
        if text[j] != "," or j + 1 >= end:
            raise ValueError("commit body is not a JSON array of records")
        i = j + 1


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    id: int  # the message's sequence number towards head office, contiguous from 1
    seq: int  # the event that produced it
    type: str
    payload: Any
    utc: str

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "seq": self.seq, "type": self.type, "payload": self.payload,
                "utc": self.utc}


@dataclass(frozen=True, slots=True)
class RoundRecord:
    number: int
    status: str  # completed | voided
    seq: int
    summary: Any
    utc: str

    def as_json(self) -> dict[str, Any]:
        return {"number": self.number, "status": self.status, "seq": self.seq,
                "summary": self.summary, "utc": self.utc}


@dataclass(frozen=True, slots=True)
class StoredEvent:
    seq: int
    utc: str
    mono_ms: int
    kind: str
    data: dict[str, Any]
    round: int
    hash: str
    outbox: tuple[OutboxMessage, ...] = ()
    rounds: tuple[RoundRecord, ...] = ()

    @property
    def event(self) -> Event:
        return Event(self.kind, self.data)

    @property
    def now(self) -> Now:
        return Now(self.utc, self.mono_ms)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seq": self.seq, "utc": self.utc, "mono_ms": self.mono_ms,
                               "kind": self.kind, "data": self.data, "round": self.round}
        if self.outbox:
            out["outbox"] = [m.as_json() for m in self.outbox]
        if self.rounds:
            out["rounds"] = [r.as_json() for r in self.rounds]
        return out


@dataclass
class VerifyReport:
    records: int = 0
    rounds_completed: int = 0
    rounds_voided: int = 0
    errors: list[str] = field(default_factory=list)
    # Not part of the CLI's JSON; what the writer needs to continue the chain.
    last_seq: int = 0
    last_hash: str = ""
    last_event_round: int = 0
    next_outbox_id: int = 1
    acked_upto: int = 0
    error_count: int = 0

    @property
    def ok(self) -> bool:
        return self.error_count == 0

    @property
    def last_round_number(self) -> int:
        return self.rounds_completed + self.rounds_voided

    def error(self, text: str) -> None:
        self.error_count += 1
        if self.error_count <= MAX_ERRORS:
            self.errors.append(text)
        elif self.error_count == MAX_ERRORS + 1:
            self.errors.append(f"... more errors not listed (stopped listing at {MAX_ERRORS})")

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "records": self.records, "rounds_completed": self.rounds_completed,
                "rounds_voided": self.rounds_voided, "errors": list(self.errors)}


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _lock(lock_path: Path, exclusive: bool, wait_s: float) -> int:
    """flock the lock file; one writer (the daemon) at a time, readers only when it is down."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o640) if exclusive else os.open(
        lock_path, os.O_RDONLY)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN) or time.monotonic() > deadline:
                os.close(fd)
                raise
            time.sleep(0.05)


def _verify_conn(conn: sqlite3.Connection, expect: tuple[str, str] | None = None) -> VerifyReport:
    """Walk the whole journal in one read transaction, streaming (constant memory)."""
    rep = VerifyReport()
    try:
        conn.execute("BEGIN")
        _verify_walk(conn, rep, expect)
    except sqlite3.DatabaseError as exc:
        after = f" after seq {rep.last_seq}" if rep.last_seq else ""
        rep.error(f"database unreadable{after}: {exc}")
    finally:
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
    return rep


def _fx_items(obj: Any) -> tuple[list[tuple[int, str, Any]], list[tuple[int, str, Any]]]:
    """The journaled effects of one event (the parsed `fx`): outbox messages and round records.

    An outbox message whose payload is exactly a round record's summary is stored once, as
    [id, type, null, round_number] (a round result is the same document for the audit trail
    and for head office; storing it twice doubled the bytes written per round)."""
    rnds = [(int(n), str(s), m) for n, s, m in obj.get("round", [])]
    summaries = {n: m for n, _s, m in rnds}
    outs = []
    for item in obj.get("outbox", []):
        if len(item) == 4:
            oid, mtype, _null, number = item
            payload = summaries[int(number)]
        else:
            oid, mtype, payload = item
        outs.append((int(oid), str(mtype), payload))
    return outs, rnds


def _parse_fx(fx: str) -> tuple[list[tuple[int, str, Any]], list[tuple[int, str, Any]]]:
    return _fx_items(json.loads(fx))


def _snapshot_text(state: Any) -> str:
    """A stored snapshot's JSON text: TEXT, or (schema 2) a raw-deflated BLOB of it."""
    if isinstance(state, bytes):
        return Codec("").unpack(state)
    return str(state)


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta"))


def _v1_last_seq(meta: Mapping[str, str]) -> int | None:
    """The last seq stored as a schema-1 row (`events`); None for a schema-1 journal (all)."""
    if meta.get("schema") == "1":
        return None
    return int(meta["v1_last_seq"])


class _Walk:
    """The checks along the chain, record by record, with the side tables walked in step."""

    def __init__(self, conn: sqlite3.Connection, rep: VerifyReport, genesis: str) -> None:
        self.rep = rep
        # Side tables, each ordered by its key. `outbox` and `rounds` index schema-1 records only.
        self.pending = conn.execute("SELECT id, seq FROM outbox ORDER BY id")
        self.rounds = conn.execute("SELECT number, status, seq FROM rounds ORDER BY number")
        self.snaps = conn.execute("SELECT seq, state, hash FROM snapshots ORDER BY seq")
        self.p_row = self.pending.fetchone()
        self.r_row = self.rounds.fetchone()
        self.s_row = self.snaps.fetchone()
        self.prev = genesis
        self.expected = 1
        self.next_out, self.next_round = 1, 1

    def gap(self, first: int, last: int) -> None:
        """The next records are seq first..last: report what is missing or out of place."""
        if first > self.expected:
            gap = f"seq {self.expected}" if first == self.expected + 1 else \
                f"seq {self.expected}..{first - 1}"
            self.rep.error(f"{gap} missing (records deleted or reordered; next is seq {first})")
        elif first < self.expected:
            self.rep.error(f"seq {first}..{last} out of order (expected seq {self.expected} next)")

    def record(self, seq: int, rnd: Any, fx: Any, h: str, indexed: bool) -> None:
        """One record; `fx` parsed (None: no effects); `h` its chain hash; `indexed`: a
        schema-1 record, whose outbox messages and round records have rows in the side tables."""
        rep = self.rep
        rep.records += 1
        if not isinstance(rnd, int) or rnd < rep.last_event_round:
            rep.error(f"seq {seq}: round {rnd!r} goes back from round {rep.last_event_round}")
        else:
            rep.last_event_round = rnd
        if fx is not None:
            try:
                outs, rnds = _fx_items(fx)
            except (ValueError, TypeError, AttributeError, KeyError):
                rep.error(f"seq {seq}: journaled effects are malformed")
                outs, rnds = [], []
            for oid, _type, _payload in outs:
                self._message(seq, oid, indexed)
            for number, status, _summary in rnds:
                self._round(seq, number, status, indexed)
        while self.s_row is not None and self.s_row[0] < seq:
            rep.error(f"snapshot at seq {self.s_row[0]} has no event")
            self.s_row = self.snaps.fetchone()
        if self.s_row is not None and self.s_row[0] == seq:
            try:
                ok = snapshot_hash(h, _snapshot_text(self.s_row[1])) == self.s_row[2]
            except ValueError:
                ok = False
            if not ok:
                rep.error(f"seq {seq}: snapshot hash mismatch (snapshot altered)")
            self.s_row = self.snaps.fetchone()

    def _message(self, seq: int, oid: int, indexed: bool) -> None:
        rep = self.rep
        if oid != self.next_out:
            rep.error(f"seq {seq}: outbox message id {oid}, expected {self.next_out}")
        self.next_out = oid + 1
        while self.p_row is not None and (self.p_row[0] < oid
                                          or (not indexed and self.p_row[0] == oid)):
            rep.error(f"outbox row id {self.p_row[0]} (seq {self.p_row[1]}) matches no message")
            self.p_row = self.pending.fetchone()
        if not indexed:
            return  # pending: every id above the last ack (the chain is the queue)
        if oid <= rep.acked_upto:
            if self.p_row is not None and self.p_row[0] == oid:
                rep.error(f"outbox row id {oid} is acknowledged but still pending")
                self.p_row = self.pending.fetchone()
        elif self.p_row is None or self.p_row[0] != oid:
            rep.error(f"seq {seq}: outbox message {oid} not acknowledged but missing from the "
                      "outbox")
        else:
            if self.p_row[1] != seq:
                rep.error(f"outbox row id {oid} points at seq {self.p_row[1]}, its message is "
                          f"in seq {seq}")
            self.p_row = self.pending.fetchone()

    def _round(self, seq: int, number: int, status: str, indexed: bool) -> None:
        rep = self.rep
        if number != self.next_round:
            rep.error(f"seq {seq}: round {number} recorded, expected round {self.next_round}")
        self.next_round = number + 1
        if status == "completed":
            rep.rounds_completed += 1
        elif status == "voided":
            rep.rounds_voided += 1
        else:
            rep.error(f"seq {seq}: round {number} has unknown status {status!r}")
        while self.r_row is not None and (self.r_row[0] < number
                                          or (not indexed and self.r_row[0] == number)):
            rep.error(f"rounds row {self.r_row[0]} (seq {self.r_row[2]}) matches no round "
                      "record")
            self.r_row = self.rounds.fetchone()
        if not indexed:
            return
        if self.r_row is None or self.r_row[0] != number:
            rep.error(f"seq {seq}: round {number} missing from the rounds table")
        else:
            if (self.r_row[1], self.r_row[2]) != (status, seq):
                rep.error(f"rounds row {number} says {self.r_row[1]} at seq {self.r_row[2]}, "
                          f"seq {seq} records {status}")
            self.r_row = self.rounds.fetchone()

    def finish(self) -> None:
        rep = self.rep
        while self.p_row is not None:
            rep.error(f"outbox row id {self.p_row[0]} (seq {self.p_row[1]}) matches no message")
            self.p_row = self.pending.fetchone()
        while self.r_row is not None:
            rep.error(f"rounds row {self.r_row[0]} (seq {self.r_row[2]}) matches no round record")
            self.r_row = self.rounds.fetchone()
        while self.s_row is not None:
            rep.error(f"snapshot at seq {self.s_row[0]} is after the last event "
                      f"(seq {rep.last_seq})")
            self.s_row = self.snaps.fetchone()
        if rep.acked_upto >= self.next_out:
            rep.error(f"outbox acknowledged up to {rep.acked_upto}, but the last message is "
                      f"{self.next_out - 1}")
        rep.next_outbox_id = self.next_out
        if rep.last_round_number != self.next_round - 1:  # a bad status was not counted
            rep.error(f"rounds counted {rep.last_round_number}, recorded {self.next_round - 1}")


def _verify_walk(conn: sqlite3.Connection, rep: VerifyReport,
                 expect: tuple[str, str] | None) -> None:
    for (msg,) in conn.execute("PRAGMA quick_check(20)"):
        if msg != "ok":
            rep.error(f"sqlite quick_check: {msg}")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    missing = {"meta", "events", "outbox", "outbox_acked", "rounds", "snapshots"} - tables
    if missing:
        rep.error(f"not a tablectl journal: missing tables {sorted(missing)}")
        return
    meta = _meta(conn)
    schema = meta.get("schema")
    if schema not in SCHEMAS_READ:
        rep.error(f"unknown journal schema {schema!r} (expected one of {list(SCHEMAS_READ)})")
        return
    if schema != "1" and ("commits" not in tables or "v1_last_seq" not in meta
                          or "deflate_dict" not in meta):
        rep.error(f"not a tablectl journal of schema {schema}: commits table or meta missing")
        return
    table_id, game = meta.get("table_id", ""), meta.get("game", "")
    if expect is not None and (table_id, game) != expect:
        rep.error(f"journal belongs to table {table_id!r} game {game!r}, "
                  f"not table {expect[0]!r} game {expect[1]!r}")
        return
    rep.acked_upto = _acked_upto(conn)
    walk = _Walk(conn, rep, genesis_hash(table_id, game))
    v1_last = _v1_last_seq(meta)

    # Schema-1 records: one row each, its hash stored.
    for seq, utc, mono, kind, rnd, data, fx, h in conn.execute(
            "SELECT seq, utc, mono_ms, kind, round, data, fx, hash FROM events ORDER BY seq"):
        walk.gap(seq, seq)
        if v1_last is not None and seq > v1_last:
            rep.error(f"seq {seq}: a schema-1 row after the upgrade (schema-1 rows end at seq "
                      f"{v1_last})")
        try:
            calc = record_hash(walk.prev, seq, utc, mono, kind, rnd, data, fx)
        except (TypeError, UnicodeEncodeError) as exc:
            calc = f"unhashable: {exc}"
        if calc != h:
            rep.error(f"seq {seq}: hash mismatch (record altered, reordered or chain broken)")
        try:
            fx_obj = None if fx is None else json.loads(fx)
        except (ValueError, TypeError):
            fx_obj = "malformed"
        walk.record(seq, rnd, fx_obj, h, indexed=True)
        walk.prev, walk.expected = h, seq + 1
        rep.last_seq, rep.last_hash = seq, h
    if v1_last is None:
        walk.finish()
        return
    if rep.last_seq != v1_last:
        rep.error(f"schema-1 rows end at seq {rep.last_seq}, the upgrade recorded seq {v1_last}")

    # Schema-2 records: one row per commit, its records deflated, the hash after the last one.
    codec = Codec(meta["deflate_dict"])
    for key, c_round, c_rec, c_out, body, stored in conn.execute(
            "SELECT seq, round, rec, out, body, hash FROM commits ORDER BY seq"):
        stored_hex = stored.hex() if isinstance(stored, bytes) else repr(stored)
        try:
            records = _elements(codec.unpack(body))
        except ValueError as exc:
            if key < walk.expected:
                walk.gap(key, key)
            rep.error(f"seq {walk.expected}..{key}: commit unreadable ({exc})")
            # Carry on from its stored hash and columns: the next commits are checked as usual.
            walk.next_round = max(walk.next_round, int(c_rec) + 1)
            walk.next_out = max(walk.next_out, int(c_out) + 1)
            walk.prev, walk.expected = stored_hex, key + 1
            rep.last_seq, rep.last_hash = key, stored_hex
            continue
        first = key - len(records) + 1
        walk.gap(first, key)
        h = walk.prev
        for i, (text, (_utc, _mono, _kind, rnd, _data, fx)) in enumerate(records):
            h = chain_hash(h, first + i, text)
            walk.record(first + i, rnd, fx, h, indexed=False)
        if h != stored_hex:
            what = f"seq {key}" if first == key else f"seq {first}..{key}"
            rep.error(f"{what}: hash mismatch (record altered, reordered or chain broken)")
        if (c_round, c_rec, c_out) != (records[-1][1][3], walk.next_round - 1,
                                       walk.next_out - 1):
            rep.error(f"seq {key}: commit columns round/rec/out {c_round}/{c_rec}/{c_out} do "
                      f"not match its records ({records[-1][1][3]}/{walk.next_round - 1}/"
                      f"{walk.next_out - 1})")
        walk.prev, walk.expected = stored_hex, key + 1
        rep.last_seq, rep.last_hash = key, stored_hex
    walk.finish()


def verify_dir(state_dir: Path | str) -> VerifyReport:
    """Offline verification (`tablectl journal verify`). Creates nothing; never raises for a
    missing or damaged journal: that is an error in the report."""
    state_dir = Path(state_dir)
    path = state_dir / JOURNAL_FILE
    if not state_dir.is_dir():
        rep = VerifyReport()
        rep.error(f"state directory {state_dir} does not exist")
        return rep
    if not path.is_file():
        rep = VerifyReport()
        rep.error(f"no journal: {path} does not exist")
        return rep
    lock_fd = None
    uri = f"file:{path}?mode=ro"
    wal = Path(f"{path}-wal")
    if not wal.exists() and (state_dir / LOCK_FILE).exists():
        # No daemon and a clean shutdown: read the file as immutable, so SQLite does not leave
        # -wal/-shm files behind; the shared lock keeps a daemon from starting meanwhile.
        with contextlib.suppress(OSError):
            lock_fd = _lock(state_dir / LOCK_FILE, exclusive=False, wait_s=0)
            if not wal.exists():
                uri += "&immutable=1"
    try:
        try:
            conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        except sqlite3.Error as exc:
            rep = VerifyReport()
            rep.error(f"cannot open {path}: {exc}")
            return rep
        try:
            return _verify_conn(conn)
        finally:
            conn.close()
    finally:
        if lock_fd is not None:
            os.close(lock_fd)


@dataclass(frozen=True)
class Entry:
    """One event to append with what it produced (see Journal.append)."""

    event: Event
    now: Now
    round: int
    effects: tuple[Effect, ...] = ()
    snapshot: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class _Row:
    seq: int
    round: int
    element: str
    hash: str
    outbox: list[list[Any]]
    rounds: list[list[Any]]
    snapshot: str | None


def _prepare(entry: Entry, seq: int, prev_hash: str, last_round: int, next_id: int,
             next_round: int) -> _Row:
    """Validate one entry and compute its record; ValueError names what is wrong."""
    event, now, round_ = entry.event, entry.now, entry.round
    if not isinstance(event.kind, str) or not event.kind:
        raise ValueError(f"event kind must be a non-empty string, got {event.kind!r}")
    if not isinstance(now.utc, str) or type(now.mono_ms) is not int:
        raise ValueError(f"bad clock {now!r}")
    if type(round_) is not int or round_ < last_round:
        raise ValueError(f"round {round_!r} goes back from round {last_round}")
    data = _json_value(dict(event.data), f"event {event.kind} data")
    outbox: list[list[Any]] = []
    rounds: list[list[Any]] = []
    for eff in entry.effects:
        if eff.kind == "outbox":
            mtype = eff.data.get("type")
            if not isinstance(mtype, str) or not mtype:
                raise ValueError(f"outbox effect without a type: {eff!r}")
            outbox.append([next_id, mtype, eff.data.get("payload")])
            next_id += 1
        elif eff.kind == "round":
            number, status = eff.data.get("number"), eff.data.get("status")
            if number != next_round:
                raise ValueError(f"round effect number {number!r}, expected {next_round}"
                                 " (round numbers are contiguous)")
            if status not in ROUND_STATUSES:
                raise ValueError(f"round effect status {status!r}, not one of {ROUND_STATUSES}")
            rounds.append([number, status, eff.data.get("summary")])
            next_round += 1
    summaries = {r[0]: r[2] for r in rounds}
    stored_outbox = [
        next(([m[0], m[1], None, n] for n, summary in summaries.items() if summary == m[2]), m)
        for m in outbox
    ]
    fx_obj: dict[str, Any] = {}
    if outbox:
        fx_obj["outbox"] = stored_outbox
    if rounds:
        fx_obj["round"] = rounds
    fx = _json_value(fx_obj, "journaled effects") if fx_obj else None
    snap = None if entry.snapshot is None else _json_value(dict(entry.snapshot), "snapshot")
    try:
        elem = element(now.utc, now.mono_ms, event.kind, round_, data, fx)
        h = chain_hash(prev_hash, seq, elem)
    except UnicodeEncodeError as exc:
        raise ValueError(f"event {event.kind}: text is not valid Unicode: {exc}") from exc
    return _Row(seq, round_, elem, h, outbox, rounds, snap)


def _stored_v1(row: tuple[Any, ...]) -> StoredEvent:
    """A schema-1 row (`events`)."""
    seq, utc, mono, kind, rnd, data, fx, h = row
    return _stored(seq, utc, mono, kind, rnd, json.loads(data),
                   None if fx is None else json.loads(fx), h)


def _stored(seq: int, utc: str, mono: int, kind: str, rnd: int, data: dict[str, Any],
            fx: Any, h: str) -> StoredEvent:
    outbox: tuple[OutboxMessage, ...] = ()
    rounds: tuple[RoundRecord, ...] = ()
    if fx is not None:
        outs, rnds = _fx_items(fx)
        outbox = tuple(OutboxMessage(i, seq, t, p, utc) for i, t, p in outs)
        rounds = tuple(RoundRecord(n, s, seq, m, utc) for n, s, m in rnds)
    return StoredEvent(seq, utc, mono, kind, data, rnd, h, outbox, rounds)


class Journal:
    """The daemon's journal. One writer per state dir (a lock file enforces it); calls are
    serialised by an internal lock, so a worker thread may do the appends."""

    def __init__(self, path: Path, conn: sqlite3.Connection, lock_fd: int, table_id: str,
                 game: str, state: VerifyReport) -> None:
        self.path = path
        self.table_id = table_id
        self.game = game
        self._conn = conn
        self._lock_fd: int | None = lock_fd
        self._mutex = threading.RLock()
        self._failed: str | None = None
        self._last_seq = state.last_seq
        self._last_hash = state.last_hash or genesis_hash(table_id, game)
        self._last_event_round = state.last_event_round
        self._rounds = {"completed": state.rounds_completed, "voided": state.rounds_voided}
        self._next_outbox_id = state.next_outbox_id
        self._acked_upto = state.acked_upto
        meta = _meta(conn)
        self._codec = Codec(meta["deflate_dict"])
        # Records up to this seq are schema-1 rows (`events`); the chain goes on in `commits`.
        self._v1_last_seq = int(meta["v1_last_seq"])
        row = conn.execute("SELECT hash FROM events WHERE seq = ?",
                           (self._v1_last_seq,)).fetchone()
        self._v1_last_hash = genesis_hash(table_id, game) if row is None else row[0]

    # ---- opening -------------------------------------------------------------------------

    @classmethod
    def open(cls, state_dir: Path | str, *, table_id: str, game: str, create: bool = True,
             verify: bool = True) -> Journal:
        """Open (or, with `create`, make) the journal of this table and game; verify it.

        Raises JournalError if it is of another table/game, fails verification, is locked by
        another process, or is missing with create=False. Never replaces an existing file.
        A schema-1 journal is upgraded in place (its records stay as they are)."""
        if not table_id or not game:
            raise ValueError("table_id and game are required")
        state_dir = Path(state_dir)
        path = state_dir / JOURNAL_FILE
        if create:
            state_dir.mkdir(mode=0o750, parents=True, exist_ok=True)
        elif not state_dir.is_dir():
            raise JournalError(f"state directory {state_dir} does not exist")
        try:
            lock_fd = _lock(state_dir / LOCK_FILE, exclusive=True, wait_s=LOCK_WAIT_S)
        except OSError as exc:
            raise JournalError(f"journal {path} is locked by another process (a running "
                               f"tablectld or journal verify): {exc}") from exc
        try:
            return cls._open_locked(path, lock_fd, table_id, game, create, verify)
        except BaseException:
            os.close(lock_fd)
            raise

    @classmethod
    def _open_locked(cls, path: Path, lock_fd: int, table_id: str, game: str, create: bool,
                     verify: bool) -> Journal:
        if not path.exists():
            if Path(f"{path}-wal").exists():
                raise JournalError(f"journal {path} is missing but its write-ahead log "
                                   f"{path}-wal exists: refusing to start a new journal")
            if not create:
                raise JournalError(f"journal {path} does not exist")
            _create(path, table_id, game)
        with open(path, "rb") as f:
            magic = f.read(16)
        if magic != b"SQLite format 3\x00":
            # SQLite would happily turn an empty file into a new database: refuse first.
            raise JournalError(f"journal {path} is not an SQLite database (empty or damaged "
                               "header); refusing to use or replace it")
        try:
            # mode=rw: never let SQLite create an empty file in place of a vanished journal.
            conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as exc:
            raise JournalError(f"cannot open journal {path}: {exc}") from exc
        try:
            # Read before any pragma writes: a foreign or damaged file must stay as it is.
            meta = _meta(conn)
            if meta.get("schema") not in SCHEMAS_READ:
                raise JournalError(f"journal {path}: unknown schema {meta.get('schema')!r}")
            if (meta.get("table_id"), meta.get("game")) != (table_id, game):
                raise JournalError(
                    f"journal {path} belongs to table {meta.get('table_id')!r} game "
                    f"{meta.get('game')!r}, not table {table_id!r} game {game!r}; refusing "
                    "to use it")
            _set_pragmas(conn, path)
            if verify:
                state = _verify_conn(conn, (table_id, game))
                if not state.ok:
                    first = "; ".join(state.errors[:3])
                    raise JournalError(
                        f"journal {path} is corrupt ({state.error_count} errors; first: {first})."
                        f" The table stays out of service; inspect with `tablectl journal "
                        f"verify --state-dir {path.parent}`. It is never replaced automatically.")
            else:
                state = _load_state(conn, table_id, game)
            if meta["schema"] == "1":
                _upgrade(conn, path, game, state.last_seq)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise JournalError(f"journal {path} is unreadable (corrupt?): {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return cls(path, conn, lock_fd, table_id, game, state)

    def close(self) -> None:
        with self._mutex:
            if self._lock_fd is None:
                return
            self._conn.close()  # checkpoints the WAL into the file
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- writing -------------------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        return self._last_seq

    @property
    def last_hash(self) -> str:
        return self._last_hash

    @property
    def last_round_number(self) -> int:
        """The number of the last round recorded completed or voided (0 before the first)."""
        return self._rounds["completed"] + self._rounds["voided"]

    @property
    def last_event_round(self) -> int:
        """The `round` of the last event appended (0 before the first)."""
        return self._last_event_round

    def append(self, event: Event, now: Now, *, round: int, effects: Sequence[Effect] = (),
               snapshot: Mapping[str, Any] | None = None) -> int:
        """Commit one event, its outbox and round effects and an optional snapshot (the state
        after this event) in one fsync'd transaction; return its seq.

        ValueError for bad input (nothing written). JournalError if the write failed: the
        journal then refuses further writes; reopen it (which re-verifies) to continue."""
        return self.append_batch([Entry(event, now, round, tuple(effects), snapshot)])[0]

    def append_batch(self, entries: Sequence[Entry]) -> list[int]:
        """Commit several events, in order, in ONE fsync'd transaction; return their seqs.

        For events that were already waiting together: none of them has been acted on, and one
        fsync instead of one each saves most of the bytes written (each fsync'd commit costs at
        least one 4 KiB page). All or nothing, like `append`. The commit is one `commits` row."""
        with self._mutex:
            self._check_writable()
            seq, last_hash = self._last_seq, self._last_hash
            last_round, next_id = self._last_event_round, self._next_outbox_id
            next_round = self.last_round_number + 1
            rows: list[_Row] = []
            for entry in entries:
                seq += 1
                row = _prepare(entry, seq, last_hash, last_round, next_id, next_round)
                rows.append(row)
                last_hash, last_round = row.hash, entry.round
                next_id += len(row.outbox)
                next_round += len(row.rounds)
            if not rows:
                return []
            body = self._codec.pack("[" + ",".join(r.element for r in rows) + "]")
            c = self._conn
            try:
                c.execute("BEGIN IMMEDIATE")
                c.execute("INSERT INTO commits(seq, round, rec, out, body, hash) "
                          "VALUES (?,?,?,?,?,?)",
                          (seq, last_round, next_round - 1, next_id - 1, body,
                           bytes.fromhex(last_hash)))
                for row in rows:
                    if row.snapshot is not None:
                        _insert_snapshot(c, row)
                c.execute("COMMIT")
            except BaseException as exc:
                self._fail(f"append of seq {rows[0].seq}..{rows[-1].seq} failed: {exc}")
                if isinstance(exc, sqlite3.Error):
                    raise JournalError(f"journal {self.path}: {self._failed}") from exc
                raise
            self._last_seq, self._last_hash = seq, last_hash
            self._last_event_round = last_round
            self._next_outbox_id = next_id
            for row in rows:
                for _number, status, _summary in row.rounds:
                    self._rounds[status] += 1
            return [row.seq for row in rows]

    def ack_outbox(self, upto_id: int, utc: str | None = None) -> int:
        """Head office acknowledged every message up to `upto_id` (cumulative): drop them from
        the outbox. Returns how many were removed; an old or repeated ack removes nothing.

        Not fsync'd (synchronous=NORMAL for this transaction only): a lost ack means a resend
        that head office ignores, and the next event's fsync makes it durable anyway."""
        with self._mutex:
            self._check_writable()
            if type(upto_id) is not int:
                raise ValueError(f"ack id must be an int, got {upto_id!r}")
            if upto_id <= self._acked_upto:
                return 0
            if upto_id >= self._next_outbox_id:
                raise ValueError(f"ack of message {upto_id}, but the last message is "
                                 f"{self._next_outbox_id - 1}")
            c = self._conn
            try:
                c.execute("PRAGMA synchronous=NORMAL")
                c.execute("BEGIN IMMEDIATE")
                # Schema-1 messages have rows in `outbox`; later ones are pending by id alone.
                c.execute("DELETE FROM outbox WHERE id <= ?", (upto_id,))
                c.execute("INSERT INTO outbox_acked(upto_id, utc) VALUES (?,?)",
                          (upto_id, utc or _utc_now()))
                c.execute("COMMIT")
                _set_synchronous_full(c, self.path)
            except BaseException as exc:
                self._fail(f"ack of outbox up to {upto_id} failed: {exc}")
                if isinstance(exc, sqlite3.Error | JournalError):
                    raise JournalError(f"journal {self.path}: {self._failed}") from exc
                raise
            n = upto_id - self._acked_upto
            self._acked_upto = upto_id
            return n

    def _check_writable(self) -> None:
        if self._lock_fd is None:
            raise JournalError(f"journal {self.path} is closed")
        if self._failed is not None:
            raise JournalError(f"journal {self.path} refuses writes after a failure "
                               f"({self._failed}); reopen it")

    def _fail(self, why: str) -> None:
        # After a failed commit (or fsync) the file's state is unknown to us: stop writing.
        self._failed = why
        with contextlib.suppress(sqlite3.Error):
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")

    # ---- reading -------------------------------------------------------------------------

    def replay_point(self) -> tuple[dict[str, Any] | None, list[StoredEvent]]:
        """The latest snapshot's state (None: start from the machine's initial state) and every
        event after it, in order: what the daemon replays at start."""
        with self._mutex:
            row = self._conn.execute(
                "SELECT seq, state FROM snapshots ORDER BY seq DESC LIMIT 1").fetchone()
            after = 0 if row is None else row[0]
            return (None if row is None else json.loads(_snapshot_text(row[1])),
                    list(self.iter_events(after + 1)))

    def iter_events(self, start_seq: int = 1, end_seq: int | None = None) -> Iterator[StoredEvent]:
        """Events from start_seq to end_seq (inclusive), in order (e.g. a full audit replay).

        Read in pages by key, so no statement stays open between yields (appends may run)."""
        nxt = max(1, start_seq)
        prev: tuple[int, str] | None = None  # the commit before the next one read: (seq, hash)
        while True:
            with self._mutex:
                end = self._last_seq if end_seq is None else end_seq
                if nxt > end:
                    return
                if nxt <= self._v1_last_seq:
                    rows = self._conn.execute(
                        "SELECT seq, utc, mono_ms, kind, round, data, fx, hash FROM events "
                        "WHERE seq BETWEEN ? AND ? ORDER BY seq LIMIT 256",
                        (nxt, min(end, self._v1_last_seq))).fetchall()
                    page = [_stored_v1(r) for r in rows]
                else:
                    if prev is None:
                        prev = self._commit_before(nxt)
                    rows = self._conn.execute(
                        "SELECT seq, body, hash FROM commits WHERE seq >= ? ORDER BY seq "
                        "LIMIT 32", (nxt,)).fetchall()
                    page = []
                    for key, body, stored in rows:
                        page += self._decode(key, body, prev)
                        prev = (key, stored.hex())
                        if key >= end:
                            break
                    page = [e for e in page if nxt <= e.seq <= end]
            if not page:
                return
            yield from page
            nxt = page[-1].seq + 1

    def _commit_before(self, seq: int) -> tuple[int, str]:
        """(seq, hash) where the chain stands before the commit holding `seq`."""
        row = self._conn.execute("SELECT seq, hash FROM commits WHERE seq < ? ORDER BY seq "
                                 "DESC LIMIT 1", (seq,)).fetchone()
        if row is None or row[0] < self._v1_last_seq:
            return self._v1_last_seq, self._v1_last_hash
        return row[0], row[1].hex()

    def _decode(self, key: int, body: bytes, prev: tuple[int, str]) -> list[StoredEvent]:
        """The records of one commit, given where the chain stood before it."""
        try:
            records = _elements(self._codec.unpack(body))
        except ValueError as exc:
            raise JournalError(f"journal {self.path}: commit at seq {key} unreadable: {exc}"
                               ) from exc
        first, h = prev[0] + 1, prev[1]
        if first + len(records) - 1 != key:
            raise JournalError(f"journal {self.path}: commit at seq {key} holds "
                               f"{len(records)} records after seq {prev[0]}")
        out = []
        for i, (text, (utc, mono, kind, rnd, data, fx)) in enumerate(records):
            h = chain_hash(h, first + i, text)
            out.append(_stored(first + i, utc, mono, kind, rnd, data, fx, h))
        return out

    def _commit_events(self, key: int) -> list[StoredEvent]:
        with self._mutex:
            body = self._conn.execute("SELECT body FROM commits WHERE seq = ?",
                                      (key,)).fetchone()[0]
            return self._decode(key, body, self._commit_before(key))

    def _first_commit_where(self, column: str, value: int) -> int | None:
        """The first commit whose `column` (non-decreasing along the chain) is >= value, by
        bisection on the primary key: no index that every append would pay for."""
        assert column in _INDEX_COLUMNS
        lo, hi = self._v1_last_seq + 1, self._last_seq + 1
        with self._mutex:
            while lo < hi:
                mid = (lo + hi) // 2
                row = self._conn.execute(f"SELECT {column} FROM commits WHERE seq >= ? "
                                         "ORDER BY seq LIMIT 1", (mid,)).fetchone()
                if row is not None and row[0] >= value:
                    hi = mid
                else:
                    lo = mid + 1
            if lo > self._last_seq:
                return None
            row = self._conn.execute("SELECT seq FROM commits WHERE seq >= ? ORDER BY seq "
                                     "LIMIT 1", (lo,)).fetchone()
            return None if row is None else int(row[0])

    def tail(self, n: int = 20) -> list[StoredEvent]:
        """The last n events, oldest first."""
        return list(self.iter_events(max(1, self._last_seq - n + 1)))

    def round_record(self, number: int) -> RoundRecord | None:
        with self._mutex:
            row = self._conn.execute("SELECT seq FROM rounds WHERE number = ?",
                                     (number,)).fetchone()  # a schema-1 record
        if row is not None:
            events = list(self.iter_events(row[0], row[0]))
        else:
            key = self._first_commit_where("rec", number) if number >= 1 else None
            events = [] if key is None else self._commit_events(key)
        for ev in events:
            for r in ev.rounds:
                if r.number == number:
                    return r
        return None

    def round_events(self, number: int) -> list[StoredEvent]:
        """Every event whose `round` is `number`, in order (`tablectl round show N`).

        Rounds never go back along the chain, so the events of a round are one seq range:
        found by bisection on the primary key, without an index that every append would pay."""
        lo = self._first_seq_with_round_at_least(number)
        hi = self._first_seq_with_round_at_least(number + 1) - 1
        return list(self.iter_events(lo, hi)) if lo <= hi else []

    def _first_seq_with_round_at_least(self, number: int) -> int:
        with self._mutex:
            c, v1_last = self._conn, self._v1_last_seq
            row = c.execute("SELECT round FROM events WHERE seq = ?", (v1_last,)).fetchone()
            if row is not None and row[0] >= number:  # among the schema-1 rows
                lo, hi = 1, v1_last
                while lo < hi:
                    mid = (lo + hi) // 2
                    row = c.execute("SELECT round FROM events WHERE seq >= ? ORDER BY seq "
                                    "LIMIT 1", (mid,)).fetchone()
                    if row is not None and row[0] >= number:
                        hi = mid
                    else:
                        lo = mid + 1
                return lo
        key = self._first_commit_where("round", number)
        if key is None:
            return self._last_seq + 1
        return next(e.seq for e in self._commit_events(key) if e.round >= number)

    def pending_outbox(self, limit: int = 100) -> list[OutboxMessage]:
        """Messages not yet acknowledged by head office, oldest first."""
        out: list[OutboxMessage] = []
        with self._mutex:
            # Schema-1 messages: the `outbox` rows (pending ones only).
            rows = self._conn.execute(
                "SELECT o.id, e.seq, e.utc, e.fx FROM outbox o JOIN events e ON e.seq = o.seq "
                "ORDER BY o.id LIMIT ?", (limit,)).fetchall()
            for oid, seq, utc, fx in rows:
                for mid, mtype, payload in _parse_fx(fx)[0]:
                    if mid == oid:
                        out.append(OutboxMessage(mid, seq, mtype, payload, utc))
            start = max(self._acked_upto, out[-1].id if out else 0) + 1
            if len(out) >= limit or start >= self._next_outbox_id:
                return out[:limit]
            key = self._first_commit_where("out", start)
            if key is None:
                return out
            first = self._commit_before(key)[0] + 1
        for ev in self.iter_events(first):
            out += [m for m in ev.outbox if m.id >= start]
            if len(out) >= limit:
                break
        return out[:limit]

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
                "last_round": self.last_round_number, "current_round": self._last_event_round,
                "outbox_pending": self._next_outbox_id - 1 - self._acked_upto,
                "outbox_acked_upto": self._acked_upto,
                "last_snapshot_seq": snap,
                "first_utc": first.utc if first else None, "last_utc": last.utc if last else None,
                "file_bytes": size,
            }

    def verify(self) -> VerifyReport:
        """Re-walk the whole chain (e.g. `tablectl selftest`); does not change the journal."""
        with self._mutex:
            return _verify_conn(self._conn, (self.table_id, self.game))


_SNAPSHOT_CODEC = Codec("")


def _insert_snapshot(c: sqlite3.Connection, row: _Row) -> None:
    """Deflated (no dictionary), and never deleted: a deleted snapshot's freed pages would be
    reused at the price of a freelist page written with each; they are ~300 bytes each."""
    assert row.snapshot is not None
    c.execute("INSERT INTO snapshots(seq, state, hash) VALUES (?,?,?)",
              (row.seq, _SNAPSHOT_CODEC.pack(row.snapshot),
               snapshot_hash(row.hash, row.snapshot)))


def _set_synchronous_full(conn: sqlite3.Connection, path: Path) -> None:
    conn.execute("PRAGMA synchronous=FULL")
    if conn.execute("PRAGMA synchronous").fetchone()[0] != 2:
        raise JournalError(f"journal {path}: PRAGMA synchronous=FULL did not take")


def _set_pragmas(conn: sqlite3.Connection, path: Path) -> None:
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]  # persistent; set at creation
    if str(mode).lower() != "wal":
        raise JournalError(f"journal {path}: journal_mode is {mode!r}, WAL required")
    _set_synchronous_full(conn, path)
    conn.execute("PRAGMA foreign_keys=ON")
    if conn.execute("PRAGMA foreign_keys").fetchone()[0] != 1:
        raise JournalError(f"journal {path}: foreign_keys=ON did not take")
    # Checkpoint less often than SQLite's 1000 pages: a page changed by many commits is copied
    # to the main file once per checkpoint, so rarer checkpoints write fewer bytes per round.
    conn.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")


def _acked_upto(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT coalesce(max(upto_id), 0) FROM outbox_acked").fetchone()[0])


def _load_state(conn: sqlite3.Connection, table_id: str, game: str) -> VerifyReport:
    """The writer's position without checking the chain (open with verify=False)."""
    st = VerifyReport()
    st.last_hash = genesis_hash(table_id, game)
    row = conn.execute("SELECT seq, hash, round FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    if row is not None:
        st.last_seq, st.last_hash, st.last_event_round = row
    for status, n in conn.execute("SELECT status, count(*) FROM rounds GROUP BY status"):
        if status in ROUND_STATUSES:
            setattr(st, f"rounds_{status}", n)
    st.acked_upto = _acked_upto(conn)
    top = int(conn.execute("SELECT coalesce(max(id), 0) FROM outbox").fetchone()[0])
    meta = _meta(conn)
    if meta.get("schema") != "1":
        codec = Codec(meta["deflate_dict"])
        for key, rnd, out, body, h in conn.execute(
                "SELECT seq, round, out, body, hash FROM commits ORDER BY seq"):
            st.last_seq, st.last_hash, st.last_event_round = key, h.hex(), rnd
            top = max(top, out)
            for _text, record in _elements(codec.unpack(body)):
                for _n, status, _summary in _fx_items(record[5] or {})[1]:
                    if status in ROUND_STATUSES:
                        setattr(st, f"rounds_{status}", getattr(st, f"rounds_{status}") + 1)
    st.records = st.last_seq
    st.next_outbox_id = max(top, st.acked_upto) + 1
    return st


def _create(path: Path, table_id: str, game: str) -> None:
    """Build a new journal beside the target and link it into place: `journal.sqlite3` exists
    only complete, so an empty or half-made one is always corruption, never 'new'."""
    tmp = path.with_name(path.name + ".new")
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{tmp}{suffix}")
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640))
    os.chmod(tmp, 0o640)  # whatever the umask; SQLite gives -wal/-shm the same mode
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN IMMEDIATE")
        for stmt in [*_TABLES_V1.split(";"), _TABLE_COMMITS]:
            if stmt.strip():
                conn.execute(stmt)
        conn.executemany("INSERT INTO meta(key, value) VALUES (?,?)", [
            ("schema", SCHEMA_VERSION), ("table_id", table_id), ("game", game),
            ("created_utc", _utc_now()), ("genesis", genesis_hash(table_id, game)),
            ("v1_last_seq", "0"), ("deflate_dict", deflate_dict(game))])
        conn.execute("COMMIT")
    finally:
        conn.close()  # checkpoints and removes tmp's WAL
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # fails if a journal appeared meanwhile: never overwrite one
    finally:
        os.unlink(tmp)
    _fsync_dir(path.parent)


def _upgrade(conn: sqlite3.Connection, path: Path, game: str, last_seq: int) -> None:
    """Schema 1 -> 2, in one transaction: the records stay in `events`; `commits` takes the next
    ones. `snapshots` loses its foreign key to `events` (later snapshots are of commits)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(_TABLE_COMMITS)
        conn.execute("CREATE TABLE snapshots_v2(seq INTEGER PRIMARY KEY, state BLOB NOT NULL, "
                     "hash TEXT NOT NULL)")
        conn.execute("INSERT INTO snapshots_v2 SELECT seq, state, hash FROM snapshots")
        conn.execute("DROP TABLE snapshots")
        conn.execute("ALTER TABLE snapshots_v2 RENAME TO snapshots")
        conn.executemany("INSERT INTO meta(key, value) VALUES (?,?)", [
            ("v1_last_seq", str(last_seq)), ("deflate_dict", deflate_dict(game)),
            ("upgraded_utc", _utc_now())])
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION,))
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise JournalError(f"journal {path}: upgrade to schema {SCHEMA_VERSION} failed: {exc}"
                           ) from exc
