"""The durable ledger: every table message applied exactly once, in each table's order.

`apply_batch` takes parsed messages (outbox, birth, status) and applies them in one write
transaction; nothing is acknowledged to a table before that transaction commits. Per table,
messages are applied in sequence order: a duplicate (seq already applied) is dropped, a message
ahead of a gap is parked in the database until the gap fills (by this worker or another one:
the table's row is the lock), so redeliveries, reorderings and several workers sharing the
subscription never apply anything twice. Hits on a pool are serialised by the pool's row in
arrival order. Contributions do not take the pool's row: each writer adds them to its own
share of the pool (`pool_shares`, db.py), so workers contribute to one pool side by side, and
whatever else changes a pool folds the shares into its row first. In every transaction the
pool's books are checked (`Pool.check`); a violation stops that pool, loudly, and nothing more
is applied to it until an operator resumes it.

The Ledger is assembled from one class per concern: tables.py (enrolment, trust), params.py
(pools and parameters), hits.py (held hits), queries.py (reports), alarms.py (the alarms);
batch.py applies a batch.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from headoffice.db import Database, open_database
from headoffice.hits import HitPolicy
from headoffice.ledger import cards
from headoffice.ledger.alarms import LedgerAlarms
from headoffice.ledger.batch import _Batch
from headoffice.ledger.common import BatchResult, Incoming, _Exclusive, _pool_ids, _shard_name, log
from headoffice.ledger.hits import LedgerHits
from headoffice.ledger.params import LedgerPools
from headoffice.ledger.queries import LedgerQueries
from headoffice.ledger.tables import LedgerTables
from shared.link import contract
from shared.link.outbox import OutboxType


class Ledger(LedgerTables, LedgerPools, LedgerHits, LedgerQueries, LedgerAlarms):
    def __init__(self, db: Database, *, clock: Any = time.time,
                 policy: HitPolicy | None = None, shard: str | None = None) -> None:
        self.db = db
        self.clock = clock
        self.policy = policy or HitPolicy()
        self.shard = shard or _shard_name()

    @classmethod
    def open(cls, url: str, policy: HitPolicy | None = None) -> Ledger:
        return cls(open_database(url), policy=policy)

    def close(self) -> None:
        self.db.close()

    def apply_batch(self, items: Sequence[Incoming]) -> BatchResult:
        """Apply the messages, each table's in order; acknowledge nothing before this returns.

        On PostgreSQL the first transaction takes only the tables no other worker holds
        (SKIP LOCKED) and the rest follow in a second one that waits for them: with a shared
        subscription every worker gets messages of every table, and waiting for all of
        them would make the workers take turns."""
        result = BatchResult()
        todo, skip = list(items), self.db.dialect == "postgresql"
        # The pools this batch must lock FOR UPDATE: its hits' and cancellations'.
        exclusive = _pool_ids(items, (OutboxType.JACKPOT_HIT, OutboxType.JACKPOT_CANCEL))
        attempt = 0
        while todo:
            try:
                part, later = self._apply_batch(todo, skip, exclusive)
            except _Exclusive as exc:  # rolled back: again, holding the pool's row
                assert exc.pool_id not in exclusive, f"pool {exc.pool_id} already exclusive"
                exclusive.add(exc.pool_id)
                continue
            except Exception as exc:
                # PostgreSQL may abort a transaction (deadlock, serialisation): nothing of it
                # was written or acknowledged, so it is simply applied again.
                attempt += 1
                if attempt == 3 or not self.db.is_retryable(exc):
                    raise
                log.warning("ledger transaction aborted (%s), retrying the batch", exc)
                continue
            result.merge(part)
            todo, skip = later, False
        return result

    def _apply_batch(self, items: Sequence[Incoming], skip: bool,
                     exclusive: set[str]) -> tuple[BatchResult, list[Incoming]]:
        """One transaction: the messages of the tables it could lock (all, unless `skip`),
        and the messages left for the next one."""
        result = BatchResult()
        with self.db.transaction():
            batch = _Batch(self, result, exclusive)
            # Every table row, then every pool row, loaded (and locked on PostgreSQL) in one
            # global order, so two workers whose batches name the same rows in other orders
            # cannot deadlock; a few queries per batch, not a few per table.
            items, later, pool_ids = batch.preload(items, skip)
            for pool_id in sorted(pool_ids):
                batch.pool(pool_id)
            # The Player Cards the batch settles or restricts, in one order (cards.py).
            cards.lock_cards(self.db, _card_ids(items))
            for item in items:
                if item.kind == "outbox":
                    batch.outbox(item.table, item.body, item.text)
                elif item.kind == "birth":
                    batch.birth(item.table, item.body)
                elif item.kind == "status":
                    batch.status(item.table, item.body)
            batch.flush()
        if batch.shared_changed:
            # Other workers' shares committed meanwhile: the value published is the pool as
            # committed (one snapshot), so one version never shows two amounts.
            for pool in self._read_pools(
                    f" WHERE p.id IN ({', '.join('?' * len(batch.shared_changed))})",
                    sorted(batch.shared_changed)):
                result.pools[pool.id] = pool.value()
        return result, later


def _card_ids(items: Sequence[Incoming]) -> set[str]:
    return {i.body["payload"]["card"] for i in items
            if i.kind == "outbox" and i.body.get("type") in contract.CARD_TYPES
            and isinstance(i.body.get("payload"), dict)
            and isinstance(i.body["payload"].get("card"), str)}
