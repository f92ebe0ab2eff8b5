"""The tables head office trusts: enrolment, which tables are live on a pool, and in a batch a
table's birth and status, and the checks that its outbox and journal never went backwards."""

from __future__ import annotations

import json
from typing import Any

from headoffice.db import Database
from headoffice.hits import HitPolicy
from headoffice.ledger.common import (
    BatchResult,
    _count,
    _Table,
    force_bool,
    log,
)
from shared.link import contract


class LedgerTables:
    """Ledger: enrolment and liveness."""

    db: Database
    clock: Any
    policy: HitPolicy
    shard: str

    def enrol(self, tables: dict[str, str | None]) -> None:
        """The tables head office accepts messages from (headoffice.toml [[tables]]): these
        and no others. A table not listed is refused, never created on the fly; one listed
        with a pool may name no other pool."""
        for attempt in range(1, 4):  # as apply_batch: PostgreSQL may abort a transaction
            try:
                return self._enrol(tables)
            except Exception as exc:
                if attempt == 3 or not self.db.is_retryable(exc):
                    raise
                log.warning("ledger transaction aborted (%s), enrolling again", exc)

    def _enrol(self, tables: dict[str, str | None]) -> None:
        with self.db.transaction():
            self.db.executemany(
                "INSERT INTO tables (id, last_seq, state) VALUES (?, 0, 'unknown')"
                " ON CONFLICT (id) DO NOTHING", [(t,) for t in sorted(tables)])
            # Only the rows that change are written, in id order (as apply_batch locks them):
            # workers starting while others apply messages do not deadlock with them.
            changes = []
            for row in self.db.execute("SELECT id, enrolled, enrolled_pool FROM tables"
                                       " ORDER BY id"):
                want = (row["id"] in tables, tables.get(row["id"]))
                if (bool(row["enrolled"]), row["enrolled_pool"]) != want:
                    changes.append((force_bool(want[0]), want[1], row["id"]))
            self.db.executemany("UPDATE tables SET enrolled = ?, enrolled_pool = ? WHERE id = ?",
                                changes)

    def live_tables(self, pool_id: str, window_s: float) -> list[str]:
        rows = self.db.execute(
            "SELECT id FROM tables WHERE pool_id = ? AND state = 'online'"
            " AND last_seen_epoch >= ? ORDER BY id",
            (pool_id, self.clock() - window_s),
        )
        return [r["id"] for r in rows]


