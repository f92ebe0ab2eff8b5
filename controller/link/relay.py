"""The outbox relay: the journal's outbox to head office, oldest first, exactly once in effect.

Rows leave the journal only on head office's cumulative application-level ack (`ack`); a
publish whose outcome is unknown (no PUBACK, a dropped connection, no ack within `resend_s`)
is sent again; head office drops what it already applied, by (table, seq). At most
`max_inflight` messages are out unacknowledged at a time. Rows due together go as one packed
message (contract.outbox_pack) once head office's ack has said it reads packs; a resend goes
alone, so that a head office that stopped reading packs (an older one put back) still gets it
and its ack, which says nothing of packs, turns packing off.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from controller.journal import Journal
from shared.link import contract

Publish = Callable[[str, bytes], Awaitable[None]]


@dataclass
class RelayStats:
    sent: int = 0
    resent: int = 0
    acked: int = 0  # messages removed by acks
    bad_acks: int = 0  # acks beyond the last message: logged and ignored
    last_ack_upto: int = 0
    packs: int = 0  # packed messages sent (their rows count in `sent`)
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
        # Rows in one message at most: 1 until head office's ack says it reads packs (`pack`).
        self.pack = 1

    def new_connection(self) -> None:
        """Everything not acknowledged is resent on a new connection: its outcome is unknown.
        Packs wait for this connection's first ack: the head office behind it may be older."""
        self._sent.clear()
        self.pack = 1
        self.wake.set()

    def head_office_packs(self, most: int) -> None:
        """Head office's latest ack said it reads `most` rows in one message (1: singles)."""
        self.pack = max(1, min(most, self.max_inflight, contract.PACK_MAX))

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
        topic = contract.outbox_topic(self.table_id)
        pack: list[tuple[int, contract.JSON, bytes]] = []  # fresh rows due, in order

        async def send_pack() -> None:
            if len(pack) == 1:
                await publish(topic, pack[0][2])
            elif pack:
                await publish(topic, contract.dumps(
                    contract.outbox_pack(self.table_id, [body for _, body, _ in pack])))
                self.stats.packs += 1
            for msg_id, _, _ in pack:
                self.stats.sent += 1
                self._sent[msg_id] = self.clock()
            pack.clear()

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
            text = contract.dumps(body)
            if last is None and self.pack > 1 and len(text) < contract.PACK_BYTES:
                if len(pack) == self.pack or sum(len(t) for _, _, t in pack) + len(
                        text) > contract.PACK_BYTES:
                    await send_pack()
                pack.append((msg.id, body, text))
                continue
            await send_pack()  # the rows before this one first: in order
            await publish(topic, text)
            if last is None:
                self.stats.sent += 1
            else:
                self.stats.resent += 1
            self._sent[msg.id] = self.clock()
        await send_pack()

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
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
            # (gh-86296) and the relay would go on after the daemon asked it to stop.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.resend_s / 2):
                    await self.wake.wait()
