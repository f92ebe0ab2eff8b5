"""The outbox towards head office: messages are journaled with the event that produced them
(the chain is the queue), numbered contiguously from 1; head office acknowledges them
cumulatively, and each ack is a MAC'd row (a forged ack would hide unsent messages)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

from controller.journal.errors import AckBeyondJournal, EntryRefused
from controller.journal.lock import WriteGuard
from controller.journal.read import Reader
from controller.journal.records import OutboxMessage, parse_fx
from controller.journal.schema import utc_now

# An ack gets a commit of its own at most this often; one within that time of the last written
# is held and goes into the next commit (`Journal.append_batch`, or a later ack, or the close).
# Each ack its own commit was ~1.75 commits a round beside the round's own (~1-2 KB of WAL
# each, issue 16). Held and lost (a crash), the messages are sent again and head office, which
# has them, acknowledges them again: the same as a lost unsynced ack.
ACK_WRITE_EVERY_S = 10.0


class Outbox:
    """Which messages are pending: every id from `acked_upto + 1` to `next_id - 1`. The store
    moves `next_id` on as it commits messages; `ack` moves `acked_upto` (and writes it, or
    holds it for the next commit: ACK_WRITE_EVERY_S)."""

    def __init__(self, conn: sqlite3.Connection, mutex: threading.RLock, guard: WriteGuard,
                 reader: Reader, mac: Callable[..., bytes], next_id: int,
                 acked_upto: int) -> None:
        self._conn = conn
        self._mutex = mutex
        self._guard = guard
        self._reader = reader
        self._mac = mac
        self.next_id = next_id
        self.acked_upto = acked_upto
        self._held: tuple[int, str] | None = None  # (upto_id, utc) acked, not yet written
        self._written_at = -ACK_WRITE_EVERY_S  # monotonic time of the last ack written

    def ack(self, upto_id: int, utc: str | None = None) -> int:
        """Head office acknowledged every message up to `upto_id` (cumulative): drop them from
        the outbox. Returns how many were removed; an old or repeated ack removes nothing.

        Not fsync'd (synchronous=NORMAL for this transaction only): a lost ack means a resend
        that head office ignores, and the next event's fsync makes it durable anyway. Within
        ACK_WRITE_EVERY_S of the last ack written, held for the next commit instead."""
        with self._mutex:
            self._guard.check()
            if type(upto_id) is not int:
                raise EntryRefused(f"ack id must be an int, got {upto_id!r}")
            if upto_id <= self.acked_upto:
                return 0
            if upto_id >= self.next_id:
                raise AckBeyondJournal(upto_id, self.next_id - 1)
            n = upto_id - self.acked_upto
            self.acked_upto, self._held = upto_id, (upto_id, utc or utc_now())
            if time.monotonic() - self._written_at >= ACK_WRITE_EVERY_S:
                self.write_held()
            return n

    def write_held(self) -> None:
        """The held ack, in a commit of its own (not fsync'd)."""
        with self._mutex:
            if self._held is not None:
                with self._guard.transaction(f"ack of outbox up to {self._held[0]}",
                                             fsync=False) as c:
                    held = self.insert_held(c)
                self.held_written(held)

    def insert_held(self, c: sqlite3.Connection) -> tuple[int, str] | None:
        """Write the held ack inside the caller's transaction; `held_written` once committed."""
        held = self._held
        if held is not None:
            upto_id, utc = held
            # Schema-1 messages have rows in `outbox`; later ones are pending by id alone.
            c.execute("DELETE FROM outbox WHERE id <= ?", (upto_id,))
            c.execute("INSERT INTO outbox_acked(upto_id, utc, mac) VALUES (?,?,?)",
                      (upto_id, utc, self._mac("ack", upto_id, utc)))
        return held

    def held_written(self, held: tuple[int, str] | None) -> None:
        if held is not None and self._held == held:
            self._held, self._written_at = None, time.monotonic()

    def pending(self, limit: int = 100) -> list[OutboxMessage]:
        """Messages not yet acknowledged by head office, oldest first."""
        out: list[OutboxMessage] = []
        with self._mutex:
            # Schema-1 messages: the `outbox` rows (pending ones only).
            rows = self._conn.execute(
                "SELECT o.id, e.seq, e.utc, e.fx FROM outbox o JOIN events e ON e.seq = o.seq "
                "ORDER BY o.id LIMIT ?", (limit,)).fetchall()
            for oid, seq, utc, fx in rows:
                for mid, mtype, payload in parse_fx(fx)[0]:
                    if mid == oid:
                        out.append(OutboxMessage(mid, seq, mtype, payload, utc))
            start = max(self.acked_upto, out[-1].id if out else 0) + 1
            if len(out) >= limit or start >= self.next_id:
                return out[:limit]
            key = self._reader.first_commit_where("out", start)
            if key is None:
                return out
            first = self._reader.commit_before(key)[0] + 1
        for ev in self._reader.iter_events(first):
            out += [m for m in ev.outbox if m.id >= start]
            if len(out) >= limit:
                break
        return out[:limit]

    def summary(self) -> dict[str, Any]:
        return {"outbox_pending": self.next_id - 1 - self.acked_upto,
                "outbox_acked_upto": self.acked_upto}
