"""Verification: walk the whole chain in one read transaction, checking every record's hash,
the side tables, the snapshots and (schema 3, with the key) every MAC; `verify_dir` adds the
high-water mark (`tablectl journal verify`). A report, never an exception, for a damaged file."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.journal.chain import chain_hash, genesis_hash, record_hash, snapshot_hash
from controller.journal.codec import Codec, parse_body, snapshot_text
from controller.journal.lock import take_lock
from controller.journal.mac import JournalKey, KeyFileError, find_key
from controller.journal.mark import MARK_FILE, MarkError, mark_problem, read_mark
from controller.journal.records import LOSS_KIND, fx_items, outbox_next
from controller.journal.schema import (
    JOURNAL_FILE,
    LOCK_FILE,
    SCHEMAS_READ,
    V3_META,
    read_acked_upto,
    read_meta,
    v1_last_seq,
)

MAX_ERRORS = 50  # a wrecked file must not produce a million-line report


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
    # How the MACs were checked ("checked with key ...", or why not) and the high-water mark
    # (verify_dir); shown by `tablectl journal verify`, not part of as_json().
    macs: str = "not a keyed journal (schema 1 or 2)"
    mark: str = "not checked"

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


def verify_conn(conn: sqlite3.Connection, expect: tuple[str, str] | None = None,
                key: JournalKey | None = None) -> VerifyReport:
    """Walk the whole journal in one read transaction, streaming (constant memory); with the
    key, check its MACs too."""
    rep = VerifyReport()
    try:
        conn.execute("BEGIN")
        _verify_walk(conn, rep, expect, key)
    except sqlite3.DatabaseError as exc:
        after = f" after seq {rep.last_seq}" if rep.last_seq else ""
        rep.error(f"database unreadable{after}: {exc}")
    finally:
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
    return rep


@dataclass(frozen=True)
class _Macs:
    """What the MACs of a schema-3 journal are checked with (docs/journal.md, "Keyed chain")."""

    key: JournalKey
    table_id: str
    game: str
    since: int  # every commit and snapshot after this seq carries a MAC

    def check(self, mac: Any, domain: str, *fields: Any) -> bool:
        return self.key.check(mac, domain, self.table_id, self.game, *fields)


class _Walk:
    """The checks along the chain, record by record, with the side tables walked in step."""

    def __init__(self, conn: sqlite3.Connection, rep: VerifyReport, genesis: str,
                 macs: _Macs | None = None, keyed: bool = False) -> None:
        self.rep = rep
        self.macs = macs
        # Side tables, each ordered by its key. `outbox` and `rounds` index schema-1 records only.
        self.pending = conn.execute("SELECT id, seq FROM outbox ORDER BY id")
        self.rounds = conn.execute("SELECT number, status, seq FROM rounds ORDER BY number")
        self.snaps = conn.execute(
            f"SELECT seq, state, hash, {'mac' if keyed else 'NULL'} FROM snapshots ORDER BY seq")
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
                outs, rnds = fx_items(fx)
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
                ok = snapshot_hash(h, snapshot_text(self.s_row[1])) == self.s_row[2]
            except ValueError:
                ok = False
            if not ok:
                rep.error(f"seq {seq}: snapshot hash mismatch (snapshot altered)")
            elif self.macs is not None:
                mac = self.s_row[3]
                if mac is not None and not self.macs.check(mac, "snapshot", seq, self.s_row[2]):
                    rep.error(f"seq {seq}: snapshot MAC mismatch (snapshot rewritten without the "
                              "table's key)")
                elif mac is None and seq > self.macs.since:
                    rep.error(f"seq {seq}: snapshot has no MAC (every snapshot after seq "
                              f"{self.macs.since} has one)")
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
                 expect: tuple[str, str] | None, key: JournalKey | None) -> None:
    for (msg,) in conn.execute("PRAGMA quick_check(20)"):
        if msg != "ok":
            rep.error(f"sqlite quick_check: {msg}")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    missing = {"meta", "events", "outbox", "outbox_acked", "rounds", "snapshots"} - tables
    if missing:
        rep.error(f"not a tablectl journal: missing tables {sorted(missing)}")
        return
    meta = read_meta(conn)
    schema = meta.get("schema")
    if schema not in SCHEMAS_READ:
        rep.error(f"unknown journal schema {schema!r} (expected one of {list(SCHEMAS_READ)})")
        return
    if schema != "1" and ("commits" not in tables or "v1_last_seq" not in meta
                          or "deflate_dict" not in meta):
        rep.error(f"not a tablectl journal of schema {schema}: commits table or meta missing")
        return
    keyed = schema == "3"
    if keyed and not meta.keys() >= V3_META:
        rep.error(f"not a tablectl journal of schema 3: meta {sorted(V3_META - meta.keys())} "
                  "missing")
        return
    table_id, game = meta.get("table_id", ""), meta.get("game", "")
    if expect is not None and (table_id, game) != expect:
        rep.error(f"journal belongs to table {table_id!r} game {game!r}, "
                  f"not table {expect[0]!r} game {expect[1]!r}")
        return
    macs = _macs_for(meta, key, rep) if keyed else None
    since = _int_meta(meta, "mac_since", rep) if keyed else -1
    rep.acked_upto = _checked_acked_upto(conn, meta, macs, rep) if keyed else read_acked_upto(conn)
    genesis = genesis_hash(table_id, game)
    walk = _Walk(conn, rep, genesis, macs, keyed)
    v1_last = v1_last_seq(meta)

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
        if seq == since:
            _check_since(meta, macs, h, rep)
    if v1_last is None:
        walk.finish()
        return
    if rep.last_seq != v1_last:
        rep.error(f"schema-1 rows end at seq {rep.last_seq}, the upgrade recorded seq {v1_last}")

    # Schema-2 records: one row per commit, its records deflated, the hash after the last one.
    codec = Codec(meta["deflate_dict"])
    for key_seq, c_round, c_rec, c_out, body, stored, mac in conn.execute(
            f"SELECT seq, round, rec, out, body, hash, {'mac' if keyed else 'NULL'} FROM commits "
            "ORDER BY seq"):
        stored_hex = stored.hex() if isinstance(stored, bytes) else repr(stored)
        if key_seq == since:
            _check_since(meta, macs, stored_hex, rep)
        try:
            records = parse_body(codec.unpack(body))
        except ValueError as exc:
            if key_seq < walk.expected:
                walk.gap(key_seq, key_seq)
            rep.error(f"seq {walk.expected}..{key_seq}: commit unreadable ({exc})")
            # Carry on from its stored hash and columns: the next commits are checked as usual.
            walk.next_round = max(walk.next_round, int(c_rec) + 1)
            walk.next_out = max(walk.next_out, int(c_out) + 1)
            walk.prev, walk.expected = stored_hex, key_seq + 1
            rep.last_seq, rep.last_hash = key_seq, stored_hex
            _check_commit_mac(macs, since, key_seq, stored_hex, mac, rep)
            continue
        first = key_seq - len(records) + 1
        walk.gap(first, key_seq)
        h = walk.prev
        for i, (text, (_utc, _mono, kind, rnd, data, fx)) in enumerate(records):
            h = chain_hash(h, first + i, text)
            if kind == LOSS_KIND:  # the outbox ids lost with the records are skipped
                walk.next_out = max(walk.next_out, outbox_next(data) or 0)
            walk.record(first + i, rnd, fx, h, indexed=False)
        if h != stored_hex:
            what = f"seq {key_seq}" if first == key_seq else f"seq {first}..{key_seq}"
            rep.error(f"{what}: hash mismatch (record altered, reordered or chain broken)")
        if (c_round, c_rec, c_out) != (records[-1][1][3], walk.next_round - 1,
                                       walk.next_out - 1):
            rep.error(f"seq {key_seq}: commit columns round/rec/out {c_round}/{c_rec}/{c_out} "
                      f"do not match its records ({records[-1][1][3]}/{walk.next_round - 1}/"
                      f"{walk.next_out - 1})")
        walk.prev, walk.expected = stored_hex, key_seq + 1
        rep.last_seq, rep.last_hash = key_seq, stored_hex
        _check_commit_mac(macs, since, key_seq, stored_hex, mac, rep)
    if since == 0:  # MACs from creation: checked last, the chain's own errors come first
        _check_since(meta, macs, genesis, rep)
    if since > rep.last_seq:
        rep.error(f"journal ends at seq {rep.last_seq}, before seq {since} where its MACs begin "
                  "(records lost or cut off)")
    walk.finish()


def _check_commit_mac(macs: _Macs | None, since: int, seq: int, chain: str, mac: Any,
                      rep: VerifyReport) -> None:
    """A commit's MAC over its seq and stored chain hash: recomputing the chain after an edit
    is not enough without the key."""
    if macs is not None and seq > since and not macs.check(mac, "commit", seq, chain):
        what = "has no MAC" if mac is None else "MAC mismatch"
        rep.error(f"seq {seq}: commit {what} (written or rewritten without the table's key)")


def _int_meta(meta: Mapping[str, str], name: str, rep: VerifyReport) -> int:
    value = meta.get(name, "")
    if not value.isdigit():
        rep.error(f"meta {name} is {value!r}, not a number")
        return 0
    return int(value)


def _macs_for(meta: Mapping[str, str], key: JournalKey | None, rep: VerifyReport
              ) -> _Macs | None:
    """What the MACs are checked with, or None (no key, or another table's key)."""
    if key is None:
        rep.macs = "not checked: no key (the plain SHA-256 chain was checked)"
        return None
    if meta["key_id"] != key.key_id:
        rep.macs = "not checked: wrong key"
        rep.error(f"journal MACs were made with key id {meta['key_id']}, the key {key.source} is "
                  f"key id {key.key_id}: wrong or replaced key (or meta altered)")
        return None
    rep.macs = f"checked with key id {key.key_id} ({key.source})"
    if key.dev:
        rep.macs += "; a development key beside the journal: no protection against whoever " \
            "can write the state directory"
    return _Macs(key, meta["table_id"], meta["game"], _int_meta(meta, "mac_since", rep))


def _check_since(meta: Mapping[str, str], macs: _Macs | None, chain: str,
                 rep: VerifyReport) -> None:
    """The MAC of the point where MACs begin (creation, or the schema-3 upgrade): it covers
    the chain head there, hence every record before it."""
    if macs is None:
        return
    try:
        mac = bytes.fromhex(meta["mac_since_mac"])
    except ValueError:
        mac = b""
    if not macs.check(mac, "since", macs.since, chain, meta["acked_at_mac"]):
        rep.error(f"seq {macs.since}: MAC of the chain head where MACs begin does not match "
                  "(records before it rewritten, or meta altered)")


def _checked_acked_upto(conn: sqlite3.Connection, meta: Mapping[str, str], macs: _Macs | None,
                        rep: VerifyReport) -> int:
    """The last acknowledged outbox id. With the key only MAC'd acks count (and any other
    above `acked_at_mac`, the acks before MACs began, is an error); without it, every row."""
    top = _int_meta(meta, "acked_at_mac", rep)
    for upto, utc, mac in conn.execute(
            "SELECT upto_id, utc, mac FROM outbox_acked ORDER BY upto_id"):
        if macs is None or (mac is None and upto <= top):
            top = max(top, int(upto))
        elif macs.check(mac, "ack", upto, utc):
            top = max(top, upto)
        else:
            rep.error(f"outbox ack up to message {upto} "
                      f"{'has no MAC' if mac is None else 'MAC mismatch'} (forged or altered)")
    return top


def verify_dir(state_dir: Path | str, key_file: Path | None = None) -> VerifyReport:
    """Offline verification (`tablectl journal verify`): the chain, with the table's key (if
    one is found, `find_key`) its MACs, and the high-water mark. Creates nothing; never raises
    for a missing or damaged journal, mark or key: that is an error in the report."""
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
    try:
        key = find_key(state_dir, key_file=key_file)
        key_problem = key_note = None
    except KeyFileError as exc:
        key, key_problem = None, None if exc.denied else str(exc)
        key_note = f"not checked: {exc} (root can read it)" if exc.denied else None
    lock_fd = None
    uri = f"file:{path}?mode=ro"
    wal = Path(f"{path}-wal")
    if not wal.exists() and (state_dir / LOCK_FILE).exists():
        # No daemon and a clean shutdown: read the file as immutable, so SQLite does not leave
        # -wal/-shm files behind; the shared lock keeps a daemon from starting meanwhile.
        with contextlib.suppress(OSError):
            lock_fd = take_lock(state_dir / LOCK_FILE, exclusive=False, wait_s=0)
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
            rep = verify_conn(conn, key=key)
            if key_problem is not None:
                rep.error(key_problem)
            elif key is None and rep.macs.startswith("not checked") and key_note is not None:
                rep.macs = key_note
            with contextlib.suppress(sqlite3.Error):
                meta = read_meta(conn)
                if meta.get("schema") == "3":
                    _verify_mark(conn, state_dir / MARK_FILE, key, meta, rep)
            return rep
        finally:
            conn.close()
    finally:
        if lock_fd is not None:
            os.close(lock_fd)


def _verify_mark(conn: sqlite3.Connection, mark_path: Path, key: JournalKey | None,
                 meta: Mapping[str, str], rep: VerifyReport) -> None:
    problem = mark_problem(conn, mark_path, key, meta, None)
    if problem is not None:
        rep.error(f"journal: {problem[0]}")
        rep.mark = "FAILED"
    else:
        with contextlib.suppress(OSError, MarkError):
            m = read_mark(mark_path, key, meta["table_id"], meta["game"])
            rep.mark = (f"seq {m.seq} (journal ends at seq {rep.last_seq})"
                        + ("" if key is not None else "; its MAC not checked: no key"))
