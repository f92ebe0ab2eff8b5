"""Tables' archived journal segments held at head office (docs/journal.md "Segments, archive,
retention", docs/mqtt.md "segment").

A table sends each archived segment's number, seq range, the chain hash before it (`prev`) and
after it (`head`), and the archive's sha256 and size, until head office answers. Head office
checks it against what it knows of that table's chain before it holds it:

- **exact**: where it has ledgered an outbox message written by the segment's last record
  (`journal_seq == last`, carrying `journal_hash`), that hash must be the segment's head;
- **chained**: the segment must follow on from the one before it that head office holds
  (`prev` is its `head`, `first` is its `last` + 1). The first segment head office hears of
  from a table (segment 1, or the first after a ledger was started afresh) has no predecessor
  to check: it is held on the exact check alone, or on none (`checked = 'first'`).

A mismatch (the head is not the chain head the table's messages carried, a broken chain, or a
segment resent with another head or digest) is refused, alarmed and counted; head office then
answers `refused`, and the table prunes nothing of it. The answer `held` is what lets the
table's retention prune the segment (the table checks head and digest again: an answer that is
not exactly what it archived is refused there too).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shared.clock import utc_now
from shared.link import contract

if TYPE_CHECKING:
    from headoffice.ledger import Ledger

log = logging.getLogger("tablectl.headoffice")

_FIELDS = ("first", "last", "prev", "head", "digest")
_COLS = ("first_seq", "last_seq", "prev", "head", "digest")
_BISECT_MAX = 64  # queries to find the message of a journal seq (2**64 messages: never)


@dataclass
class SegmentResult:
    answers: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (table, ack)
    held: int = 0
    refused: int = 0  # mismatches: alarmed (a resend of one is answered, not alarmed again)
    repeated: int = 0  # resends of a segment already decided
    unknown: list[str] = field(default_factory=list)  # tables not enrolled: no answer


def apply_segments(ledger: Ledger, items: list[tuple[str, dict[str, Any]]]) -> SegmentResult:
    """Check and store each (table, parsed segment message), in one transaction; the answers
    are published by the caller once it committed."""
    result = SegmentResult()
    with ledger.db.transaction():
        for table, body in items:
            answer = _one(ledger, table, body, result)
            if answer is not None:
                result.answers.append((table, answer))
    return result


def _one(ledger: Ledger, table: str, body: dict[str, Any], result: SegmentResult
         ) -> dict[str, Any] | None:
    db = ledger.db
    number = body["segment"]
    row = db.one("SELECT enrolled FROM tables WHERE id = ?", (table,))
    if row is None or not row["enrolled"]:
        result.unknown.append(table)
        return None
    old = db.one("SELECT * FROM segments WHERE table_id = ? AND number = ?", (table, number))
    if old is not None:
        if all(old[c] == body[f] for f, c in zip(_FIELDS, _COLS, strict=True)):
            result.repeated += 1  # the answer was lost: the same one again
            return _answer(table, body, old["status"], old["reason"])
        return _refuse(ledger, table, body, result, store=False, reason=(
            f"segment {number} differs from the one held ({_diff(old, body)}): the table's "
            "journal was rewritten or forked"))
    checked, why = _check(ledger, table, body)
    if why is not None:
        return _refuse(ledger, table, body, result, store=True, reason=why)
    _store(ledger, table, body, checked, "held", None)
    result.held += 1
    return _answer(table, body, "held", None)


def _check(ledger: Ledger, table: str, body: dict[str, Any]) -> tuple[str, str | None]:
    """('exact' | 'chained' | 'first', None), or (_, why it is refused)."""
    db = ledger.db
    number, first, last = body["segment"], body["first"], body["last"]
    before = db.one("SELECT * FROM segments WHERE table_id = ? AND number < ? AND status = ?"
                    " ORDER BY number DESC LIMIT 1", (table, number, "held"))
    checked = "first"
    if before is not None:
        if before["number"] != number - 1:
            return checked, (f"segment {number} follows segment {before['number']}: "
                             f"segment {number - 1} was never held")
        if before["head"] != body["prev"] or before["last_seq"] + 1 != first:
            return checked, (f"segment {number} (seq {first}..{last}) does not follow on "
                             f"from segment {before['number']} (seq ..{before['last_seq']}, "
                             f"head {before['head'][:16]}...): a broken chain")
        checked = "chained"
    elif number != 1 and db.one("SELECT 1 AS x FROM segments WHERE table_id = ? AND status = ?"
                                " LIMIT 1", (table, "held")) is not None:
        return checked, f"segment {number} comes before the segments held"
    seen = _hash_at(ledger, table, last)
    if seen is not None:
        if seen != body["head"]:
            return checked, (f"segment {number}'s head {body['head'][:16]}... is not the chain "
                             f"hash {seen[:16]}... the table's messages carried at seq {last}")
        checked = "exact" if checked == "first" else "exact+chained"
    return checked, None


def _hash_at(ledger: Ledger, table: str, seq: int) -> str | None:
    """The `journal_hash` of a ledgered message of `table` written by journal record `seq`
    (None: head office has none). Messages' journal seqs never go back (the ledger alarms if
    they do), so a bisection over the table's message numbers finds it in a few queries."""
    db = ledger.db
    t = db.one("SELECT chain_seq, chain_hash FROM tables WHERE id = ?", (table,))
    if t is not None and t["chain_seq"] == seq and t["chain_hash"]:
        return str(t["chain_hash"])
    bounds = db.one("SELECT MIN(seq) AS lo, MAX(seq) AS hi FROM messages WHERE table_id = ?",
                    (table,))
    if bounds is None or bounds["lo"] is None:
        return None
    lo, hi = int(bounds["lo"]), int(bounds["hi"])
    for _ in range(_BISECT_MAX):
        if lo > hi:
            return None
        mid = (lo + hi) // 2
        row = db.one("SELECT seq, body FROM messages WHERE table_id = ? AND seq >= ? "
                     "ORDER BY seq LIMIT 1", (table, mid))
        if row is None:
            hi = mid - 1
            continue
        try:
            msg = json.loads(row["body"])
            at = int(msg.get("journal_seq", 0))
        except (ValueError, TypeError, AttributeError):
            return None  # a body the ledger kept refused: nothing to compare with
        if at == seq:
            h = msg.get("journal_hash")
            return h if isinstance(h, str) else None
        if at < seq:
            lo = int(row["seq"]) + 1
        else:
            hi = mid - 1
    return None


