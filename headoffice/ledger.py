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
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import os
import socket
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from controller.clock import utc_now
from controller.errors import InputError
from controller.link import contract
from controller.meters import SHIFT_METERS
from headoffice import hits as hitcheck
from headoffice.db import Database, open_database
from headoffice.hits import HitPolicy
from headoffice.pools import ConservationError, Params, Pool, PoolValue

LAST_HITS = 25
LAST_ALARMS = 25
log = logging.getLogger("tablectl.headoffice")


class LedgerError(Exception):
    """An operator request the ledger refuses (the text says why)."""


@dataclass
class Incoming:
    kind: str  # "outbox" | "birth" | "status"
    table: str
    body: dict[str, Any]


@dataclass
class BatchResult:
    acks: dict[str, int] = field(default_factory=dict)  # table -> cumulative ack
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
    # jackpot_verified from a table (rule 15): (hold_no, table, user) approved after the commit;
    # refused ones (not held, implausible, another table's) are alarmed and counted here.
    verified: list[tuple[int, str, str]] = field(default_factory=list)
    verify_refused: list[str] = field(default_factory=list)
    verifications_paid: int = 0
    wager_refused: list[str] = field(default_factory=list)  # table/seq: not the pool's (15.2.5.2)

    def merge(self, other: BatchResult) -> None:
        """Add the result of a later transaction of the same batch (other tables)."""
        self.acks.update(other.acks)
        for pool_id, value in other.pools.items():
            if pool_id not in self.pools or value.version >= self.pools[pool_id].version:
                self.pools[pool_id] = value
        self.applied += other.applied
        self.duplicates += other.duplicates
        self.parked += other.parked
        self.verifications_paid += other.verifications_paid
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


class _Hold(Exception):
    """Not applied now, not acknowledged: the table sends it again."""


class _Exclusive(Exception):
    """This batch needs the pool's row to itself (a hit, a cancellation, an unbalanced
    pool): the transaction is rolled back and run again with the pool locked FOR UPDATE."""

    def __init__(self, pool_id: str) -> None:
        super().__init__(pool_id)
        self.pool_id = pool_id


_SHARDS = itertools.count(1)


def _shard_name() -> str:
    """This Ledger's share of each pool: one writer's, unique on the machine."""
    return f"{socket.gethostname()[:64]}/{os.getpid()}/{next(_SHARDS)}"


