"""Reading records back: by seq, by round, the tail. Records are found by bisection on the
`commits` primary key over columns that never decrease along the chain (`round`, `rec`,
`out`), so no index costs every append a page write."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from controller.journal.anchor import ChainHashes
from controller.journal.chain import chain_hash, genesis_hash
from controller.journal.codec import Codec, parse_body
from controller.journal.errors import JournalError
from controller.journal.records import RoundRecord, StoredEvent, stored_event, stored_v1
from controller.journal.schema import INDEX_COLUMNS, read_meta


class Reader:
    """The records of one open journal, read under the writer's mutex. `last_seq` tells how far
    the chain goes now (appends move it)."""

    def __init__(self, path: Path, conn: sqlite3.Connection, mutex: threading.RLock,
                 table_id: str, game: str, last_seq: Callable[[], int]) -> None:
        self.path = path
        self._conn = conn
        self._mutex = mutex
        self._last_seq = last_seq
        meta = read_meta(conn)
        self.codec = Codec(meta["deflate_dict"])
        # The chain hash after a commit: stored in rows before schema 4, else recomputed.
        self.hashes = ChainHashes(conn, meta, self.codec)
        # Records up to this seq are schema-1 rows (`events`); the chain goes on in `commits`.
        self.v1_last_seq = int(meta["v1_last_seq"])
        row = conn.execute("SELECT hash FROM events WHERE seq = ?",
                           (self.v1_last_seq,)).fetchone()
        self._v1_last_hash = genesis_hash(table_id, game) if row is None else row[0]
        # Records up to this seq were pruned (retention.py); the chain hash there.
        self.pruned: tuple[int, str] = (0, "")

    def iter_events(self, start_seq: int = 1, end_seq: int | None = None) -> Iterator[StoredEvent]:
        """Events from start_seq to end_seq (inclusive), in order (e.g. a full audit replay).

        Read in pages by key, so no statement stays open between yields (appends may run)."""
        nxt = max(1, start_seq, self.pruned[0] + 1)
        prev: tuple[int, str] | None = None  # the commit before the next one read: (seq, hash)
        while True:
            with self._mutex:
                end = self._last_seq() if end_seq is None else end_seq
                if nxt > end:
                    return
                if nxt <= self.v1_last_seq:
                    rows = self._conn.execute(
                        "SELECT seq, utc, mono_ms, kind, round, data, fx, hash FROM events "
                        "WHERE seq BETWEEN ? AND ? ORDER BY seq LIMIT 256",
                        (nxt, min(end, self.v1_last_seq))).fetchall()
                    page = [stored_v1(r) for r in rows]
                else:
                    if prev is None:
                        prev = self.commit_before(nxt)
                    rows = self._conn.execute(
                        "SELECT seq, body FROM commits WHERE seq >= ? ORDER BY seq "
                        "LIMIT 32", (nxt,)).fetchall()
                    page = []
                    for key, body in rows:
                        events = self.decode(key, body, prev)
                        page += events
                        prev = (key, events[-1].hash)
                        if key >= end:
                            break
                    page = [e for e in page if nxt <= e.seq <= end]
            if not page:
                return
            yield from page
            nxt = page[-1].seq + 1

    def commit_before(self, seq: int) -> tuple[int, str]:
        """(seq, hash) where the chain stands before the commit holding `seq`."""
        row = self._conn.execute("SELECT seq FROM commits WHERE seq < ? ORDER BY seq "
                                 "DESC LIMIT 1", (seq,)).fetchone()
        if row is not None and row[0] >= max(self.v1_last_seq, self.pruned[0]):
            try:
                return row[0], self.hashes.after(row[0])
            except ValueError as exc:
                raise JournalError(f"journal {self.path}: the chain hash after seq {row[0]} "
                                   f"cannot be recomputed: {exc}") from exc
        if self.pruned[0] > self.v1_last_seq:
            return self.pruned
        return self.v1_last_seq, self._v1_last_hash

    def decode(self, key: int, body: bytes, prev: tuple[int, str]) -> list[StoredEvent]:
        """The records of one commit, given where the chain stood before it."""
        try:
            records = parse_body(self.codec.unpack(body))
        except ValueError as exc:
            raise JournalError(f"journal {self.path}: commit at seq {key} unreadable: {exc}"
                               ) from exc
        first, h = key - len(records) + 1, prev[1]
        # Normally the commit starts right after `prev`. After a prune or a move, `prev` is the
        # checkpoint at the segment's end, which may fall inside a commit (a batch whose first
        # event closed the segment): its records up to there were chained before it.
        if first > prev[0] + 1 or key <= prev[0]:
            raise JournalError(f"journal {self.path}: commit at seq {key} holds "
                               f"{len(records)} records after seq {prev[0]}")
        out = []
        for i, (text, (utc, mono, kind, rnd, data, fx)) in enumerate(records):
            if first + i <= prev[0]:
                continue
            h = chain_hash(h, first + i, text)
            out.append(stored_event(first + i, utc, mono, kind, rnd, data, fx, h))
        return out

    def commit_events(self, key: int) -> list[StoredEvent]:
        with self._mutex:
            body = self._conn.execute("SELECT body FROM commits WHERE seq = ?",
                                      (key,)).fetchone()[0]
            return self.decode(key, body, self.commit_before(key))

    def first_commit_where(self, column: str, value: int) -> int | None:
        """The first commit whose `column` (non-decreasing along the chain) is >= value, by
        bisection on the primary key: no index that every append would pay for."""
        assert column in INDEX_COLUMNS
        with self._mutex:
            # After the pruned (or moved) seq: the commit ending there may stay in the file.
            lo, hi = max(self.v1_last_seq, self.pruned[0]) + 1, self._last_seq() + 1
            while lo < hi:
                mid = (lo + hi) // 2
                row = self._conn.execute(f"SELECT {column} FROM commits WHERE seq >= ? "
                                         "ORDER BY seq LIMIT 1", (mid,)).fetchone()
                if row is not None and row[0] >= value:
                    hi = mid
                else:
                    lo = mid + 1
            if lo > self._last_seq():
                return None
            row = self._conn.execute("SELECT seq FROM commits WHERE seq >= ? ORDER BY seq "
                                     "LIMIT 1", (lo,)).fetchone()
            return None if row is None else int(row[0])

    def tail(self, n: int = 20) -> list[StoredEvent]:
        """The last n events, oldest first."""
        return list(self.iter_events(max(1, self._last_seq() - n + 1)))

    def round_record(self, number: int) -> RoundRecord | None:
        with self._mutex:
            row = self._conn.execute("SELECT seq FROM rounds WHERE number = ?",
                                     (number,)).fetchone()  # a schema-1 record
        if row is not None:
            events = list(self.iter_events(row[0], row[0]))
        else:
            key = self.first_commit_where("rec", number) if number >= 1 else None
            events = [] if key is None else self.commit_events(key)
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
            c, v1_last = self._conn, self.v1_last_seq
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
        key = self.first_commit_where("round", number)
        if key is None:
            return self._last_seq() + 1
        return next(e.seq for e in self.commit_events(key) if e.round >= number)
