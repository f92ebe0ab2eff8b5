"""CSV exports for an auditor: paid hits, the parameter log, closed shifts' meters, the audit
trail. One header row, then one row per record, newest first; money in integer cents (columns
named `..._cents`); every time both as stored (UTC, ISO 8601) and in the casino's time zone
(`..._local`); a payout's hand in words ("box 1 Royal Flush 5000000"). A text cell that a
spreadsheet would run as a formula (starting with = + - @ or a tab) is written with a leading
apostrophe: table-controlled strings reach these files.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from typing import Any
from zoneinfo import ZoneInfo

from headoffice import meters as ho_meters
from headoffice.audit import MAX_ROWS, Entry
from headoffice.db import Database
from headoffice.hits import hand_in_words
from headoffice.localtime import local_time

HITS_COLUMNS = ("pool_id", "hit_no", "table_id", "round", "seq", "utc", "local_time",
                "pool_before_cents", "pool_after_cents", "paid_cents", "seed_from_house_cents",
                "payouts", "held_hit", "released_by", "released_utc")
PARAMS_COLUMNS = ("pool_id", "entry_no", "utc", "local_time", "operator", "action", "forced",
                  "outcome", "live_tables", "old", "new")
METERS_COLUMNS = ("table_id", "shift", "seq", "opened_utc", "opened_local", "closed_utc",
                  "closed_local", "rounds_played", "rounds_voided", "wagers_cents",
                  "payouts_cents", "commission_cents", "jackpot_in_cents", "jackpot_paid_cents",
                  "house_win_cents", "incomplete")
TRAIL_COLUMNS = ("utc", "local_time", "action", "person", "table_id", "pool_id", "subject",
                 "detail")


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return "" if value is None else value


def to_csv(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()


def hits_csv(db: Database, tz: ZoneInfo) -> str:
    """Every paid hit, with who released it when it was held."""
    held = {(r["table_id"], int(r["round"])): r for r in db.execute(
        "SELECT hold_no, table_id, round, operator, decided_utc FROM held_hits"
        " WHERE status = 'approved'")}
    rows = []
    for h in db.execute("SELECT * FROM hits ORDER BY utc DESC, pool_id, hit_no DESC LIMIT ?",
                        (MAX_ROWS,)):
        payouts = json.loads(h["award"]).get("payouts", [])
        by = held.get((h["table_id"], int(h["round"])))
        rows.append((h["pool_id"], h["hit_no"], h["table_id"], h["round"], h["seq"], h["utc"],
                     local_time(h["utc"], tz), h["pool_before"], h["pool_after"], h["paid"],
                     h["seed_from_house"],
                     "; ".join(f"box {p['box']} {hand_in_words(p['award'])} {p['amount']}"
                               for p in payouts),
                     "" if by is None else by["hold_no"], "" if by is None else by["operator"],
                     "" if by is None else by["decided_utc"]))
    return to_csv(HITS_COLUMNS, rows)


def params_csv(db: Database, tz: ZoneInfo) -> str:
    """The parameter log, every pool's entries, newest first."""
    rows = [(r["pool_id"], r["entry_no"], r["utc"], local_time(r["utc"], tz), r["operator"],
             r["action"], "yes" if r["forced"] else "no", r["outcome"], r["live_tables"],
             r["old"], r["new"])
            for r in db.execute("SELECT * FROM param_log ORDER BY utc DESC, pool_id,"
                                " entry_no DESC LIMIT ?", (MAX_ROWS,))]
    return to_csv(PARAMS_COLUMNS, rows)


def meters_csv(db: Database, tz: ZoneInfo) -> str:
    """Every closed shift's headline figures, newest first."""
    rows = []
    for s in ho_meters.shift_meters(db, None, ho_meters.MAX_SHIFTS):
        h = ho_meters.headline(s)
        rows.append((h["table"], h["shift"], h["seq"], h["opened_utc"],
                     local_time(h["opened_utc"], tz), h["closed_utc"],
                     local_time(h["closed_utc"], tz), h["rounds_played"], h["rounds_voided"],
                     h["wagers"], h["payouts"], h["commission"], h["jackpot_contributions"],
                     h["jackpot_awards"], h["house_win"], h["incomplete"] or ""))
    return to_csv(METERS_COLUMNS, rows)


def trail_csv(entries: Iterable[Entry], tz: ZoneInfo) -> str:
    """The audit trail's entries as given (`audit.trail`, already filtered)."""
    return to_csv(TRAIL_COLUMNS, [
        (e["utc"], local_time(e["utc"], tz), e["action"], e["person"], e["table_id"],
         e["pool_id"], e["subject"], e["detail"]) for e in entries])
