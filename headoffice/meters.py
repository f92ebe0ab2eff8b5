"""Each table's shift meters at head office: the `shift_meters` outbox messages a table sends
when a shift closes (`tablectl meters close-shift`, docs/operations.md "Meters").

The ledger stores every outbox message it applies, checked against the contract
(`contract.check_outbox_payload`), in its `messages` table; a shift close moves no money, so
applying one is storing it. This module reads them back: the closing figures per table and
shift, newest first, and each shift's headline (what the console and `tablectl-headoffice meters`
show).
"""

from __future__ import annotations

import json
from typing import Any

from controller.meters import SHIFT_METERS, incomplete_words
from headoffice.db import Database
from shared.link.contract import SchemaError, check_outbox_payload

MAX_SHIFTS = 500  # shifts one query returns at most


def shift_meters(db: Database, table: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """The shifts closed at the tables (one table's with `table`), newest first: each with the
    table, the message's seq, when it was received and the closing figures."""
    limit = max(1, min(limit, MAX_SHIFTS))
    where = "type = ? AND status = 'applied'" + (" AND table_id = ?" if table else "")
    params: list[Any] = [SHIFT_METERS, *([table] if table else []), limit]
    rows = db.execute(
        f"SELECT table_id, seq, body, utc FROM messages WHERE {where}"
        " ORDER BY utc DESC, seq DESC LIMIT ?",
        params,
    )
    out = []
    for row in rows:
        try:
            payload = check_outbox_payload(SHIFT_METERS, json.loads(row["body"])["payload"])
        except (SchemaError, ValueError, KeyError, TypeError):
            continue  # stored before this build's checks: not shown as figures
        out.append({"table": row["table_id"], "seq": row["seq"], "received_utc": row["utc"],
                    **payload})
    return out


def headline(s: dict[str, Any]) -> dict[str, Any]:
    """One closed shift (as `shift_meters` gives it) in the figures a person reads: the
    headline totals in integer cents, and its wagers and payouts by wager type."""
    f = s["figures"]
    return {
        "table": s["table"], "shift": s["shift"], "seq": s["seq"],
        "opened_utc": s.get("opened_utc"), "closed_utc": s["closed_utc"],
        "rounds_played": f["rounds_played"], "rounds_voided": f["rounds_voided"],
        "wagers": sum(f["wagers"].values()), "payouts": sum(f["payouts"].values()),
        "commission": f["commission"], "jackpot_contributions": f["jackpot_contributions"],
        "jackpot_awards": f["jackpot_awards"], "house_win": f["house_win"],
        "by_type": [(kind, f["wagers"].get(kind, 0), f["payouts"].get(kind, 0))
                    for kind in sorted(set(f["wagers"]) | set(f["payouts"]))],
        "incomplete": lacking(s),
    }


def lacking(s: dict[str, Any]) -> str | None:
    """What a closed shift's figures lack, in words (None: the table sent them as whole).

    A table that replayed its meters from a journal pruned by retention counts no round of the
    pruned records (docs/operations.md "Meters"); its close says so (`incomplete`, checked by
    the contract), and this is the line the console and the command show beside the figures,
    so that nobody reads such a shift as whole."""
    d = s.get("incomplete")
    if d is None:
        return None
    return incomplete_words(d, f"the table's journal records 1..{d['missing_through']} were "
                               "pruned before its meters were replayed")