class _HeldHit(Exception):
    """A jackpot hit held for an operator: acknowledged (the table keeps it PENDING), never
    paid until approved."""


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class Ledger:
    def __init__(self, db: Database, *, clock: Any = time.time,
                 policy: HitPolicy | None = None, shard: str | None = None) -> None:
        self.db = db
        self.clock = clock
        self.policy = policy or HitPolicy()
        self.shard = shard or _shard_name()

    @classmethod
    def open(cls, url: str, policy: HitPolicy | None = None) -> Ledger:
        return cls(open_database(url), policy=policy)

    # -- enrolment ------------------------------------------------------------------------------
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

    def close(self) -> None:
        self.db.close()

    # -- pools ----------------------------------------------------------------------------------
    def pool(self, pool_id: str) -> Pool | None:
        found = self._read_pools(" WHERE p.id = ?", (pool_id,))
        return found[0] if found else None

    def pools(self) -> list[Pool]:
        return self._read_pools()

    def _read_pools(self, where: str = "", params: Sequence[Any] = ()) -> list[Pool]:
        """Pools as they stand: each row plus its writers' shares, in one statement (one
        snapshot: never a row already folded with its shares not yet emptied)."""
        rows = self.db.execute(
            "SELECT p.*, s.meter AS share_meter, s.reserve AS share_reserve,"
            " s.wagers_in AS share_wagers, s.changes AS share_changes"
            f" FROM pools p LEFT JOIN pool_shares s ON s.pool_id = p.id{where}"
            " ORDER BY p.id", params)
        return [_with_shares(Pool.from_row(first), [first, *more])
                for _, (first, *more) in itertools.groupby(rows, key=lambda r: r["id"])]

    def _locked_pool(self, pool_id: str) -> Pool | None:
        """The pool locked FOR UPDATE, its shares added (inside a transaction). The lock
        waits for contributions in flight (FOR KEY SHARE) and keeps new ones out, so the
        shares read next are final until `_write_pool` folds them into the row."""
        row = self.db.one(f"SELECT * FROM pools WHERE id = ?{self.db.for_update}", (pool_id,))
        if row is None:
            return None
        shares = self.db.execute(
            "SELECT meter AS share_meter, reserve AS share_reserve, wagers_in AS share_wagers,"
            " changes AS share_changes FROM pool_shares WHERE pool_id = ?", (pool_id,))
        return _with_shares(Pool.from_row(row), shares)

    def ensure_pool(self, pool_id: str, params: Params, operator: str = "config") -> Pool:
        """Create the pool at its seed if it does not exist; an existing pool keeps its
        ledger's parameters (changes go through set_params). Several workers may start at
        once: on PostgreSQL a missing row cannot be locked, so the insert itself decides (ON
        CONFLICT DO NOTHING waits for a concurrent creator and then finds its row)."""
        with self.db.transaction():
            found = self._locked_pool(pool_id)
            if found is None:
                pool = Pool.new(pool_id, params).check()
                if self._write_pool(pool, insert=True):
                    self._param_log(pool_id, operator, "create", False, "applied", [], None,
                                    params)
                    return pool
                found = self._locked_pool(pool_id)
                assert found is not None, f"pool {pool_id} neither inserted nor found"
            return found

    def live_tables(self, pool_id: str, window_s: float) -> list[str]:
        rows = self.db.execute(
            "SELECT id FROM tables WHERE pool_id = ? AND state = 'online'"
            " AND last_seen_epoch >= ? ORDER BY id",
            (pool_id, self.clock() - window_s),
        )
        return [r["id"] for r in rows]

    def set_params(
        self,
        pool_id: str,
        changes: dict[str, Any],
        *,
        operator: str,
        authorised: Iterable[str],
        force: bool = False,
        live_window_s: float = 60.0,
    ) -> tuple[Params, Params]:
        """Change a pool's parameters. Refused while tables are live on the pool unless
        `force` by an operator in `authorised`; every attempt is logged with old and new."""
        from dataclasses import replace

        with self.db.transaction():
            pool = self._locked_pool(pool_id)
            if pool is None:
                raise LedgerError(f"no pool {pool_id!r}")
            old = pool.params
            try:
                new = replace(old, **changes)
            except (TypeError, InputError) as exc:
                raise LedgerError(f"pool {pool_id}: bad parameters: {exc}") from None
            live = self.live_tables(pool_id, live_window_s)
            why = None
            if live and not force:
                why = f"tables live on pool {pool_id}: {', '.join(live)} (force needed)"
            elif force and operator not in set(authorised):
                why = f"operator {operator!r} is not authorised to force a change"
            if why is None:
                try:
                    pool = pool.with_params(new)
                except ConservationError as exc:
                    why = str(exc)
            if why is not None:
                self._param_log(pool_id, operator, "set", force, f"refused: {why}", live, old, new)
            else:
                self._write_pool(pool)
                self._param_log(pool_id, operator, "set", force, "applied", live, old, new)
        if why is not None:
            raise LedgerError(why)
        log.warning("pool %s parameters changed by %s: %s -> %s", pool_id, operator,
                    old.as_json(), new.as_json())
        return old, new

    def resume_pool(self, pool_id: str, *, operator: str, authorised: Iterable[str]) -> Pool:
        """Restart a stopped pool once its books balance again (after an investigation)."""
        from dataclasses import replace

        if operator not in set(authorised):
            raise LedgerError(f"operator {operator!r} is not authorised to resume a pool")
        with self.db.transaction():
            pool = self._locked_pool(pool_id)
            if pool is None:
                raise LedgerError(f"no pool {pool_id!r}")
            try:
                pool = replace(pool, stopped=None, version=pool.version + 1).check()
            except ConservationError as exc:
                raise LedgerError(f"still unbalanced, not resumed: {exc}") from None
            self._write_pool(pool)
            self._param_log(pool_id, operator, "resume", False, "applied", [], None, None)
            return pool

    # -- messages -------------------------------------------------------------------------------
    def apply_batch(self, items: Sequence[Incoming]) -> BatchResult:
        """Apply the messages, each table's in order; acknowledge nothing before this returns.

        On PostgreSQL the first transaction takes only the tables no other worker holds
        (SKIP LOCKED) and the rest follow in a second one that waits for them: with a shared
        subscription every worker gets messages of every table, and waiting for all of
        them would make the workers take turns."""
        result = BatchResult()
        todo, skip = list(items), self.db.dialect == "postgresql"
        # The pools this batch must lock FOR UPDATE: its hits' and cancellations'.
        exclusive = _pool_ids(items, ("jackpot_hit", "jackpot_cancel"))
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
        for hold_no, table, user in result.verified:
            self._verify_hit(hold_no, table, user, result)
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
            items, later = batch.preload(items, skip)
            for pool_id in sorted(_pool_ids(items)):
                batch.pool(pool_id)
            for item in items:
                if item.kind == "outbox":
                    batch.outbox(item.table, item.body)
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

    def _verify_hit(self, hold_no: int, table: str, user: str, result: BatchResult) -> None:
        """An attendant's verification at the table pays a hit held for its size alone: the
        same approval as `hit approve`, the attendant and the table recorded as who approved
        (rule 15: a large award waits for verification before the pool resets)."""
        try:
            message = self._pay_held(hold_no, operator=f"attendant {user} at table {table}",
                                     note="verified at the table", table=table)
        except LedgerError as exc:  # decided at head office meanwhile, or cannot be paid
            text = f"jackpot_verified from {table} for held hit #{hold_no} refused: {exc}"
            result.verify_refused.append(text)
            with self.db.transaction():
                self.alarm(text, None, table)
        else:
            result.verifications_paid += 1
            # The pool this award lowered goes out with the batch's values, at once: every
            # linked meter comes down to it (2.4.3, 15.1.3), not at the next heartbeat.
            paid = self.pool(message["pool"])
            if paid is not None:
                result.pools[paid.id] = paid.value()

    def award_for(self, table: str, round_: int) -> dict[str, Any] | None:
        row = self.db.one(
            "SELECT award FROM hits WHERE table_id = ? AND round = ?", (table, round_)
        )
        return None if row is None else json.loads(row["award"])

    # -- held hits (the jackpot lock) ----------------------------------------------------------
    def held_hits(self, pending_only: bool = False) -> list[dict[str, Any]]:
        """Hits held for an operator, oldest first; with who decided, when and why."""
        where = " WHERE status = 'pending'" if pending_only else ""
        rows = self.db.execute(
            "SELECT hold_no, table_id, round, seq, pool_id, utc, meter_at_hit, reason, status,"
            f" operator, decided_utc, note, award, delivered FROM held_hits{where}"
            " ORDER BY hold_no")
        for r in rows:
            r["delivered"] = bool(r["delivered"])
            r["award"] = None if r["award"] is None else json.loads(r["award"])
        return rows

    @staticmethod
    def _authorised(operator: str, authorised: Iterable[str]) -> None:
        if operator not in set(authorised):
            raise LedgerError(f"operator {operator!r} is not authorised to decide a held hit")

    def _held(self, hold_no: int) -> dict[str, Any]:
        """The pending held hit, locked (inside a transaction); LedgerError otherwise."""
        row = self.db.one(f"SELECT * FROM held_hits WHERE hold_no = ?{self.db.for_update}",
                          (hold_no,))
        if row is None:
            raise LedgerError(f"no held hit #{hold_no}")
        if row["status"] != "pending":
            raise LedgerError(f"held hit #{hold_no} was already {row['status']} by"
                              f" {row['operator']} at {row['decided_utc']}")
        return row

    def approve_hit(self, hold_no: int, *, operator: str, authorised: Iterable[str],
                    note: str = "") -> dict[str, Any]:
        """Pay a held hit: head office's award by rule 15 on the meter as it was at the hit
        (never more), recorded with who approved it and when. Returns the award message; the
        worker publishes it to the table (`undelivered_awards`)."""
        self._authorised(operator, authorised)
        return self._pay_held(hold_no, operator=operator, note=note)

    def _pay_held(self, hold_no: int, *, operator: str, note: str,
                  table: str | None = None) -> dict[str, Any]:
        """The approval itself, for an operator at head office or an attendant at `table`."""
        with self.db.transaction():
            row = self._held(hold_no)
            if table is not None and row["table_id"] != table:
                raise LedgerError(f"held hit #{hold_no} is {row['table_id']}'s, not {table}'s")
            found = self._locked_pool(row["pool_id"])
            if found is None:
                raise LedgerError(f"no pool {row['pool_id']!r}")
            pool = found
            if pool.stopped:
                raise LedgerError(f"pool {pool.id} is stopped: {pool.stopped}")
            body = json.loads(row["body"])
            try:
                entries = hitcheck.entries_of(body["payload"])
                new, result = pool.award(entries, int(row["meter_at_hit"]))
            except (InputError, ConservationError) as exc:
                raise LedgerError(f"held hit #{hold_no} cannot be paid ({exc}): refuse it"
                                  ) from None
            payouts = _payouts(result)
            message = contract.award_message(row["table_id"], pool.id, int(row["round"]),
                                             int(row["seq"]), payouts)
            now = utc_now()
            self._write_pool(new)
            self.db.execute(
                "INSERT INTO hits (pool_id, hit_no, table_id, round, seq, utc, pool_before,"
                " pool_after, paid, seed_from_house, award) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                " ?)",
                (pool.id, new.hits, row["table_id"], row["round"], row["seq"], now, pool.amount,
                 new.amount, sum(x["amount"] for x in payouts), result.seed_from_house,
                 json.dumps(message, sort_keys=True)))
            self.db.execute(
                "UPDATE held_hits SET status = 'approved', operator = ?, decided_utc = ?,"
                " note = ?, award = ? WHERE hold_no = ?",
                (operator, now, note, json.dumps(message, sort_keys=True), hold_no))
            self.alarm(f"held hit #{hold_no} ({row['table_id']} round {row['round']}) APPROVED"
                       f" by {operator}: {sum(x['amount'] for x in payouts)} cents",
                       pool.id, row["table_id"])
        log.warning("held hit #%s approved by %s", hold_no, operator)
        return message

    def refuse_hit(self, hold_no: int, *, operator: str, authorised: Iterable[str],
                   reason: str) -> None:
        """Never pay a held hit; who refused it, when and why are recorded. Nothing is sent
        to the table: its hit stays PENDING there for the floor to resolve."""
        if not reason.strip():
            raise LedgerError("a refusal needs a reason")
        self._authorised(operator, authorised)
        with self.db.transaction():
            row = self._held(hold_no)
            self.db.execute(
                "UPDATE held_hits SET status = 'refused', operator = ?, decided_utc = ?,"
                " note = ? WHERE hold_no = ?", (operator, utc_now(), reason[:500], hold_no))
            self.alarm(f"held hit #{hold_no} ({row['table_id']} round {row['round']}) REFUSED"
                       f" by {operator}: {reason[:500]}", row["pool_id"], row["table_id"])

    def undelivered_awards(self) -> list[tuple[int, str, dict[str, Any]]]:
        """Approved held hits whose award the tables have not been sent: (no, table, message)."""
        rows = self.db.execute(
            "SELECT hold_no, table_id, award FROM held_hits WHERE status = 'approved'"
            " AND delivered = ? ORDER BY hold_no", (force_bool(False),))
        return [(int(r["hold_no"]), r["table_id"], json.loads(r["award"])) for r in rows]

    def mark_delivered(self, hold_nos: list[int]) -> None:
        with self.db.transaction():
            self.db.executemany("UPDATE held_hits SET delivered = ? WHERE hold_no = ?",
                                [(force_bool(True), n) for n in hold_nos])

    # -- reports --------------------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        pools = []
        for pool in self.pools():
            hits = self.db.execute(
                "SELECT hit_no, table_id, round, utc, pool_before, pool_after, paid, award"
                " FROM hits WHERE pool_id = ? ORDER BY hit_no DESC LIMIT ?",
                (pool.id, LAST_HITS),
            )
            last = [
                {
                    "hit": h["hit_no"], "table": h["table_id"], "round": h["round"],
                    "utc": h["utc"], "pool_before": h["pool_before"],
                    "pool_after": h["pool_after"], "paid": h["paid"],
                    "payouts": json.loads(h["award"])["payouts"],
                }
                for h in hits
            ]
            pools.append({**pool.meters(), "last_hits": last})
        tables = self.db.execute(
            "SELECT id, pool_id, last_seq, state, last_seen_utc, enrolled, journal_seq,"
            " chain_seq, chain_hash FROM tables ORDER BY id"
        )
        for t in tables:
            t["enrolled"] = bool(t["enrolled"])
        alarms = self.db.execute(  # newest first, by number: `utc` orders nothing
            "SELECT alarm_no, utc, pool_id, table_id, text FROM alarms"
            " ORDER BY alarm_no DESC LIMIT ?", (LAST_ALARMS,)
        )
        return {"pools": pools, "tables": tables, "alarms": alarms,
                "held_hits": self.held_hits(pending_only=True)}

    def table_totals(self, table: str) -> dict[str, int]:
        """What the ledger holds for one table: jackpot wagers in (net of cancellations) and
        awards paid to it, in cents; the last sequence applied."""
        wagered = self.db.one(
            "SELECT COALESCE(SUM(amount), 0) AS s FROM messages WHERE table_id = ?"
            " AND status = 'applied' AND type IN ('jackpot_increment', 'jackpot_cancel')",
            (table,),
        )
        paid = self.db.one(
            "SELECT COALESCE(SUM(paid), 0) AS s FROM hits WHERE table_id = ?", (table,)
        )
        seq = self.db.one("SELECT last_seq FROM tables WHERE id = ?", (table,))
        return {
            "wagered": int(wagered["s"]) if wagered else 0,
            "paid": int(paid["s"]) if paid else 0,
            "last_seq": int(seq["last_seq"]) if seq else 0,
        }

    # -- storage helpers ------------------------------------------------------------------------
    def _write_pool(self, pool: Pool, insert: bool = False) -> int:
        """Update the pool's row, or insert it (nothing if it exists): the rows written.
        `pool` is `_locked_pool`'s (its shares added): the shares are now in the row, and
        emptied in the same transaction."""
        row = {**pool.row(), "updated_utc": utc_now()}
        cols = list(row)
        if insert:
            return self.db.write(
                f"INSERT INTO pools ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
                " ON CONFLICT (id) DO NOTHING",
                [row[c] for c in cols],
            )
        sets = ", ".join(f"{c} = ?" for c in cols if c != "id")
        written = self.db.write(
            f"UPDATE pools SET {sets} WHERE id = ?",
            [row[c] for c in cols if c != "id"] + [pool.id],
        )
        self.db.execute("DELETE FROM pool_shares WHERE pool_id = ?", (pool.id,))
        return written

    def _param_log(self, pool_id: str, operator: str, action: str, forced: bool, outcome: str,
                   live: list[str], old: Params | None, new: Params | None) -> None:
        """The pool's next audit entry. Only inside a transaction that holds the pool's row
        (locked, or just inserted): that makes MAX + 1 the pool's next number, gapless."""
        last = self.db.one("SELECT COALESCE(MAX(entry_no), 0) AS n FROM param_log"
                           " WHERE pool_id = ?", (pool_id,))
        assert last is not None
        self.db.execute(
            "INSERT INTO param_log (pool_id, entry_no, utc, operator, action, forced, outcome,"
            " live_tables, old, new) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                pool_id, int(last["n"]) + 1, utc_now(), operator, action, force_bool(forced),
                outcome, json.dumps(live),
                None if old is None else json.dumps(old.as_json(), sort_keys=True),
                None if new is None else json.dumps(new.as_json(), sort_keys=True),
            ),
        )

    def param_log(self, pool_id: str | None = None) -> list[dict[str, Any]]:
        """The parameter audit trail in the order it was made: each pool's entries by
        `entry_no` (1, 2, 3 ...), pools one after the other by id. `utc` is informative only:
        it does not order entries (a millisecond holds several; clocks step)."""
        if pool_id is None:
            return self.db.execute("SELECT * FROM param_log ORDER BY pool_id, entry_no")
        return self.db.execute("SELECT * FROM param_log WHERE pool_id = ? ORDER BY entry_no",
                               (pool_id,))

    def alarm(self, text: str, pool_id: str | None = None, table: str | None = None) -> None:
        """Logged critical and recorded; the database numbers it (`alarm_no`, see db.py)."""
        log.critical("%s", text)
        self.db.execute("INSERT INTO alarms (utc, pool_id, table_id, text) VALUES (?, ?, ?, ?)",
                        (utc_now(), pool_id, table, text))


