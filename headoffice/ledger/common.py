"""What the ledger's modules share: the messages in, the result out, the errors that steer a
batch, and the small helpers of the books (exact parts, shares, payouts)."""

from __future__ import annotations

import itertools
import json
import logging
import os
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from headoffice.pools import Pool, PoolValue
from shared.clock import utc_now
from shared.errors import TablectlError
from shared.link.outbox import OutboxType

__all__ = ["utc_now"]  # one name to patch in tests: every module calls common.utc_now()

LAST_HITS = 25
LAST_ALARMS = 25
log = logging.getLogger("tablectl.headoffice")


class LedgerError(TablectlError):
    """An operator request the ledger refuses (the text says why)."""


@dataclass
class Incoming:
    kind: str  # "outbox" | "birth" | "status"
    table: str
    body: dict[str, Any]
    # The message as received (valid JSON, `body` is what it parsed to): stored as the audit
    # body as it is, where encoding `body` again cost ~11 µs a message. None: encoded.
    text: str | None = None


# The audit body of a message that came without its text: sorted keys, one encoder for all
# (json.dumps with options makes a new one per call).
encode_body = json.JSONEncoder(sort_keys=True).encode


@dataclass
class BatchResult:
    acks: dict[str, int] = field(default_factory=dict)  # table -> cumulative ack
    # table -> the last round ledgered, in the answer to its birth (the ack's `round`)
    birth_rounds: dict[str, int] = field(default_factory=dict)
    awards: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (table, award msg)
    pools: dict[str, PoolValue] = field(default_factory=dict)  # the values to publish
    applied: int = 0
    duplicates: int = 0
    parked: int = 0
    refused: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # not applied, not acked: resent later
    stopped: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # tables not enrolled: refused, not acked
    held_hits: list[str] = field(default_factory=list)  # hits held for an operator (PENDING)
    forks: list[str] = field(default_factory=list)  # sequence/chain anomalies, alarmed
    # jackpot_verified from a table (UTH rule 15): (hold_no, table, user) recorded against the held
    # hit (never a release); refused ones (not held, implausible, another table's, verified
    # already) are alarmed and counted here.
    verified: list[tuple[int, str, str]] = field(default_factory=list)
    verify_refused: list[str] = field(default_factory=list)
    # table/seq: not the pool's qualifying wager (UTH 15.2.5.3)
    wager_refused: list[str] = field(default_factory=list)

    def merge(self, other: BatchResult) -> None:
        """Add the result of a later transaction of the same batch (other tables)."""
        self.acks.update(other.acks)
        self.birth_rounds.update(other.birth_rounds)
        for pool_id, value in other.pools.items():
            if pool_id not in self.pools or value.version >= self.pools[pool_id].version:
                self.pools[pool_id] = value
        self.applied += other.applied
        self.duplicates += other.duplicates
        self.parked += other.parked
        for name in ("awards", "refused", "held", "stopped", "unknown", "held_hits", "forks",
                     "verified", "verify_refused", "wager_refused"):
            getattr(self, name).extend(getattr(other, name))


@dataclass
class _Table:
    id: str
    last_seq: int
    pool_id: str | None
    has_parked: bool
    enrolled: bool = True
    enrolled_pool: str | None = None  # the only pool its money messages may name
    journal_seq: int = 0  # the journal record of the last message ledgered
    chain_hash: str | None = None  # that record's chain hash, when the table sent it
    dirty: bool = False
    blocked: bool = False  # a message was held: nothing after it this batch


# The three signals below never leave the ledger (a batch's control flow); they are under the
# one root like every exception of ours (tests/test_error_root.py).
class _Hold(TablectlError):
    """Not applied now, not acknowledged: the table sends it again."""


class _Exclusive(TablectlError):
    """This batch needs the pool's row to itself (a hit, a cancellation, an unbalanced
    pool): the transaction is rolled back and run again with the pool locked FOR UPDATE."""

    def __init__(self, pool_id: str) -> None:
        super().__init__(pool_id)
        self.pool_id = pool_id