def _refuse(ledger: Ledger, table: str, body: dict[str, Any], result: SegmentResult, *,
            store: bool, reason: str) -> dict[str, Any]:
    text = f"table {table}: journal segment refused: {reason}"
    ledger.alarm(text, None, table, kind="chain_mismatch")
    result.refused += 1
    if store:
        _store(ledger, table, body, "mismatch", "refused", reason)
    return _answer(table, body, "refused", reason)


def _store(ledger: Ledger, table: str, body: dict[str, Any], checked: str, status: str,
           reason: str | None) -> None:
    ledger.db.execute(
        "INSERT INTO segments (table_id, number, first_seq, last_seq, prev, head, digest, size,"
        " first_round, last_round, closed_utc, received_utc, checked, status, reason)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (table, body["segment"], body["first"], body["last"], body["prev"], body["head"],
         body["digest"], body["size"], body["rounds"][0], body["rounds"][1],
         body["closed_utc"], utc_now(), checked, status, reason))


def _answer(table: str, body: dict[str, Any], status: str, reason: str | None
            ) -> dict[str, Any]:
    return contract.segment_ack_message(table, body["segment"], body["head"], body["digest"],
                                        status, reason)


def _diff(old: dict[str, Any], body: dict[str, Any]) -> str:
    return ", ".join(f for f, c in zip(_FIELDS, _COLS, strict=True) if old[c] != body[f])


def held(ledger: Ledger, table: str) -> list[dict[str, Any]]:
    """The segments of `table` head office holds or refused, oldest first (for an auditor)."""
    return ledger.db.execute("SELECT * FROM segments WHERE table_id = ? ORDER BY number",
                             (table,))
