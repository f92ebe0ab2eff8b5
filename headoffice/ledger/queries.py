"""Reading the ledger: awards, the report, a table's totals, the parameter audit trail, alarms."""

from __future__ import annotations

import json
from typing import Any

from headoffice.db import Database
from headoffice.hits import HitPolicy
from headoffice.ledger.common import LAST_ALARMS, LAST_HITS


class LedgerQueries:
    """Ledger: what the console, the CLI and the worker read."""

    db: Database
    clock: Any
    policy: HitPolicy
    shard: str

    def award_for(self, table: str, round_: int) -> dict[str, Any] | None:
        row = self.db.one(
            "SELECT award FROM hits WHERE table_id = ? AND round = ?", (table, round_)
        )
        return None if row is None else json.loads(row["award"])
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

    def param_log(self, pool_id: str | None = None) -> list[dict[str, Any]]:
        """The parameter audit trail in the order it was made: each pool's entries by
        `entry_no` (1, 2, 3 ...), pools one after the other by id. `utc` is informative only:
        it does not order entries (a millisecond holds several; clocks step)."""
        if pool_id is None:
            return self.db.execute("SELECT * FROM param_log ORDER BY pool_id, entry_no")
        return self.db.execute("SELECT * FROM param_log WHERE pool_id = ? ORDER BY entry_no",
                               (pool_id,))
