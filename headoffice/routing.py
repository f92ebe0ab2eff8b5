"""Which worker reads which table's outbox: partitions owned by one worker at a time.

Mosquitto's shared subscription hands a table's consecutive messages to the workers in turn
(round robin), so with several workers every table's row was wanted by all of them at once:
they waited on each other's row locks, and half of each table's messages arrived ahead of
their turn and were parked (issue 17: two PostgreSQL workers 0.33-0.91x one). Instead, each
enrolled table falls in one of `PARTITIONS` partitions (a stable hash of its id), each
partition is leased to one worker in the ledger's database, and a worker subscribes to the
outbox topics of the tables in the partitions it holds: exact topics, no shared
subscription, so a table's messages reach one worker, in order. Tables change nothing (same
topics, same contract). Births, statuses and archived segments, a few per table per day,
stay on the shared subscription (contract.HO_SHARED_SUBSCRIPTIONS): every worker can apply
every table's messages, so they need no routing, and a table that is not enrolled is still
heard there.

Ownership is for speed only; money safety does not rest on it. Exactly once per (table, seq),
order and the fork checks are decided under the table's row in the ledger as before
(headoffice/ledger/batch.py), so two workers reading one table for a moment (a handover, a
worker that stalled past its lease) apply nothing twice. A message published while no
worker reads its table (a dead worker's partitions until its lease runs out) is not lost:
the table's relay sends whatever is not acknowledged again after `resend_s`.

Each claim (every third of the lease) renews the worker's leases, counts the live workers
(heard within a lease) and moves toward a fair share, ceil(PARTITIONS / live): a worker with
more releases the excess, one with fewer takes free or expired partitions. A worker keeps
reading a partition it released until another worker has taken it, so a planned handover
overlaps instead of leaving a gap.
"""

from __future__ import annotations

import logging
import math
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from headoffice.db import Database
from shared.errors import InputError

PARTITIONS = 64  # a fixed number: changing it moves tables, which is safe (see above) but slow
log = logging.getLogger("tablectl.headoffice")


def partition_of(table: str) -> int:
    """The table's partition: the same on every worker and every start (CRC-32, not hash())."""
    return zlib.crc32(table.encode()) % PARTITIONS


@dataclass(frozen=True)
class Claim:
    owned: frozenset[int]  # the partitions this worker holds now
    owners: dict[int, str | None]  # every partition's holder (None: free or its lease ran out)


class Routing:
    """One worker's leases on the ledger's database (`ho_partitions`, `ho_workers`, db.py)."""

    def __init__(self, db: Database, worker: str, lease_s: float,
                 clock: Callable[[], float] = time.time) -> None:
        if not worker or len(worker) > 256:
            raise InputError(f"worker name {worker[:40]!r}: 1 to 256 characters")
        if not 0.1 <= lease_s <= 3600:
            raise InputError(f"lease_s {lease_s}: 0.1 .. 3600")
        self.db = db
        self.worker = worker
        self.lease_s = lease_s
        self.clock = clock

    def claim(self) -> Claim:
        for attempt in range(1, 4):  # PostgreSQL may abort a transaction (deadlock)
            try:
                return self._claim()
            except Exception as exc:
                if attempt == 3 or not self.db.is_retryable(exc):
                    raise
                log.warning("partition claim aborted (%s), claiming again", exc)
        raise AssertionError("unreachable")

    def _claim(self) -> Claim:
        db, me, now = self.db, self.worker, self.clock()
        with db.transaction():
            db.execute("INSERT INTO ho_workers (worker, seen_epoch) VALUES (?, ?)"
                       " ON CONFLICT (worker) DO UPDATE SET seen_epoch = excluded.seen_epoch",
                       (me, now))
            db.execute("DELETE FROM ho_workers WHERE seen_epoch < ?", (now - 100 * self.lease_s,))
            live = db.one("SELECT COUNT(*) AS n FROM ho_workers WHERE seen_epoch >= ?",
                          (now - self.lease_s,))
            fair = math.ceil(PARTITIONS / max(1, int(live["n"]) if live else 1))
            # Every partition row locked, in order: claims run one at a time (once a second
            # per worker: nothing to contend with the ledger's own rows).
            rows = db.execute("SELECT part, owner, expires_epoch FROM ho_partitions"
                              f" ORDER BY part{db.for_update}")
            if len(rows) < PARTITIONS:
                db.executemany("INSERT INTO ho_partitions (part, owner, expires_epoch)"
                               " VALUES (?, NULL, 0) ON CONFLICT (part) DO NOTHING",
                               [(p,) for p in range(PARTITIONS)])
                rows = db.execute("SELECT part, owner, expires_epoch FROM ho_partitions"
                                  f" ORDER BY part{db.for_update}")
            owners: dict[int, str | None] = {}
            for r in rows:
                held = r["owner"] is not None and (r["owner"] == me
                                                   or float(r["expires_epoch"]) >= now)
                owners[int(r["part"])] = r["owner"] if held else None
            mine = [p for p, o in owners.items() if o == me]
            free = [p for p, o in owners.items() if o is None]
            released = mine[fair:]
            mine = mine[:fair] + free[:max(0, fair - len(mine))]
            for p in released:
                owners[p] = None
            for p in mine:
                owners[p] = me
            db.executemany("UPDATE ho_partitions SET owner = ?, expires_epoch = ? WHERE part = ?",
                           [(me, now + self.lease_s, p) for p in mine]
                           + [(None, 0, p) for p in released])
        return Claim(frozenset(mine), owners)
