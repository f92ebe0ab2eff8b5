"""The decisions people at head office make, and their signatures (the `decisions` table, db.py).

A held hit is released, or refused, only by a person authenticated at head office (the console's
approver, or `tablectl-headoffice` run by an OS login in `[service] operators`); the caller
authenticates them, the ledger checks they are in the operators' list and records who, when
and why. Under dual control (an award of `HitPolicy.dual_control_from` cents or more, a
forced parameter change on a pool with live tables) the first approval is recorded and leaves
the decision pending; a second, different approver completes it. The same person twice is
refused; a refusal by either ends it; every signature needs a reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from headoffice.db import Database
from headoffice.hits import HitPolicy
from headoffice.ledger import common
from headoffice.ledger.common import LedgerError

MAX_REASON = 500  # characters of a reason kept


def reason_of(reason: str | None) -> str:
    """The reason as recorded: one non-empty line; LedgerError otherwise."""
    text = (reason or "").strip()
    if not text:
        raise LedgerError("a decision needs a reason: say why (it is recorded with your name)")
    if len(text) > MAX_REASON or any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise LedgerError(f"the reason is one line of at most {MAX_REASON} characters")
    return text


def authorised(operator: str, allowed: Iterable[str], what: str) -> None:
    if operator not in set(allowed):
        raise LedgerError(f"operator {operator!r} is not authorised to {what}"
                          " (not in head office's [service] operators)")


class LedgerDecisions:
    """Ledger: the decisions table (one row per decision, both signatures)."""

    db: Database
    policy: HitPolicy

    def decisions(self, *, pending_only: bool = False, kind: str | None = None,
                  subject: str | None = None) -> list[dict[str, Any]]:
        """Decisions in the order made (oldest first), with both signatures."""
        where, params = [], []
        if pending_only:
            where.append("status = 'pending'")
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        if subject is not None:
            where.append("subject = ?")
            params.append(subject)
        sql = "SELECT * FROM decisions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = self.db.execute(sql + " ORDER BY decision_no", params)
        for r in rows:
            r["detail"] = json.loads(r["detail"])
        return rows

    def decision(self, decision_no: int) -> dict[str, Any] | None:
        row = self.db.one("SELECT * FROM decisions WHERE decision_no = ?", (decision_no,))
        if row is not None:
            row["detail"] = json.loads(row["detail"])
        return row

    def _pending_decision(self, kind: str, subject: str) -> dict[str, Any] | None:
        """The decision on `subject` waiting for its second signature (inside a transaction
        that holds the subject's row: the held hit's, the pool's)."""
        row = self.db.one("SELECT * FROM decisions WHERE kind = ? AND subject = ?"
                          " AND status = 'pending' ORDER BY decision_no DESC LIMIT 1",
                          (kind, subject))
        if row is not None:
            row["detail"] = json.loads(row["detail"])
        return row

    def _first_signature(self, kind: str, subject: str, *, status: str, signatures: int,
                         operator: str, reason: str, amount: int | None,
                         detail: dict[str, Any], outcome: str | None = None) -> int:
        """A new decision with its first signature; its number."""
        rows = self.db.execute(
            "INSERT INTO decisions (kind, subject, status, signatures, amount, detail, first_by,"
            " first_utc, first_reason, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " RETURNING decision_no",
            (kind, subject, status, signatures, amount, json.dumps(detail, sort_keys=True),
             operator, common.utc_now(), reason, outcome))
        return int(rows[0]["decision_no"])

    def _second_signature(self, decision_no: int, *, status: str, operator: str, reason: str,
                          outcome: str) -> None:
        self.db.execute(
            "UPDATE decisions SET status = ?, second_by = ?, second_utc = ?, second_reason = ?,"
            " outcome = ? WHERE decision_no = ?",
            (status, operator, common.utc_now(), reason, outcome, decision_no))

    def _lapse(self, decision_no: int, why: str) -> None:
        self.db.execute("UPDATE decisions SET status = 'lapsed', outcome = ? WHERE"
                        " decision_no = ?", (why[:2000], decision_no))

    @staticmethod
    def _not_twice(first: dict[str, Any], operator: str, what: str) -> None:
        if first["first_by"] == operator:
            raise LedgerError(
                f"{operator} gave the first approval of {what} (decision #{first['decision_no']}"
                f" at {first['first_utc']}): dual control needs a second, different approver")