class BatchTables:
    """_Batch: births, statuses, and resends that must match what was ledgered."""

    db: Database
    ledger: Any  # the Ledger
    result: BatchResult
    tables: dict[str, _Table]
    hits: list[tuple[Any, ...]]
    messages: list[tuple[Any, ...]]
    rounds: list[tuple[Any, ...]]
    utc: str

    def _same_as_ledgered(self, t: _Table, body: dict[str, Any]) -> None:
        """A message at or below the ledgered sequence is a resend, and must be the same
        message: different content means the table's outbox went backwards (journal lost or
        rewritten) or forked. Alarmed, never applied; the ack still says what we have."""
        row = self.db.one("SELECT body FROM messages WHERE table_id = ? AND seq = ?",
                          (t.id, body["seq"]))
        if row is None:
            return
        old = json.loads(row["body"])
        fields = ["type", "journal_seq", "payload"]
        if "journal_hash" in old and "journal_hash" in body:
            fields.append("journal_hash")
        differ = [f for f in fields if old.get(f) != body.get(f)]
        if differ:
            text = (f"table {t.id}: message seq {body['seq']} differs from the one ledgered"
                    f" ({', '.join(differ)}): its outbox went backwards or forked (ledgered up"
                    f" to seq {t.last_seq}, journal record {t.journal_seq})")
            self.result.forks.append(text)
            self.ledger.alarm(text, None, t.id, kind="chain_mismatch")

    def birth(self, table_id: str, body: dict[str, Any]) -> None:
        t = self.enrolled(table_id)
        if t is None:
            return
        self._birth_continues(t, body)
        pool_id = body.get("pool_id")
        if (isinstance(pool_id, str) and contract.POOL_ID.fullmatch(pool_id)
                and t.enrolled_pool in (None, pool_id)):
            t.pool_id = pool_id
        self.db.execute(
            "UPDATE tables SET state = 'online', last_seen_utc = ?, last_seen_epoch = ?,"
            " birth = ?, pool_id = ? WHERE id = ?",
            (self.utc, self.ledger.clock(), json.dumps(body, sort_keys=True), t.pool_id,
             table_id),
        )
        self.ledger.clear_alarm("table_offline", None, table_id)
        self._in_service(table_id, body)
        # The table starts again: tell it where it stands, and answer any hit it still shows
        # PENDING that the ledger has already awarded (the answer may have been lost).
        self.result.acks[table_id] = t.last_seq
        self.result.birth_rounds[table_id] = self._last_round(table_id)
        for hit in body.get("pending_hits") or []:
            award = self.ledger.award_for(table_id, hit["round"])
            if award is not None:
                self.result.awards.append((table_id, award))
            else:
                pending = next((h for h in self.hits if h[2] == table_id and h[3] == hit["round"]),
                               None)
                if pending is not None:
                    self.result.awards.append((table_id, json.loads(pending[10])))

    def _last_round(self, table_id: str) -> int:
        """The last round number ledgered for the table (0: none): a round's result, or an
        increment, hit or cancellation of a round still open. Read by seq, newest first (round
        numbers never go back along a table's messages; the primary keys are by seq)."""
        last = 0
        for sql in ("SELECT round FROM messages WHERE table_id = ? AND round IS NOT NULL"
                    " ORDER BY seq DESC LIMIT 1",
                    "SELECT round FROM rounds WHERE table_id = ? ORDER BY seq DESC LIMIT 1"):
            row = self.db.one(sql, (table_id,))
            if row is not None and row["round"] is not None:
                last = max(last, int(row["round"]))
        for m in self.messages:  # this batch's, not yet written
            if m[0] == table_id and isinstance(m[4], int):
                last = max(last, m[4])
        for r in self.rounds:
            if r[0] == table_id:
                last = max(last, int(r[1]))
        return last

    def _birth_continues(self, t: _Table, body: dict[str, Any]) -> None:
        """A table that starts again must be where head office left it, or further: its
        journal at or past the last record ledgered, its outbox at or past the last message."""
        journal_seq = body.get("journal_seq")
        outbox = body.get("outbox") if isinstance(body.get("outbox"), dict) else {}
        acked, pending = outbox.get("acked_upto"), outbox.get("pending")
        found = []
        if _count(journal_seq) and journal_seq < t.journal_seq:
            found.append(f"journal at record {journal_seq}, head office has ledgered a message"
                         f" from record {t.journal_seq}")
        if _count(acked) and _count(pending) and acked + pending < t.last_seq:
            found.append(f"outbox up to {acked + pending}, head office has ledgered up to"
                         f" {t.last_seq}")
        if found:
            text = f"table {t.id} started behind head office: {'; '.join(found)}"
            self.result.forks.append(text)
            self.ledger.alarm(text, None, t.id, kind="table_behind")

    def _in_service(self, table_id: str, body: dict[str, Any]) -> None:
        """A birth or status says whether the table is in service (`in_service`, and why not:
        `out_of_service`): an alarm while it is not. A table that does not say (older, or
        the broker's will) changes nothing."""
        if not isinstance(body.get("in_service"), bool):
            return
        if body["in_service"] is False:
            why = body.get("out_of_service")
            self.ledger.alarm(f"table {table_id} is out of service"
                              f"{': ' + why[:200] if isinstance(why, str) and why else ''}",
                              None, table_id, kind="table_out_of_service")
        else:
            self.ledger.clear_alarm("table_out_of_service", None, table_id)

    def status(self, table_id: str, body: dict[str, Any]) -> None:
        if self.enrolled(table_id) is None:
            return
        self.db.execute(
            "UPDATE tables SET state = ?, last_seen_utc = ?, last_seen_epoch = ? WHERE id = ?",
            (body["state"], self.utc, self.ledger.clock(), table_id),
        )
        self._in_service(table_id, body)
        # The table's own word, or its broker will when the connection died.
        if body["state"] == "offline":
            self.ledger.alarm(f"table {table_id} is offline (its status at {self.utc})", None,
                              table_id, kind="table_offline")
        else:
            self.ledger.clear_alarm("table_offline", None, table_id)