_SHARDS = itertools.count(1)


def _shard_name() -> str:
    """This Ledger's share of each pool: one writer's, unique on the machine."""
    return f"{socket.gethostname()[:64]}/{os.getpid()}/{next(_SHARDS)}"


class _HeldHit(TablectlError):
    """A jackpot hit held for an operator: acknowledged (the table keeps it PENDING), never
    paid until approved."""


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _with_shares(pool: Pool, shares: Iterable[dict[str, Any]]) -> Pool:
    """The pool's row plus its writers' shares (rows with share_* columns; NULL: none)."""
    meter, reserve, wagers, changes = Fraction(0), Fraction(0), 0, 0
    for s in shares:
        if s["share_changes"]:
            meter += Fraction(s["share_meter"])
            reserve += Fraction(s["share_reserve"])
            wagers += int(s["share_wagers"])
            changes += int(s["share_changes"])
    return pool.contributed(meter, reserve, wagers, changes)


def _payouts(result: Any) -> list[dict[str, Any]]:
    return [{"box": x.box, "award": x.award.value, "amount": x.amount,
             "from_meter": x.from_meter, "from_house": x.from_house, "rule": x.rule}
            for x in result.payouts]


def _pool_ids(items: Sequence[Incoming], types: Iterable[str] | None = None) -> set[str]:
    """The pools a batch names (births and payloads; with `types`, only outbox messages of
    those types); ill-formed ones are refused later."""
    wanted = None if types is None else set(types)
    ids: set[str] = set()
    for item in items:
        if wanted is not None and (item.kind != "outbox" or item.body.get("type") not in wanted):
            continue
        payload = item.body.get("payload") if item.kind == "outbox" else item.body
        pool_id = payload.get("pool_id") if isinstance(payload, dict) else None
        if isinstance(pool_id, str):
            ids.add(pool_id)
    return ids


_ROUND_TYPES = frozenset((OutboxType.JACKPOT_INCREMENT, OutboxType.JACKPOT_CANCEL))


def _scan(items: Sequence[Incoming]) -> tuple[set[str], set[tuple[str, int]]]:
    """One pass over a batch: the pools it names (as `_pool_ids`) and the (table, round) of
    its increments and cancellations (whose stored increments are looked up at once)."""
    ids: set[str] = set()
    keys: set[tuple[str, int]] = set()
    for item in items:
        body = item.body
        payload = body.get("payload") if item.kind == "outbox" else body
        if not isinstance(payload, dict):
            continue
        pool_id = payload.get("pool_id")
        if isinstance(pool_id, str):
            ids.add(pool_id)
        if item.kind == "outbox" and body.get("type") in _ROUND_TYPES:
            round_ = payload.get("round")
            if isinstance(round_, int) and not isinstance(round_, bool):
                keys.add((item.table, round_))
    return ids, keys


def _increment_of(row: dict[str, Any]) -> dict[str, Any]:
    return {"seq": row["seq"], "pool": row["pool_id"], "amount": int(row["amount"]),
            "meter": Fraction(row["meter_part"]), "reserve": Fraction(row["reserve_part"]),
            "cancelled": row["cancelled_seq"] is not None, "new": False}


# Rows named per IN (...) query: well under SQLite's and PostgreSQL's parameter limits.
_IN_CHUNK = 500


def force_bool(value: bool) -> Any:
    return bool(value)


@dataclass
class _Pending:
    """Contributions summed: exact meter and reserve parts, wagers (cents), how many."""

    meter: Fraction = Fraction(0)
    reserve: Fraction = Fraction(0)
    wagers: int = 0
    changes: int = 0

    def add(self, meter: Fraction, reserve: Fraction, wagers: int, changes: int) -> None:
        self.meter += meter
        self.reserve += reserve
        self.wagers += wagers
        self.changes += changes

    def parts(self) -> tuple[Fraction, Fraction, int, int]:
        return self.meter, self.reserve, self.wagers, self.changes

