"""The audit trail: who did what at head office, and when.

Read from where each record is kept, never copied: logins, failed logins, logouts and alarm
acknowledgements from the `audit` table (db.py); approvals and refusals of held hits from
`held_hits`; parameter actions (create, set applied or refused, resume) from `param_log`; each
signature of a two-person decision from `decisions`; decisions on Player Cards from
`card_log`. Each
source is one function of `SOURCES` that reads its rows with the filters in its own SQL and
gives `Entry`s; the trail is their union, newest first. Adding a source is one function.

Times are stored in UTC (ISO 8601, `...Z`) and shown in the casino's time zone (headoffice.toml
`[service] time_zone`): `local_time`, and `to_utc` for a date a person types.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from headoffice.console.money import param_changes
from headoffice.db import Database
from headoffice.localtime import next_day_utc, to_utc
from shared.errors import InputError
from shared.money import dollars

MAX_ROWS = 5000  # entries a page or an export shows at most (newest first)
TABLE = re.compile(r"[A-Za-z0-9_-]{1,32}")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
FIELDS = ("utc", "action", "person", "table_id", "pool_id", "subject", "detail")


@dataclass(frozen=True)
class Filter:
    """What the trail is narrowed to: a table, a person, [since, until) in stored UTC."""

    table: str | None = None
    person: str | None = None
    since: str | None = None
    until: str | None = None

    @classmethod
    def of(cls, tz: ZoneInfo, *, table: str | None = None, person: str | None = None,
           since: str | None = None, until: str | None = None) -> Filter:
        """From what a person typed (empty: no filter); InputError says which field is wrong."""
        table = (table or "").strip() or None
        person = (person or "").strip() or None
        if table is not None and not TABLE.fullmatch(table):
            raise InputError(f"table: 1-32 of A-Z a-z 0-9 _ -, got {table[:40]!r}")
        if person is not None and (len(person) > 64 or CONTROL.search(person)):
            raise InputError("person: one line of at most 64 characters")
        since, until = (since or "").strip(), (until or "").strip()
        lo = to_utc(since, tz, "since") if since else None
        hi = to_utc(until, tz, "until") if until else None
        if hi is not None and len(until) == 10:  # a date alone: up to the end of that day
            hi = next_day_utc(datetime.fromisoformat(until), tz)
        return cls(table, person, lo, hi)

    def where(self, cols: dict[str, str | None]) -> tuple[str, list[Any]] | None:
        """A WHERE clause over a source's columns (`cols`: field -> column, None: the source
        has none); None when the filter cannot match any of its rows."""
        parts, args = [], []
        for value, field, op in ((self.table, "table_id", "="), (self.person, "person", "="),
                                 (self.since, "utc", ">="), (self.until, "utc", "<")):
            if value is None:
                continue
            col = cols.get(field)
            if col is None:
                return None
            parts.append(f"{col} {op} ?")
            args.append(value)
        return (" AND ".join(parts) or "1 = 1"), args


Entry = dict[str, Any]  # FIELDS


def _own(db: Database, f: Filter) -> list[Entry]:
    """Logins, failed logins, logouts, alarm acknowledgements."""
    w = f.where({"table_id": "table_id", "person": "person", "utc": "utc"})
    if w is None:
        return []
    return db.execute(f"SELECT utc, action, person, table_id, pool_id, subject, detail"
                      f" FROM audit WHERE {w[0]} ORDER BY utc DESC LIMIT ?",
                      [*w[1], MAX_ROWS])


def _held_hits(db: Database, f: Filter) -> list[Entry]:
    """Approvals and refusals of held hits, with the note or reason and what was paid."""
    w = f.where({"table_id": "table_id", "person": "operator", "utc": "decided_utc"})
    if w is None:
        return []
    rows = db.execute(
        "SELECT hold_no, table_id, pool_id, round, status, operator, decided_utc, note, award"
        f" FROM held_hits WHERE status <> 'pending' AND {w[0]} ORDER BY decided_utc DESC"
        " LIMIT ?", [*w[1], MAX_ROWS])
    out = []
    for r in rows:
        paid = ""
        if r["award"]:
            cents = sum(int(p["amount"]) for p in json.loads(r["award"])["payouts"])
            paid = f"paid {dollars(cents)}; "
        out.append({"utc": r["decided_utc"], "action": f"hit_{r['status']}",
                    "person": r["operator"], "table_id": r["table_id"], "pool_id": r["pool_id"],
                    "subject": f"held hit #{r['hold_no']} round {r['round']}",
                    "detail": f"{paid}{'note' if r['status'] == 'approved' else 'reason'}:"
                              f" {r['note'] or ''}"})
    return out


def _param_log(db: Database, f: Filter) -> list[Entry]:
    """Every pool's parameter actions, applied or refused (a pool's, not a table's: none when
    the trail is narrowed to a table)."""
    w = f.where({"table_id": None, "person": "operator", "utc": "utc"})
    if w is None:
        return []
    rows = db.execute("SELECT pool_id, entry_no, utc, operator, action, forced, outcome, old,"
                      f" new FROM param_log WHERE {w[0]} ORDER BY utc DESC LIMIT ?",
                      [*w[1], MAX_ROWS])
    return [{"utc": r["utc"], "action": f"param_{r['action']}", "person": r["operator"],
             "table_id": None, "pool_id": r["pool_id"],
             "subject": f"pool {r['pool_id']} entry #{r['entry_no']}",
             "detail": f"{r['outcome']}{' (forced)' if r['forced'] else ''}"
                       f"{_changed(r['old'], r['new'])}"} for r in rows]


def _changed(old: str | None, new: str | None) -> str:
    """What a parameter change changes, in words, as the console and `pool set` show it:
    "; seed $5,000.00 -> $6,000.00"."""
    if not old or not new:
        return ""
    rows = param_changes(json.loads(old), json.loads(new))
    return "; " + ", ".join(f"{what} {a} -> {b}" for what, a, b in rows) if rows else \
        "; no change"


def _signatures(db: Database, f: Filter) -> list[Entry]:
    """Each signature of a two-person decision (dual control: a large award, a forced change
    on a live pool) as its own entry, so each person's part is theirs in the trail; the
    outcome itself is the held hit's or the parameter log's entry. One-person decisions are
    those sources' alone."""
    rows = db.execute("SELECT decision_no, kind, subject, status, detail, first_by, first_utc,"
                      " first_reason, second_by, second_utc, second_reason FROM decisions"
                      " WHERE signatures = 2 ORDER BY decision_no DESC LIMIT ?", (MAX_ROWS,))
    out: list[Entry] = []
    for r in rows:
        detail = json.loads(r["detail"] or "{}")
        table = detail.get("table") if r["kind"] == "hit" else None
        pool = detail.get("pool") if r["kind"] == "hit" else r["subject"]
        what = (f"held hit #{r['subject']}" if r["kind"] == "hit"
                else f"pool {r['subject']} parameters")
        signed = [(r["first_by"], r["first_utc"], r["first_reason"], "first approval")]
        if r["second_by"]:
            second = "refusal" if r["status"] == "refused" else "second approval"
            signed.append((r["second_by"], r["second_utc"], r["second_reason"], second))
        for person, utc, reason, step in signed:
            entry = {"utc": utc, "action": f"{r['kind']}_{step.replace(' ', '_')}",
                     "person": person, "table_id": table, "pool_id": pool,
                     "subject": f"decision #{r['decision_no']}: {what}",
                     "detail": f"{step} (two needed; now {r['status']}); reason: {reason}"}
            if ((f.table is None or f.table == table) and (f.person is None or f.person == person)
                    and (f.since is None or utc >= f.since)
                    and (f.until is None or utc < f.until)):
                out.append(entry)
    return out


