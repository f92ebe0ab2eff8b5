"""The outbox relay: the journal's outbox to head office, oldest first, exactly once in effect.

Rows leave the journal only on head office's cumulative application-level ack (`ack`); a
publish whose outcome is unknown (no PUBACK, a dropped connection, no ack within `resend_s`)
is sent again; head office drops what it already applied, by (table, seq). At most
`max_inflight` messages are out unacknowledged at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from controller.journal import Journal
from controller.link import contract

Publish = Callable[[str, bytes], Awaitable[None]]


@dataclass
class RelayStats:
    sent: int = 0
    resent: int = 0
    acked: int = 0  # messages removed by acks
    bad_acks: int = 0  # acks beyond the last message: logged and ignored
    last_ack_upto: int = 0
    extra: dict[str, int] = field(default_factory=dict)


class OutboxRelay:
    def __init__(
        self,
        journal: Journal,
        table_id: str,
        *,
        max_inflight: int = 32,
        resend_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.journal = journal
        self.table_id = table_id
        self.max_inflight = max_inflight
        self.resend_s = resend_s
        self.clock = clock
        self.stats = RelayStats()
        self.wake = asyncio.Event()
        self._sent: dict[int, float] = {}  # outbox id -> when last sent, this connection
        self._hashes: dict[int, str | None] = {}  # outbox id -> its journal record's hash

    def new_connection(self) -> None:
        """Everything not acknowledged is resent on a new connection: its outcome is unknown."""
        self._sent.clear()
        self.wake.set()

    def ack(self, upto: int) -> int:
        """Head office applied every message <= upto. Returns how many rows went; ValueError
        (from the journal) for an ack beyond the last message."""
        removed = self.journal.ack_outbox(upto)
        self.stats.acked += removed
        self.stats.last_ack_upto = max(self.stats.last_ack_upto, upto)
        for seq in [s for s in self._sent if s <= upto]:
            del self._sent[seq]
        for seq in [s for s in self._hashes if s <= upto]:
            del self._hashes[seq]
        if removed:
            self.wake.set()  # room for more in flight
        return removed

    def pending(self) -> int:
        return int(self.journal.summary().get("outbox_pending", 0))

    async def pump(self, publish: Publish) -> None:
        """Send what is due now: the oldest `max_inflight` unacknowledged messages that were
        never sent on this connection, or were sent longer than `resend_s` ago."""
        now = self.clock()
        for msg in self.journal.pending_outbox(limit=self.max_inflight):
            last = self._sent.get(msg.id)
            if last is not None and now - last < self.resend_s:
                continue
            if msg.id not in self._hashes:
                self._hashes[msg.id] = self._record_hash(msg.seq)
            body = contract.outbox_message(
                self.table_id, msg.id, msg.seq, msg.type, msg.utc, msg.payload,
                self._hashes[msg.id],
            )
            await publish(contract.outbox_topic(self.table_id), contract.dumps(body))
            if last is None:
                self.stats.sent += 1
            else:
                self.stats.resent += 1
            self._sent[msg.id] = self.clock()

    def _record_hash(self, journal_seq: int) -> str | None:
        """The chain hash of the journal record that wrote a message: head office keeps the
        latest as our chain head, for an auditor to compare with this journal."""
        event = next(self.journal.iter_events(journal_seq, journal_seq), None)
        if event is None or not contract.JOURNAL_HASH.fullmatch(event.hash):
            return None
        return event.hash

    async def run(self, publish: Publish) -> None:
        """Pump whenever woken (new rows, an ack, a new connection) and at least every
        resend_s / 2 (resends); LinkError from `publish` ends it."""
        while True:
            self.wake.clear()
            await self.pump(publish)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), timeout=self.resend_s / 2)
