"""Pools and their parameters: reading a pool (its row plus every writer's share), creating it,
changing its parameters, resuming it, writing it back with the shares folded in, and the
audit trail of every attempt."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from controller.errors import InputError
from headoffice.db import Database
from headoffice.hits import HitPolicy
from headoffice.ledger import common
from headoffice.ledger.common import (
    LedgerError,
    _with_shares,
    force_bool,
    log,
)
from headoffice.pools import ConservationError, Params, Pool


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
        force: bool = False,
        live_window_s: float = 60.0,
    ) -> tuple[Params, Params]:
        """Change a pool's parameters. Refused while tables are live on the pool unless
        `force` by an operator in `authorised`; every attempt is logged with old and new."""

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
        if outcome == "applied" and action == "set":  # an event someone acknowledges
            self.alarm(f"pool {pool_id} parameters changed by {operator}"
                       f"{' (forced, tables live: ' + ', '.join(live) + ')' if forced else ''}",
                       pool_id, kind="param_change", subject=f"entry {int(last['n']) + 1}")
        elif outcome == "applied" and action == "resume":  # the stopped pool balances again
            self.clear_alarm("conservation", pool_id)
