"""Pools and their parameters: reading a pool (its row plus every writer's share), creating it,
changing its parameters, resuming it, writing it back with the shares folded in, and the
audit trail of every attempt."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from headoffice.db import Database
from headoffice.hits import HitPolicy
from headoffice.ledger import common
from headoffice.ledger.common import (
    LedgerError,
    _with_shares,
    force_bool,
    log,
)
from headoffice.ledger.decisions import authorised as authorised_
from headoffice.ledger.decisions import reason_of
from headoffice.pools import ConservationError, Params, Pool
from shared.errors import InputError


@dataclass(frozen=True)
class ParamChange:
    """What `set_params` / `approve_change` did: `status` "applied", or "pending" (a first
    approval under dual control, decision `decision_no`, waits for a second approver);
    `first_by` the first approver when two signed."""

    old: Params
    new: Params
    status: str
    decision_no: int
    first_by: str | None


class LedgerPools:
    """Ledger: pools, parameters and their audit trail."""

    db: Database
    clock: Any
    policy: HitPolicy
    shard: str

    def pool(self, pool_id: str) -> Pool | None:
        found = self._read_pools(" WHERE p.id = ?", (pool_id,))
        return found[0] if found else None

    def pools(self) -> list[Pool]:
        return self._read_pools()

    def param_entries(self) -> int:
        """How many parameter actions (create, set, resume) the ledger holds: a worker that
        sees it grow republishes the pools (headoffice/notify.py)."""
        row = self.db.one("SELECT COUNT(*) AS n FROM param_log")
        assert row is not None
        return int(row["n"])

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
    def set_params(
        self,
        pool_id: str,
        changes: dict[str, Any],
        *,
        operator: str,
        authorised: Iterable[str],
        reason: str,
        force: bool = False,
        live_window_s: float = 60.0,
    ) -> ParamChange:
        """Change a pool's parameters, with a reason, by an operator in `authorised`. Refused
        while tables are live on the pool unless `force`; a forced change on a pool with
        live tables is dual control: this first approval is recorded (a pending decision,
        `approve_change`) and nothing changes until a second, different operator approves it.
        Every attempt is logged (param_log) with old and new."""
        why_given = reason_of(reason)
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
            elif operator not in set(authorised):
                why = (f"operator {operator!r} is not authorised to change parameters (not in"
                       " head office's [service] operators)")
            elif new == old:
                why = "nothing changes: the new values are the pool's own"
            if why is None:
                try:
                    pool = pool.with_params(new)
                except ConservationError as exc:
                    why = str(exc)
            if why is not None:
                self._param_log(pool_id, operator, "set", force, f"refused: {why}", live, old, new)
            elif live:  # forced on a live pool: dual control
                detail = {"old": old.as_json(), "new": new.as_json(), "live": live}
                no = self._first_signature(
                    "params", pool_id, status="pending", signatures=2, operator=operator,
                    reason=why_given, amount=None, detail=detail,
                    outcome="first approval: waits for a second, different approver")
                self._param_log(pool_id, operator, "set", force,
                                f"pending: first approval of decision #{no}, waits for a second"
                                f" approver; reason: {why_given}", live, old, new)
                self.alarm(f"pool {pool_id}: forced parameter change with tables live"
                           f" ({', '.join(live)}): first approval by {operator} (decision"
                           f" #{no}), waits for a second approver", pool_id, None,
                           kind="param_change", subject=f"decision {no}")
                return ParamChange(old, new, "pending", no, operator)
            else:
                no = self._first_signature(
                    "params", pool_id, status="approved", signatures=1, operator=operator,
                    reason=why_given, amount=None,
                    detail={"old": old.as_json(), "new": new.as_json(), "live": live},
                    outcome="applied")
                self._write_pool(pool)
                self._param_log(pool_id, operator, "set", force,
                                f"applied: decision #{no}; reason: {why_given}", live, old, new)
        if why is not None:
            raise LedgerError(why)
        log.warning("pool %s parameters changed by %s: %s -> %s", pool_id, operator,
                    old.as_json(), new.as_json())
        return ParamChange(old, new, "applied", no, None)

    def approve_change(self, decision_no: int, *, operator: str, authorised: Iterable[str],
                       reason: str, live_window_s: float = 60.0) -> ParamChange:
        """The second approval of a forced parameter change (dual control): applied as the
        first approver saw it, by a different operator, with a reason; lapsed (LedgerError)
        if the pool's parameters changed since the first approval."""
        why_given = reason_of(reason)
        authorised_(operator, authorised, "approve a parameter change")
        lapsed = None
        with self.db.transaction():
            first, pool = self._pending_change(decision_no)
            pool_id = pool.id
            self._not_twice(first, operator, f"the parameter change of pool {pool_id}")
            old = pool.params
            new = Params.from_json(first["detail"]["new"])
            live = self.live_tables(pool_id, live_window_s)
            who = f"{first['first_by']} and {operator}"
            if old.as_json() != first["detail"]["old"]:
                lapsed = (f"the parameters of pool {pool_id} changed since the first approval"
                          f" (decision #{decision_no}): start again")
            else:
                try:
                    pool = pool.with_params(new)
                except ConservationError as exc:
                    lapsed = f"cannot be applied now: {exc}"
            if lapsed is not None:
                self._lapse(decision_no, lapsed)
                self._param_log(pool_id, who, "set", True, f"refused: {lapsed}", live, old, new)
            else:
                self._second_signature(decision_no, status="approved", operator=operator,
                                       reason=why_given, outcome="applied")
                self._write_pool(pool)
                self._param_log(pool_id, who, "set", True,
                                f"applied: decision #{decision_no}, second approval; reasons:"
                                f" {first['first_reason']} / {why_given}", live, old, new)
        if lapsed is not None:
            raise LedgerError(lapsed)
        log.warning("pool %s parameters changed by %s: %s -> %s", pool_id, who, old.as_json(),
                    new.as_json())
        return ParamChange(old, new, "applied", decision_no, first["first_by"])

    def refuse_change(self, decision_no: int, *, operator: str, authorised: Iterable[str],
                      reason: str) -> None:
        """End a pending parameter change: nothing changes; who, when and why recorded."""
        why_given = reason_of(reason)
        authorised_(operator, authorised, "refuse a parameter change")
        with self.db.transaction():
            first, pool = self._pending_change(decision_no)
            self._second_signature(decision_no, status="refused", operator=operator,
                                   reason=why_given, outcome="refused")
            self._param_log(pool.id, operator, "set", True,
                            f"refused: decision #{decision_no} by {operator}: {why_given}",
                            first["detail"]["live"], pool.params,
                            Params.from_json(first["detail"]["new"]))

    def _pending_change(self, decision_no: int) -> tuple[dict[str, Any], Pool]:
        """The pending parameter change and its pool, locked (inside a transaction): the
        decision is read again under the pool's lock, so two second approvals, or an approval
        and a refusal, at once are decided one after the other."""
        row = self.decision(decision_no)  # type: ignore[attr-defined]
        if row is None or row["kind"] != "params":
            raise LedgerError(f"no parameter change #{decision_no}")
        pool = self._locked_pool(row["subject"])
        if pool is None:
            raise LedgerError(f"no pool {row['subject']!r}")
        row = self.decision(decision_no)  # type: ignore[attr-defined]  # as now committed
        assert row is not None
        if row["status"] != "pending":
            raise LedgerError(f"parameter change #{decision_no} was already {row['status']}")
        return row, pool

    def resume_pool(self, pool_id: str, *, operator: str, authorised: Iterable[str],
                    reason: str) -> Pool:
        """Restart a stopped pool once its books balance again (after an investigation), by an
        operator in `authorised`, with a reason (what the investigation found): who, when and
        why are in the parameter log and the audit trail."""
        why = reason_of(reason)
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
            self._param_log(pool_id, operator, "resume", False, f"applied: reason: {why}", [],
                            None, None)
            return pool

    def _write_pool(self, pool: Pool, insert: bool = False) -> int:
        """Update the pool's row, or insert it (nothing if it exists): the rows written.
        `pool` is `_locked_pool`'s (its shares added): the shares are now in the row, and
        emptied in the same transaction."""
        row = {**pool.row(), "updated_utc": common.utc_now()}
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
                pool_id, int(last["n"]) + 1, common.utc_now(), operator, action, force_bool(forced),
                outcome, json.dumps(live),
                None if old is None else json.dumps(old.as_json(), sort_keys=True),
                None if new is None else json.dumps(new.as_json(), sort_keys=True),
            ),
        )
        applied = outcome == "applied" or outcome.startswith("applied:")
        if applied and action == "set":  # an event someone acknowledges
            self.alarm(f"pool {pool_id} parameters changed by {operator}"
                       f"{' (forced, tables live: ' + ', '.join(live) + ')' if forced else ''}",
                       pool_id, kind="param_change", subject=f"entry {int(last['n']) + 1}")
        elif applied and action == "resume":  # the stopped pool balances again
            self.clear_alarm("conservation", pool_id)