def _card_log(db: Database, f: Filter) -> list[Entry]:
    """Decisions on Player Cards (headoffice/ledger/cards.py): a person's at head office (added, a
    Loss Limit, a restriction, lifted, invalidated) and a supervisor's restriction at a table
    (UTH 13.4, `by` as the table sent it: login@table). Head office's own refusals and the
    chips players declared are the card's view, not people's decisions."""
    w = f.where({"table_id": "table_id", "person": "person", "utc": "utc"})
    if w is None:
        return []
    rows = db.execute("SELECT log_no, utc, card_id, action, person, table_id, detail"
                      f" FROM card_log WHERE action IN {_CARD_DECISIONS} AND {w[0]}"
                      " ORDER BY log_no DESC LIMIT ?", [*w[1], MAX_ROWS])
    return [{"utc": r["utc"], "action": f"card_{r['action']}", "person": r["person"],
             "table_id": r["table_id"], "pool_id": None,
             "subject": f"card {r['card_id']}", "detail": r["detail"]} for r in rows]


_CARD_DECISIONS = "('added', 'limit', 'restricted', 'unrestricted', 'invalidated')"

SOURCES: list[Callable[[Database, Filter], list[Entry]]] = [_own, _held_hits, _param_log,
                                                            _signatures, _card_log]


def trail(db: Database, f: Filter = Filter(), limit: int = MAX_ROWS) -> list[Entry]:
    """The trail, newest first (ties: in SOURCES order), at most `limit` entries."""
    entries = [e for source in SOURCES for e in source(db, f)]
    entries.sort(key=lambda e: e["utc"] or "", reverse=True)
    return [{k: e.get(k) for k in FIELDS} for e in entries[:limit]]