@functools.lru_cache(maxsize=4096)
def _text(value: Fraction) -> str:
    """str(Fraction), remembered: a fleet's wagers are a few amounts at a few rates."""
    return str(value)


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


def _round_keys(items: Sequence[Incoming]) -> set[tuple[str, int]]:
    """(table, round) of the batch's increments and cancellations."""
    keys = set()
    for item in items:
        if item.kind == "outbox" and item.body.get("type") in ("jackpot_increment",
                                                               "jackpot_cancel"):
            payload = item.body.get("payload")
            round_ = payload.get("round") if isinstance(payload, dict) else None
            if isinstance(round_, int) and not isinstance(round_, bool):
                keys.add((item.table, round_))
    return keys


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


class _Batch:
    """One transaction's worth of messages, applied in memory and written at `flush`."""

    def __init__(self, ledger: Ledger, result: BatchResult, exclusive: set[str]) -> None:
        self.ledger = ledger
        self.db = ledger.db
        self.result = result
        self.tables: dict[str, _Table] = {}
        # Pools as they stood when loaded (row plus shares). Those in `exclusive` are locked
        # FOR UPDATE and changed message by message (dirty_pools: written, shares folded);
        # the others FOR KEY SHARE, this batch's contributions summed in `pending` and added
        # to this Ledger's share (`own`, locked) at flush.
        self.pools: dict[str, Pool | None] = {}
        self.exclusive = exclusive
        self.dirty_pools: set[str] = set()
        self.pending: dict[str, _Pending] = {}
        self.own: dict[str, _Pending] = {}
        self.unbalanced: set[str] = set()
        self.shared_changed: set[str] = set()
        self.parts: dict[tuple[str, int], tuple[Fraction, Fraction]] = {}
        self.messages: list[tuple[Any, ...]] = []
        self.increments: dict[tuple[str, int], dict[str, Any]] = {}
        self.cancelled: list[tuple[int, str, int]] = []
        self.hits: list[tuple[Any, ...]] = []
        self.held_hits: list[tuple[Any, ...]] = []
        self.rounds: list[tuple[Any, ...]] = []
        self.parking: dict[str, dict[int, str]] = {}  # table -> seq -> body, parked this batch
        self.drained: set[str] = set()  # tables whose parked messages were applied
        # increments stored by earlier transactions, by (table, round), and the keys looked up
        self.stored: dict[tuple[str, int], dict[str, Any]] = {}
        self.looked_up: set[tuple[str, int]] = set()
        self.utc = utc_now()

    # -- loading (locks the rows on PostgreSQL) -------------------------------------------------
    def table(self, table_id: str) -> _Table:
        t = self.tables.get(table_id)
        if t is None:
            self._load_tables([table_id])
            t = self.tables[table_id]
        return t

    def preload(self, items: Sequence[Incoming],
                skip: bool) -> tuple[list[Incoming], list[Incoming]]:
        """The batch's tables, and the stored increments of the rounds its outbox messages
        name, in a few queries. With `skip`, only the tables no other transaction holds:
        -> (the messages of those, the messages left for the next transaction)."""
        ids = sorted({i.table for i in items})
        got: set[str] = set()
        for lo in range(0, len(ids), _IN_CHUNK):
            got |= self._load_tables(ids[lo:lo + _IN_CHUNK], skip)
        later: list[Incoming] = []
        if skip:
            later = [i for i in items if i.table not in got]
            items = [i for i in items if i.table in got]
        keys = sorted(_round_keys(items))
        for lo in range(0, len(keys), _IN_CHUNK):
            chunk = keys[lo:lo + _IN_CHUNK]
            rows = self.db.execute(
                "SELECT table_id, round, seq, pool_id, amount, meter_part, reserve_part,"
                " cancelled_seq FROM increments WHERE (table_id, round) IN"
                f" (VALUES {', '.join(['(?, ?)'] * len(chunk))})",
                [v for key in chunk for v in key],
            )
            self.looked_up.update(chunk)
            for row in rows:
                self.stored[(row["table_id"], int(row["round"]))] = _increment_of(row)
        return items, later

    def _load_tables(self, ids: list[str], skip: bool = False) -> set[str]:
        """Sorted table ids -> self.tables. A table with no row, or not enrolled, is loaded
        as not enrolled: its messages are refused (never a row created on the fly). With
        `skip`, rows another transaction holds are left out, and so are tables with no row
        (the next transaction, which waits, refuses them): -> the ids loaded."""
        marks = ", ".join("?" * len(ids))
        lock = self.db.skip_locked if skip else self.db.for_update
        select = (f"SELECT id, last_seq, pool_id, enrolled, enrolled_pool, journal_seq,"
                  f" chain_hash FROM tables WHERE id IN ({marks})"
                  f" ORDER BY id{lock}")
        rows = {r["id"]: r for r in self.db.execute(select, ids)}
        if skip:
            ids = sorted(rows)
            if not ids:
                return set()
            marks = ", ".join("?" * len(ids))
        parked = {
            r["table_id"]
            for r in self.db.execute(
                f"SELECT DISTINCT table_id FROM parked WHERE table_id IN ({marks})", ids)
        }
        for table_id in ids:
            row = rows.get(table_id)
            if row is None or not row["enrolled"]:
                self.tables[table_id] = _Table(table_id, 0, None, False, enrolled=False)
                continue
            self.tables[table_id] = _Table(
                table_id, int(row["last_seq"]), row["pool_id"], table_id in parked,
                enrolled_pool=row["enrolled_pool"], journal_seq=int(row["journal_seq"] or 0),
                chain_hash=row["chain_hash"])
        return set(ids)

    def enrolled(self, table_id: str) -> _Table | None:
        """The table, or None (counted and refused) if head office does not know it."""
        t = self.table(table_id)
        if not t.enrolled:
            self.result.unknown.append(table_id)
            return None
        return t

    def pool(self, pool_id: str) -> Pool | None:
        if pool_id not in self.pools:
            if pool_id in self.exclusive:
                self.pools[pool_id] = self.ledger._locked_pool(pool_id)
            else:
                self.pools[pool_id] = self._shared_pool(pool_id)
        return self.pools[pool_id]

    def _shared_pool(self, pool_id: str) -> Pool | None:
        """The pool for contributions: its row FOR KEY SHARE, this Ledger's share locked
        (made if new), every share added. Books that do not balance are noted: the first
        message that touches the pool then needs it exclusively (and stops it)."""
        row = self.db.one(f"SELECT * FROM pools WHERE id = ?{self.db.for_key_share}",
                          (pool_id,))
        if row is None:
            return None
        # The upsert locks this Ledger's row (and returns it), made or found.
        own = self.db.one(
            "INSERT INTO pool_shares (pool_id, shard, meter, reserve, wagers_in, changes)"
            " VALUES (?, ?, '0', '0', 0, 0) ON CONFLICT (pool_id, shard) DO UPDATE"
            " SET changes = pool_shares.changes RETURNING meter, reserve, wagers_in, changes",
            (pool_id, self.ledger.shard))
        assert own is not None
        self.own[pool_id] = _Pending(Fraction(own["meter"]), Fraction(own["reserve"]),
                                     int(own["wagers_in"]), int(own["changes"]))
        self.pending[pool_id] = _Pending()
        shares = self.db.execute(
            "SELECT meter AS share_meter, reserve AS share_reserve, wagers_in AS share_wagers,"
            " changes AS share_changes FROM pool_shares WHERE pool_id = ?", (pool_id,))
        pool = _with_shares(Pool.from_row(row), shares)
        try:
            pool.check()
        except ConservationError:
            self.unbalanced.add(pool_id)
        return pool

    def _parts(self, pool: Pool, staked: int) -> tuple[Fraction, Fraction]:
        """A contribution's exact meter and reserve parts; the same wager at the same rates
        is worked out once per batch (Fraction arithmetic is most of a contribution)."""
        key = (pool.id, staked)
        parts = self.parts.get(key)
        if parts is None:
            parts = self.parts[key] = (staked * pool.params.increment,
                                       staked * pool.params.hidden)
        return parts

    def _needs_exclusive(self, pool_id: str) -> None:
        if pool_id not in self.exclusive:
            raise _Exclusive(pool_id)

    # -- outbox -----------------------------------------------------------------------------------
    def outbox(self, table_id: str, body: dict[str, Any]) -> None:
        t = self.enrolled(table_id)
        if t is None:
            return
        seq = body["seq"]
        if seq <= t.last_seq:
            self._same_as_ledgered(t, body)
            self.result.duplicates += 1
            self.result.acks[table_id] = t.last_seq  # the ack may have been lost: say it again
            if body.get("type") == "jackpot_hit":
                self._reanswer(table_id, body)
            return
        if t.blocked or seq > t.last_seq + 1:
            # Kept here and written at flush, unless drained meanwhile: with a shared
            # subscription half a table's messages can reach a worker ahead of their turn.
            self.parking.setdefault(table_id, {}).setdefault(seq, json.dumps(body))
            t.has_parked = True
            self.result.parked += 1
            return
        if self._apply(t, body):
            self._drain(t)

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
            self.ledger.alarm(text, None, t.id)

    def _drain(self, t: _Table) -> None:
        """Apply parked messages that now follow on: the ones parked by this batch, and the
        ones in the database, read in order a few hundred per query (their rows are deleted
        at flush). A held one stays parked."""
        mine = self.parking.get(t.id, {})
        while t.has_parked and not t.blocked:
            text = mine.pop(t.last_seq + 1, None)
            if text is not None:
                if not self._apply(t, json.loads(text)):
                    mine[t.last_seq + 1] = text
                    return
                self.drained.add(t.id)
                continue
            rows = self.db.execute(
                "SELECT seq, body FROM parked WHERE table_id = ? AND seq > ? ORDER BY seq"
                " LIMIT ?", (t.id, t.last_seq, _IN_CHUNK))
            first = t.last_seq + 1
            for row in rows:
                if int(row["seq"]) != t.last_seq + 1 or not self._apply(t, json.loads(row["body"])):
                    break
            if t.last_seq < first:
                return  # a gap, or the next one held
            self.drained.add(t.id)

    def _apply(self, t: _Table, body: dict[str, Any]) -> bool:
        """Apply the table's next message. False if it is held (not applied, not acked)."""
        type_ = body.get("type", "")
        payload = body.get("payload")
        status, reason, pool_id, amount = "applied", None, None, 0
        round_ = payload.get("round") if isinstance(payload, dict) else None
        try:
            payload = contract.check_outbox_payload(type_, payload)
            pool_id = payload.get("pool_id")
            amount = self._dispatch(t, body, type_, payload)
        except (contract.SchemaError, InputError) as exc:
            # A bad message still has its sequence number: record it refused and go on, so the
            # valid messages behind it are not stuck; the body is kept for the audit.
            status, reason, amount = "refused", str(exc), 0
            self.result.refused.append(f"{t.id}/{body['seq']}: {exc}")
            self.ledger.alarm(f"message {t.id}/{body['seq']} refused: {exc}",
                              pool_id if isinstance(pool_id, str) else None, t.id)
        except _Hold as exc:
            t.blocked = True
            self.result.held.append(f"{t.id}/{body['seq']}: {exc}")
            return False
        except _HeldHit as exc:
            status, reason = "held", str(exc)
        journal_seq = body.get("journal_seq", 0)
        if journal_seq < t.journal_seq:  # equal: one record wrote several messages
            text = (f"table {t.id}: message seq {body['seq']} comes from journal record"
                    f" {journal_seq}, after one from record {t.journal_seq}: its journal went"
                    " backwards")
            self.result.forks.append(text)
            self.ledger.alarm(text, None, t.id)
        t.journal_seq = journal_seq
        t.chain_hash = body.get("journal_hash")
        t.last_seq = body["seq"]
        t.dirty = True
        self.result.acks[t.id] = t.last_seq
        self.result.applied += 1
        self.messages.append((
            t.id, body["seq"], type_, pool_id if isinstance(pool_id, str) else None,
            round_ if isinstance(round_, int) else None, status, reason, amount,
            json.dumps(body, sort_keys=True), self.utc,
        ))
        return True

    def _live_pool(self, t: _Table, pool_id: str) -> Pool:
        if t.enrolled_pool is not None and pool_id != t.enrolled_pool:
            # 15.1.2.2: a table is linked to one pool, the one it is enrolled on.
            raise InputError(f"table {t.id} is enrolled on pool {t.enrolled_pool},"
                             f" not {pool_id}")
        pool = self.pool(pool_id)
        if pool is None:
            raise _Hold(f"no pool {pool_id!r} at head office")
        if pool.stopped:
            raise _Hold(f"pool {pool_id} is stopped: {pool.stopped}")
        if pool_id in self.unbalanced:
            self._needs_exclusive(pool_id)  # to stop it (_guarded)
        if t.pool_id != pool_id:
            t.pool_id = pool_id
            t.dirty = True
        return pool

    def _guarded(self, pool_id: str, step: Any) -> Pool:
        """Run a pool operation; a broken invariant stops the pool (the message is held)."""
        try:
            pool = step()
        except ConservationError as exc:
            from dataclasses import replace

            stopped = replace(self.pools[pool_id], stopped=f"{self.utc}: {exc}")  # type: ignore[arg-type]
            self.pools[pool_id] = stopped
            self.dirty_pools.add(pool_id)
            self.result.stopped.append(pool_id)
            self.ledger.alarm(f"POOL {pool_id} STOPPED: conservation violated: {exc}", pool_id)
            raise _Hold(f"pool {pool_id} stopped") from None
        self.pools[pool_id] = pool
        self.dirty_pools.add(pool_id)
        self.result.pools[pool_id] = pool.value()
        return pool

    def _dispatch(self, t: _Table, body: dict[str, Any], type_: str, p: dict[str, Any]) -> int:
        seq = body["seq"]
        if type_ == "round_result":
            self.rounds.append((t.id, p["round"], seq, str(p["status"]),
                                json.dumps(p, sort_keys=True)))
            return 0
        if type_ == SHIFT_METERS:  # moves no money: stored with the message (headoffice/meters.py)
            return 0
        pool_id = p["pool_id"]
        pool = self._live_pool(t, pool_id)
        key = (t.id, p["round"])
        if type_ == "jackpot_increment":
            if key in self.increments or self._stored_increment(key) is not None:
                raise InputError(f"round {p['round']}: a second increment for the round")
            if p["wager"] > self.ledger.policy.max_wager:
                raise InputError(f"round {p['round']}: jackpot wager {p['wager']} above the"
                                 f" configured {self.ledger.policy.max_wager} (15.2.3)")
            if pool.params.wager is not None and p["wager"] != pool.params.wager:
                # 15.2.5.2: every linked table uses the pool's qualifying wager; a table that
                # differs contributes nothing (its meter takes the jackpot off, ho.pool `wager`).
                self.result.wager_refused.append(f"{t.id}/{seq}")
                raise InputError(f"round {p['round']}: jackpot wager {p['wager']} is not pool"
                                 f" {pool_id}'s qualifying wager {pool.params.wager} (15.2.5.2)")
            parts: dict[str, Any] = {}
            pending = self.pending.get(pool_id)
            if pending is not None:  # shared: summed, added to this Ledger's share at flush
                parts.update(zip(("meter", "reserve"), self._parts(pool, p["amount"]),
                                 strict=True))
                pending.wagers += p["amount"]
                pending.changes += 1
            else:
                def inc() -> Pool:
                    new, meter, reserve = pool.contribute(p["amount"])
                    parts.update(meter=meter, reserve=reserve)
                    return new

                self._guarded(pool_id, inc)
            self.increments[key] = {"seq": seq, "pool": pool_id, "amount": p["amount"],
                                    "meter": parts["meter"], "reserve": parts["reserve"],
                                    "new": True, "boxes": p["boxes"], "wager": p["wager"]}
            return int(p["amount"])
        if type_ == "jackpot_verified":
            return self._verified(t, p, key)
        self._needs_exclusive(pool_id)  # a cancellation or a hit: the pool's row, in order
        if type_ == "jackpot_cancel":
            inc = self.increments.get(key) or self._stored_increment(key)
            if inc is None or inc.get("cancelled"):
                raise InputError(f"round {p['round']}: cancel without an increment to cancel")
            if inc["amount"] != p["amount"] or inc["pool"] != pool_id:
                raise InputError(f"round {p['round']}: cancel of {p['amount']} on {pool_id}"
                                 f" does not match the increment {inc['amount']} on {inc['pool']}")
            self._guarded(pool_id, lambda: pool.cancel(p["amount"], inc["meter"],
                                                        inc["reserve"]))
            inc["cancelled"] = True
            self.increments[key] = inc
            self.cancelled.append((seq, t.id, p["round"]))
            return -int(p["amount"])
        # jackpot_hit: checked against what head office knows (headoffice/hits.py); then the
        # UTH engine's award on the pool as it stands now (arrival order), unless held.
        if (self.db.one("SELECT 1 AS x FROM hits WHERE table_id = ? AND round = ?"
                        " UNION ALL SELECT 1 AS x FROM held_hits WHERE table_id = ? AND round = ?",
                        key + key) is not None
                or any(h[2:4] == key for h in self.hits)
                or any(h[0:2] == key for h in self.held_hits)):
            raise InputError(f"round {p['round']}: a second hit for the round")
        wrong = hitcheck.problems(p, self._wagered(key))
        if wrong:
            self._hold_hit(t, body, pool, "; ".join(wrong), alarm=True)
        entries = hitcheck.entries_of(p)
        try:  # pure: nothing is kept unless it is paid
            payouts = _payouts(pool.award(entries)[1])
        except ConservationError:
            payouts = []  # the books are off: _guarded below stops the pool
        why = hitcheck.needs_verification(self.ledger.policy, payouts)
        if why is not None:
            self._hold_hit(t, body, pool, why, alarm=False)
        answer: dict[str, Any] = {}

        def hit() -> Pool:
            new, result = pool.award(entries)
            answer["result"] = result
            return new

        new = self._guarded(pool_id, hit)
        result = answer["result"]
        payouts = _payouts(result)
        message = contract.award_message(t.id, pool_id, p["round"], seq, payouts)
        hit_no = new.hits
        self.hits.append((
            pool_id, hit_no, t.id, p["round"], seq, self.utc, pool.amount, new.amount,
            sum(x["amount"] for x in payouts), result.seed_from_house,
            json.dumps(message, sort_keys=True),
        ))
        self.result.awards.append((t.id, message))
        return 0

    def _verified(self, t: _Table, p: dict[str, Any], key: tuple[str, int]) -> int:
        """jackpot_verified: an attendant at the table verified its hit (rule 15). Accepted
        only for this table's hit held for its size alone (every check of headoffice/hits.py
        passes); paid after this batch commits (`Ledger._verify_hit`). InputError otherwise:
        the message is refused, alarmed and counted; nothing changes."""
        row = self.db.one("SELECT hold_no, status, pool_id, body FROM held_hits"
                          " WHERE table_id = ? AND round = ?", key)
        why = ""
        if row is None:
            why = "no hit of this table held for the round"
        elif row["status"] != "pending":
            why = f"its held hit #{row['hold_no']} was already {row['status']}"
        elif row["pool_id"] != p["pool_id"]:
            why = f"its held hit is on pool {row['pool_id']}, not {p['pool_id']}"
        else:
            hit = json.loads(row["body"])["payload"]
            wrong = hitcheck.problems(hit, self._wagered(key))
            if wrong:
                why = ("the held hit does not add up, an operator decides it at head office: "
                       + "; ".join(wrong))
            elif not set(p["boxes"]) <= set(hit["hits"]):
                why = f"boxes {p['boxes']} are not the hit's {hit['hits']}"
        if why:
            text = f"jackpot_verified from {t.id} for round {p['round']} refused: {why}"
            self.result.verify_refused.append(text)
            raise InputError(text)
        self.result.verified.append((int(row["hold_no"]), t.id, p["verified_by"]["user"]))
        return 0

    def _wagered(self, key: tuple[str, int]) -> dict[str, Any] | None:
        """The round's ledgered jackpot wagers {pool_id, boxes, wager, cancelled}, or None."""
        inc = self.increments.get(key) or self._stored_increment(key)
        if inc is None:
            return None
        if "boxes" not in inc:  # stored by an earlier transaction: its message has them
            row = self.db.one("SELECT body FROM messages WHERE table_id = ? AND seq = ?",
                              (key[0], inc["seq"]))
            payload = json.loads(row["body"]).get("payload", {}) if row else {}
            inc = {**inc, "boxes": payload.get("boxes", []), "wager": payload.get("wager")}
        return {"pool_id": inc["pool"], "boxes": inc["boxes"], "wager": inc["wager"],
                "cancelled": bool(inc.get("cancelled"))}

    def _hold_hit(self, t: _Table, body: dict[str, Any], pool: Pool, why: str,
                  alarm: bool) -> None:
        """The jackpot lock: the hit is recorded PENDING for a person, never paid here."""
        p = body["payload"]
        text = f"jackpot hit {t.id} round {p['round']} HELD for approval: {why}"
        self.held_hits.append((t.id, p["round"], body["seq"], pool.id, self.utc, pool.amount,
                               why[:2000], json.dumps(body, sort_keys=True), "pending",
                               force_bool(False)))
        self.result.held_hits.append(text)
        if alarm:
            self.ledger.alarm(text, pool.id, t.id)
        else:
            log.warning("%s", text)
        raise _HeldHit(why)

    def _stored_increment(self, key: tuple[str, int]) -> dict[str, Any] | None:
        if key not in self.looked_up:  # a parked message drained into this batch
            row = self.db.one(
                "SELECT seq, pool_id, amount, meter_part, reserve_part, cancelled_seq"
                " FROM increments WHERE table_id = ? AND round = ?", key,
            )
            self.looked_up.add(key)
            if row is not None:
                self.stored[key] = _increment_of(row)
        return self.stored.get(key)

    def _reanswer(self, table_id: str, body: dict[str, Any]) -> None:
        payload = body.get("payload")
        if isinstance(payload, dict) and isinstance(payload.get("round"), int):
            award = self.ledger.award_for(table_id, payload["round"])
            if award is not None:
                self.result.awards.append((table_id, award))

    # -- birth and status -----------------------------------------------------------------------
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
        # The table starts again: tell it where it stands, and answer any hit it still shows
        # PENDING that the ledger has already awarded (the answer may have been lost).
        self.result.acks[table_id] = t.last_seq
        for hit in body.get("pending_hits") or []:
            award = self.ledger.award_for(table_id, hit["round"])
            if award is not None:
                self.result.awards.append((table_id, award))
            else:
                pending = next((h for h in self.hits if h[2] == table_id and h[3] == hit["round"]),
                               None)
                if pending is not None:
                    self.result.awards.append((table_id, json.loads(pending[10])))

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
            self.ledger.alarm(text, None, t.id)

    def status(self, table_id: str, body: dict[str, Any]) -> None:
        if self.enrolled(table_id) is None:
            return
        self.db.execute(
            "UPDATE tables SET state = ?, last_seen_utc = ?, last_seen_epoch = ? WHERE id = ?",
            (body["state"], self.utc, self.ledger.clock(), table_id),
        )

    # -- write ------------------------------------------------------------------------------------
    def flush(self) -> None:
        db = self.db
        # COPY on PostgreSQL: one stream per table of the ledger, not a statement per row.
        db.insert_many("messages", ("table_id", "seq", "type", "pool_id", "round", "status",
                                    "reason", "amount", "body", "utc"), self.messages)
        db.insert_many(
            "increments", ("table_id", "round", "seq", "pool_id", "amount", "meter_part",
                           "reserve_part", "cancelled_seq"),
            [
                (k[0], k[1], v["seq"], v["pool"], v["amount"], _text(v["meter"]),
                 _text(v["reserve"]), None)
                for k, v in self.increments.items() if v.get("new")
            ],
        )
        db.executemany(
            "UPDATE increments SET cancelled_seq = ? WHERE table_id = ? AND round = ?",
            self.cancelled,
        )
        db.executemany(
            "INSERT INTO hits (pool_id, hit_no, table_id, round, seq, utc, pool_before,"
            " pool_after, paid, seed_from_house, award) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            self.hits,
        )
        db.executemany(
            "INSERT INTO rounds (table_id, round, seq, status, summary) VALUES (?, ?, ?, ?, ?)",
            self.rounds,
        )
        db.executemany(
            "INSERT INTO held_hits (table_id, round, seq, pool_id, utc, meter_at_hit, reason,"
            " body, status, delivered) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (table_id, round) DO NOTHING",
            self.held_hits,
        )
        # Parked rows up to where each table now stands are applied (or were stale copies);
        # what this batch parked beyond it is written.
        db.executemany("DELETE FROM parked WHERE table_id = ? AND seq <= ?",
                       [(t, self.tables[t].last_seq) for t in sorted(self.drained)])
        db.executemany(
            "INSERT INTO parked (table_id, seq, body, utc) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (table_id, seq) DO NOTHING",
            [(table_id, seq, text, self.utc) for table_id, parked in self.parking.items()
             for seq, text in sorted(parked.items()) if seq > self.tables[table_id].last_seq])
        for pool_id in sorted(self.dirty_pools):
            pool = self.pools[pool_id]
            assert pool is not None
            self.ledger._write_pool(pool)
        for pool_id, pending in sorted(self.pending.items()):
            if not pending.changes:
                continue
            pool = self.pools[pool_id]
            assert pool is not None
            # The batch's wagers at the pool's rates (locked FOR KEY SHARE: unchanged), exact:
            # the sum of each contribution's parts.
            pending.meter = pending.wagers * pool.params.increment
            pending.reserve = pending.wagers * pool.params.hidden
            try:  # the books after this batch, every share included
                pool.contributed(*pending.parts()).check()
            except ConservationError:
                raise _Exclusive(pool_id) from None  # again, message by message: it stops
            own = self.own[pool_id]
            own.add(*pending.parts())
            db.execute("UPDATE pool_shares SET meter = ?, reserve = ?, wagers_in = ?,"
                       " changes = ? WHERE pool_id = ? AND shard = ?",
                       (str(own.meter), str(own.reserve), own.wagers, own.changes, pool_id,
                        self.ledger.shard))
            self.shared_changed.add(pool_id)
        now = self.ledger.clock()
        db.executemany(  # one statement, many rows: psycopg pipelines them
            "UPDATE tables SET last_seq = ?, pool_id = ?, last_seen_utc = ?,"
            " last_seen_epoch = ?, state = CASE WHEN state = 'unknown' THEN 'online'"
            " ELSE state END, journal_seq = ?, chain_seq = ?, chain_hash = ?"
            " WHERE id = ?",
            [(t.last_seq, t.pool_id, self.utc, now, t.journal_seq, t.last_seq, t.chain_hash,
              t.id) for t in self.tables.values() if t.dirty],
        )
