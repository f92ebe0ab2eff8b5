"""Verification: walk the whole chain in one read transaction, checking every record's hash,
the side tables, the snapshots and (schema 3, with the key) every MAC; `verify_dir` adds the
high-water mark (`tablectl journal verify`). A report, never an exception, for a damaged file."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from controller.journal import archived, segments
from controller.journal.chain import chain_hash, genesis_hash, record_hash
from controller.journal.checkpoint import Checkpoint, check_row
from controller.journal.codec import Codec, parse_body
from controller.journal.errors import RecordDamaged
from controller.journal.lock import read_only_uri
from controller.journal.mac import JournalKey, KeyFileError, find_key
from controller.journal.mark import MARK_FILE, MarkError, mark_problem, read_mark
from controller.journal.records import LOSS_KIND, outbox_next, round_next
from controller.journal.schema import (
    JOURNAL_FILE,
    KEYED_SCHEMAS,
    LOCK_FILE,
    SCHEMAS_READ,
    V3_META,
    hash_stored_through,
    read_acked_upto,
    read_meta,
    v1_last_seq,
)
from controller.journal.walk import Macs, VerifyReport, Walk

Progress = Callable[[int, int], None]  # (seq reached, last seq): a terminal's progress line
PROGRESS_EVERY = 2048  # commits


def verify_conn(conn: sqlite3.Connection, expect: tuple[str, str] | None = None,
                key: JournalKey | None = None, *, start: Checkpoint | None = None,
                passed: Collection[int] = (), progress: Progress | None = None
                ) -> VerifyReport:
    """Walk the whole journal in one read transaction, streaming (constant memory); with the
    key, check its MACs too. From `start` (a checkpoint the caller checked, checkpoint.latest):
    only the records after it, from the position it sums up, without SQLite's quick_check of
    the whole file (what a writer does at start; the whole walk is done in the background);
    the checkpoints at the seqs `passed` (refused by checkpoint.latest) are not compared."""
    rep = VerifyReport()
    try:
        conn.execute("BEGIN")
        _verify_walk(conn, rep, expect, key, start, passed, progress)
    except sqlite3.DatabaseError as exc:
        after = f" after seq {rep.last_seq}" if rep.last_seq else ""
        rep.error(f"database unreadable{after}: {exc}")
    finally:
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
    return rep


def _verify_walk(conn: sqlite3.Connection, rep: VerifyReport, expect: tuple[str, str] | None,
                 key: JournalKey | None, start: Checkpoint | None, passed: Collection[int],
                 progress: Progress | None) -> None:
    if start is None:
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
    keyed = schema in KEYED_SCHEMAS
    if keyed and not meta.keys() >= V3_META:
        rep.error(f"not a tablectl journal of schema {schema}: meta "
                  f"{sorted(V3_META - meta.keys())} missing")
        return
    try:
        stored_through = hash_stored_through(meta)  # None: every commit stores its hash
    except ValueError as exc:
        rep.error(f"not a tablectl journal of schema 4: {exc}")
        return
    table_id, game = meta.get("table_id", ""), meta.get("game", "")
    if expect is not None and (table_id, game) != expect:
        rep.error(f"journal belongs to table {table_id!r} game {game!r}, "
                  f"not table {expect[0]!r} game {expect[1]!r}")
        return
    macs = _macs_for(meta, key, rep) if keyed else None
    since = _int_meta(meta, "mac_since", rep) if keyed else -1
    rep.acked_upto = (_checked_acked_upto(conn, meta, macs, rep, start) if keyed
                      else read_acked_upto(conn))
    base = prune_base(conn, meta, key if macs is not None else None, rep)
    if base is not None:
        rep.pruned_through, rep.pruned_hash = base.seq, base.hash
        if start is None or start.seq < base.seq:
            start = base  # what remains goes on from the checkpoint at the last pruned seq
    genesis = genesis_hash(table_id, game)
    after = 0 if start is None else start.seq
    walk = Walk(conn, rep, genesis, macs, keyed, after, passed)
    v1_last = v1_last_seq(meta)
    if start is not None:
        walk.resume(start)

    # Schema-1 records: one row each, its hash stored.
    for seq, utc, mono, kind, rnd, data, fx, h in conn.execute(
            "SELECT seq, utc, mono_ms, kind, round, data, fx, hash FROM events WHERE seq > ? "
            "ORDER BY seq", (after,)):
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
    if rep.last_seq < v1_last or (start is None and rep.last_seq != v1_last):
        rep.error(f"schema-1 rows end at seq {rep.last_seq}, the upgrade recorded seq {v1_last}")

    # Schema-2 records: one row per commit, its records deflated, the hash after the last one
    # (schema 4: after seq `stored_through`, no hash stored: the recomputed one is MAC'd).
    codec = Codec(meta["deflate_dict"])
    last = conn.execute("SELECT coalesce(max(seq), 0) FROM commits").fetchone()[0]
    drift = _Drift(rep)
    for n, (key_seq, c_round, c_rec, c_out, body, stored, mac) in enumerate(conn.execute(
            f"SELECT seq, round, rec, out, body, hash, {'mac' if keyed else 'NULL'} FROM commits "
            "WHERE seq > ? ORDER BY seq", (after,))):
        if progress is not None and n % PROGRESS_EVERY == 0:
            progress(key_seq, last)
        # (A hash stored where schema 4 stores none is compared, as in the rows before it.)
        hashless = stored_through is not None and key_seq > stored_through and stored == b""
        stored_hex = None if hashless else (
            stored.hex() if isinstance(stored, bytes) else repr(stored))
        try:
            records = parse_body(codec.unpack(body))
        except ValueError as exc:
            if key_seq < walk.expected:
                walk.gap(key_seq, key_seq)
            rep.error(f"seq {walk.expected}..{key_seq}: commit unreadable ({exc})")
            walk.next_round = max(walk.next_round, int(c_rec) + 1)
            walk.next_out = max(walk.next_out, int(c_out) + 1)
            if stored_hex is None:
                # Nothing to carry the chain on from: what follows is not verified.
                rep.error(f"seq {key_seq + 1}..{last}: not verified (the chain cannot be "
                          "recomputed past an unreadable commit)")
                return
            # Carry on from its stored hash and columns: the next commits are checked as usual.
            if key_seq == since:
                _check_since(meta, macs, stored_hex, rep)
            walk.prev, walk.expected = stored_hex, key_seq + 1
            rep.last_seq, rep.last_hash = key_seq, stored_hex
            _check_commit_mac(macs, since, key_seq, stored_hex, mac, rep)
            continue
        first = key_seq - len(records) + 1
        if first <= after < key_seq:  # the checkpoint is inside this commit: walk on from it
            records, first = records[after - first + 1:], after + 1
        walk.gap(first, key_seq)
        h, resynced = walk.prev, None
        walk.may_resync = hashless
        for i, (text, (_utc, _mono, kind, rnd, data, fx)) in enumerate(records):
            h = chain_hash(h, first + i, text)
            if kind == LOSS_KIND:  # the outbox ids lost with the records are skipped
                walk.next_out = max(walk.next_out, outbox_next(data) or 0)
                walk.skip_rounds(round_next(data))  # and the round numbers head office has
            walk.record(first + i, rnd, fx, h, indexed=False)
            if walk.resync is not None:
                # A checkpoint that checks out where the recomputed chain went wrong: go on from
                # its hash, so that an altered commit is not one error per commit after it.
                # (Rows that store their hash go on from it instead, below.)
                h, resynced = walk.resync, first + i
        if stored == b"" and not hashless:
            upto = "every row" if stored_through is None else f"rows up to seq {stored_through}"
            rep.error(f"seq {key_seq}: its stored chain hash was removed ({upto} store theirs)")
            stored_hex = h  # the recomputed one, which its MAC checks
        if stored_hex is None:
            stored_hex = h
        elif h != stored_hex:
            what = f"seq {key_seq}" if first == key_seq else f"seq {first}..{key_seq}"
            rep.error(f"{what}: hash mismatch (record altered, reordered or chain broken)")
        if key_seq == since:
            _check_since(meta, macs, stored_hex, rep)
        if (c_round, c_rec, c_out) != (records[-1][1][3], walk.next_round - 1,
                                       walk.next_out - 1):
            rep.error(f"seq {key_seq}: commit columns round/rec/out {c_round}/{c_rec}/{c_out} "
                      f"do not match its records ({records[-1][1][3]}/{walk.next_round - 1}/"
                      f"{walk.next_out - 1})")
        walk.prev, walk.expected = stored_hex, key_seq + 1
        rep.last_seq, rep.last_hash = key_seq, stored_hex
        if hashless:
            if resynced is not None:
                drift.resynced(resynced, first)
            drift.check(macs, since, key_seq, first, stored_hex, mac, resynced is not None)
        else:
            _check_commit_mac(macs, since, key_seq, stored_hex, mac, rep)
    drift.finish()
    if progress is not None:
        progress(rep.last_seq, last)
    if since == 0 and start is None:  # MACs from creation: checked last, after the chain
        _check_since(meta, macs, genesis, rep)
    if since > rep.last_seq:
        rep.error(f"journal ends at seq {rep.last_seq}, before seq {since} where its MACs begin "
                  "(records lost or cut off)")
    walk.finish()


def prune_base(conn: sqlite3.Connection, meta: Mapping[str, str], key: JournalKey | None,
               rep: VerifyReport) -> Checkpoint | None:
    """The checkpoint at the last pruned seq, from which the journal goes on (None: nothing
    pruned). Errors in `rep` if the pruned segments or that checkpoint do not check out."""
    table_id, game = meta["table_id"], meta["game"]
    last, errors = segments.pruned_through(segments.read_all(conn, key, table_id, game))
    for text in errors:
        rep.error(text)
    if not last:
        return None
    row = conn.execute("SELECT body, mac FROM checkpoints WHERE seq = ?", (last,)).fetchone()
    try:
        if row is None:
            raise RecordDamaged("missing")
        if key is None:
            return Checkpoint.parse(row[0] if isinstance(row[0], str) else "")
        return check_row(key, table_id, game, last, row[0], row[1])
    except ValueError as exc:
        rep.error(f"seq 1..{last} pruned, but the checkpoint the journal goes on from is "
                  f"unusable ({exc})")
        return None


def _check_commit_mac(macs: Macs | None, since: int, seq: int, chain: str, mac: Any,
                      rep: VerifyReport) -> None:
    """A commit's MAC over its seq and stored chain hash: recomputing the chain after an edit
    is not enough without the key."""
    if macs is not None and seq > since and not macs.check(mac, "commit", seq, chain):
        what = "has no MAC" if mac is None else "MAC mismatch"
        rep.error(f"seq {seq}: commit {what} (written or rewritten without the table's key)")


class _Drift:
    """The MACs of commits that store no chain hash (schema 4), checked over the recomputed
    chain. A commit whose MAC fails is judged by the next one: if that one checks out, only
    the MAC was rewritten; if not, the chain went wrong there (a record altered, reordered or
    missing), and the commits after it cannot be verified until the chain is back in step (a
    checkpoint that checks out): one error for the commit, one line for that span."""

    def __init__(self, rep: VerifyReport) -> None:
        self.rep = rep
        self.pending: tuple[int, int, bool] | None = None  # (first, key, no MAC) to judge
        self.broken = False
        self.span: tuple[int, int] | None = None  # seqs not verifiable since the break
        self.good = -1  # the last commit whose MAC checked out (-1: none)

    def check(self, macs: Macs | None, since: int, key: int, first: int, chain: str,
              mac: Any, resynced: bool) -> None:
        ok = macs is None or key <= since or macs.check(mac, "commit", key, chain)
        if ok and macs is not None:
            self.good = key
        if self.pending is not None:
            p_first, p_key, no_mac = self.pending
            self.pending = None
            if ok and not resynced:
                self.rep.error(f"seq {p_key}: commit {'has no MAC' if no_mac else 'MAC mismatch'}"
                               " (written or rewritten without the table's key)")
            else:
                what = f"seq {p_key}" if p_first == p_key else f"seq {p_first}..{p_key}"
                self.rep.error(f"{what}: hash mismatch (record altered, reordered or chain "
                               "broken)")
                self.broken = True
        if ok:
            self._flush(first - 1)
        elif self.broken:
            self.span = (first if self.span is None else self.span[0], key)
        else:
            self.pending = (first, key, mac is None)

    def resynced(self, seq: int, first: int) -> None:
        """The checkpoint at `seq` (in the commit of seq `first`..) set the recomputed chain
        right: said here unless a commit before it already failed its MAC (`check` then says
        where the chain went wrong)."""
        if self.pending is not None or self.broken:
            return
        if self.good == first - 1:  # the commit before checked out: the fault is in this one
            what = f"seq {seq}" if first == seq else f"seq {first}..{seq}"
            self.rep.error(f"{what}: hash mismatch (record altered, reordered or chain broken)")
        else:
            self.rep.error(f"seq {seq}: checkpoint does not match the recomputed chain (a record "
                           "at or before it altered, reordered or the chain broken, after the "
                           "last checkpoint or MAC that checks out)")

    def finish(self) -> None:
        if self.pending is not None:
            first, key, no_mac = self.pending
            what = f"seq {key}" if first == key else f"seq {first}..{key}"
            self.rep.error(f"{what}: hash mismatch (record altered, reordered or chain broken) "
                           f"or commit {'has no MAC' if no_mac else 'MAC mismatch'} (the last "
                           "commit: no commit after it tells which)")
            self.pending = None
        self._flush(0)

    def _flush(self, upto: int) -> None:
        if self.span is not None:
            a, b = self.span
            self.rep.error(f"seq {a}..{max(b, upto)}: not verified (the chain is recomputed "
                           "from the records and after the error above no longer matches "
                           "their MACs, until a checkpoint that checks out)")
        self.broken, self.span = False, None


def _int_meta(meta: Mapping[str, str], name: str, rep: VerifyReport) -> int:
    value = meta.get(name, "")
    if not value.isdigit():
        rep.error(f"meta {name} is {value!r}, not a number")
        return 0
    return int(value)


def _macs_for(meta: Mapping[str, str], key: JournalKey | None, rep: VerifyReport
              ) -> Macs | None:
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
    return Macs(key, meta["table_id"], meta["game"], _int_meta(meta, "mac_since", rep))


def _check_since(meta: Mapping[str, str], macs: Macs | None, chain: str,
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


def _checked_acked_upto(conn: sqlite3.Connection, meta: Mapping[str, str], macs: Macs | None,
                        rep: VerifyReport, start: Checkpoint | None = None) -> int:
    """The last acknowledged outbox id. With the key only MAC'd acks count (and any other
    above `acked_at_mac`, the acks before MACs began, is an error); without it, every row.
    From a checkpoint: the acks after the one it names."""
    top = _int_meta(meta, "acked_at_mac", rep)
    if start is not None:
        top = max(top, start.acked)
    for upto, utc, mac in conn.execute(
            "SELECT upto_id, utc, mac FROM outbox_acked WHERE upto_id > ? ORDER BY upto_id",
            (0 if start is None else start.acked,)):
        if macs is None or (mac is None and upto <= top):
            top = max(top, int(upto))
        elif macs.check(mac, "ack", upto, utc):
            top = max(top, upto)
        else:
            rep.error(f"outbox ack up to message {upto} "
                      f"{'has no MAC' if mac is None else 'MAC mismatch'} (forged or altered)")
    return top


def verify_dir(state_dir: Path | str, key_file: Path | None = None,
               progress: Progress | None = None, archive_dir: Path | None = None
               ) -> VerifyReport:
    """Offline verification (`tablectl journal verify`): the chain, with the table's key (if
    one is found, `find_key`) its MACs, the high-water mark, and every segment's archive that
    should be on the table (in `archive_dir`, default STATE_DIR/archive). Creates nothing;
    never raises for a missing or damaged journal, mark, key or archive: that is an error in
    the report."""
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
    with read_only_uri(path, state_dir / LOCK_FILE) as uri:
        try:
            conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        except sqlite3.Error as exc:
            rep = VerifyReport()
            rep.error(f"cannot open {path}: {exc}")
            return rep
        try:
            rep = verify_conn(conn, key=key, progress=progress)
            if key_problem is not None:
                rep.error(key_problem)
            elif key is None and rep.macs.startswith("not checked") and key_note is not None:
                rep.macs = key_note
            with contextlib.suppress(sqlite3.Error):
                meta = read_meta(conn)
                if meta.get("schema") in KEYED_SCHEMAS:
                    _verify_mark(conn, state_dir / MARK_FILE, key, meta, rep)
                    _verify_archives(conn, archive_dir or state_dir / segments.ARCHIVE_DIR,
                                     key, meta, rep)
            return rep
        finally:
            conn.close()


def _verify_archives(conn: sqlite3.Connection, archive_dir: Path, key: JournalKey | None,
                     meta: Mapping[str, str], rep: VerifyReport) -> None:
    """Every archive that should be on the table is there and checks out (archived.py: its
    digest the one recorded, and its records chained from the segment's start to its MAC'd
    head), unless retention deleted it (a record that checks out with the key). A segment is
    archived once it closes; pruned or moved, its archive is its only copy on the table."""
    table_id, game = meta["table_id"], meta["game"]
    counts = {"whole": 0, "deleted": 0, "lost": 0}
    for st in segments.read_all(conn, key, table_id, game):
        what, text = archived.whereabouts(st, archive_dir, table_id, game)
        if text is not None:
            rep.archive_fault(text)
        elif what in counts:
            counts[what] += 1
    lost = f", {counts['lost']} lost and accepted as lost" if counts["lost"] else ""
    rep.archives = (f"{counts['whole']} whole, {len(rep.archive_faults)} missing or altered, "
                    f"{counts['deleted']} deleted by retention{lost} ({archive_dir})")


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
