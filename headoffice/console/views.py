"""What each page shows, read from the ledger: plain dicts for the templates and /live.json.

Money stays integer cents here; the templates format it (their `dollars` filter is
shared.money.dollars_or_dash). The pools' figures
and last 25 hits are the ledger's own report (`Ledger.report`, as `tablectl-headoffice report`
prints them); the tables' link figures are read from the ledger's tables, messages, parked and
alarms rows; each shift's meters from the stored `shift_meters` messages (headoffice/meters.py).
"""

from __future__ import annotations

import json
from typing import Any

from headoffice import hits as hitcheck
from headoffice import meters as ho_meters
from headoffice.console.money import param_changes
from headoffice.ledger import Ledger
from shared.money import dollars_or_dash

TABLE_ALARMS = 5  # per table on the tables page
SHIFTS_PER_TABLE = 20  # closed shifts per table on the meters page, newest first


def pools(ledger: Ledger) -> list[dict[str, Any]]:
    """Every pool's meters (current value, seed, reserve ...) and its last 25 hits, newest
    first (Ledger.report)."""
    report = ledger.report()
    return report["pools"]


def tables(ledger: Ledger, live_window_s: float, now: float,
           detail: bool = True) -> list[dict[str, Any]]:
    """Each enrolled or known table: link state, the last message ledgered from it, its
    outbox lag and its latest alarms.

    The link state is the table's own (`online`/`offline` from its status messages and its
    broker will), shown `stale` when online but silent for longer than `live_window_s`.
    The outbox lag is how many messages head office knows exist and has not ledgered: up to
    the last one the table reported queued at its last connect (birth: acked_upto + pending)
    or the highest received out of order and parked until a gap fills, whichever is further.
    Without `detail` (the live update) the last message and alarms are not read.
    """
    db = ledger.db
    rows = db.execute("SELECT id, pool_id, last_seq, state, last_seen_utc, last_seen_epoch,"
                      " birth, enrolled, journal_seq FROM tables ORDER BY id")
    out_of_service = {r["table_id"] for r in db.execute(
        "SELECT table_id FROM alarms WHERE kind = 'table_out_of_service'"
        " AND cleared_utc IS NULL")}
    parked = {r["table_id"]: (int(r["n"]), int(r["top"])) for r in db.execute(
        "SELECT table_id, COUNT(*) AS n, MAX(seq) AS top FROM parked GROUP BY table_id")}
    out = []
    for r in rows:
        last = db.one("SELECT seq, type, status, utc FROM messages WHERE table_id = ?"
                      " ORDER BY seq DESC LIMIT 1", (r["id"],)) if detail else None
        alarms = db.execute("SELECT alarm_no, utc, kind, severity, text FROM alarms"
                            " WHERE table_id = ? AND cleared_utc IS NULL"
                            " ORDER BY alarm_no DESC LIMIT ?",
                            (r["id"], TABLE_ALARMS)) if detail else []
        seen = r["last_seen_epoch"]
        state = r["state"]
        if state == "online" and (seen is None or now - float(seen) > live_window_s):
            state = "stale"
        n_parked, top_parked = parked.get(r["id"], (0, 0))
        says = _birth_says(r["birth"])
        if says["in_service"] is not None or r["id"] in out_of_service:
            # its latest word (birth or status) is the out-of-service alarm's state
            says["in_service"] = r["id"] not in out_of_service
        known = max(_birth_outbox_top(r["birth"]) or 0, top_parked)
        out.append({
            "id": r["id"], "pool_id": r["pool_id"], "enrolled": bool(r["enrolled"]),
            "state": state, "last_seen_utc": r["last_seen_utc"],
            "silent_s": None if seen is None else max(0, int(now - float(seen))),
            "last_seq": int(r["last_seq"]), "journal_seq": r["journal_seq"],
            "last_message": last, "parked": n_parked,
            "outbox_lag": max(0, known - int(r["last_seq"])), "alarms": alarms,
            **says,
        })
    return out


def _birth_says(birth: str | None) -> dict[str, Any]:
    """What the table said of itself at its last connect: its software version and whether it
    was in service (None: it did not say, or has not connected)."""
    try:
        b = json.loads(birth) if birth else {}
    except ValueError:
        b = {}
    if not isinstance(b, dict):
        b = {}
    software = b.get("software")
    return {"software": software[:64] if isinstance(software, str) else None,
            "in_service": b.get("in_service") if isinstance(b.get("in_service"), bool)
            else None}


def _birth_outbox_top(birth: str | None) -> int | None:
    """The last outbox sequence a table reported at its last connect, or None."""
    if not birth:
        return None
    try:
        outbox = json.loads(birth).get("outbox") or {}
        acked, pending = outbox.get("acked_upto"), outbox.get("pending")
    except (ValueError, AttributeError):
        return None
    if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
               for x in (acked, pending)):
        return None
    return int(acked) + int(pending)


def held_hits(ledger: Ledger) -> dict[str, Any]:
    """Held hits waiting for a decision (oldest first) and the decided ones (newest first),
    each with its hands as head office reads the cards and a first approval under dual
    control; the dual-control threshold (cents, None: off)."""
    firsts = {d["subject"]: d for d in ledger.decisions(pending_only=True, kind="hit")}
    pending: list[dict[str, Any]] = []
    decided: list[dict[str, Any]] = []
    bodies = {int(r["hold_no"]): r["body"] for r in ledger.db.execute(
        "SELECT hold_no, body FROM held_hits")}
    for h in ledger.held_hits():
        try:
            payload = json.loads(bodies[int(h["hold_no"])])["payload"]
            hands = [{**x, "cards": " ".join(x["cards"])} for x in hitcheck.hands_of(payload)]
        except (KeyError, TypeError, ValueError):
            hands = []
        h = {**h, "hands": hands, "first": firsts.get(str(h["hold_no"])),
             "paid": None if h["award"] is None
             else sum(p["amount"] for p in h["award"]["payouts"])}
        (pending if h["status"] == "pending" else decided).append(h)
    decided.reverse()
    return {"pending": pending, "decided": decided,
            "dual_from": ledger.policy.dual_control_from}


def hit_review(ledger: Ledger, hold_no: int) -> dict[str, Any]:
    """A held hit as an approver reads it before deciding (`Ledger.hit_review`), with each
    payout's hand in words."""
    review = ledger.hit_review(hold_no)
    review["payouts"] = [{**p, "hand": hitcheck.hand_in_words(p["award"])}
                         for p in review["payouts"]]
    return review


def param_log(ledger: Ledger) -> list[dict[str, Any]]:
    """The parameter log in the order made, each entry's change as rows of (what, before, after)
    in dollars and percent, only what changed."""
    out = []
    for e in ledger.param_log():
        old = json.loads(e["old"]) if e["old"] else None
        new = json.loads(e["new"]) if e["new"] else None
        out.append({**e, "live": ", ".join(json.loads(e["live_tables"])) or "none",
                    "changes": param_changes(old, new) if new is not None else []})
    return out


def pending_changes(ledger: Ledger) -> list[dict[str, Any]]:
    """Forced parameter changes waiting for their second approver, oldest first."""
    return [{**d, "changes": param_changes(d["detail"]["old"], d["detail"]["new"])}
            for d in ledger.decisions(pending_only=True, kind="params")]


def alarms(ledger: Ledger) -> list[dict[str, Any]]:
    """The active alarms, most severe then newest first (Ledger.alarms)."""
    return ledger.alarms(active_only=True)


def live(ledger: Ledger, live_window_s: float, now: float) -> dict[str, Any]:
    """The figures the pages refresh in place, as shown, the number of held hits
    waiting and the newest alarm's number: a change in those two shows a notice."""
    values: dict[str, Any] = {}
    for p in ledger.pools():
        values[f"pool:{p.id}:current"] = dollars_or_dash(p.amount)
        values[f"pool:{p.id}:reserve"] = dollars_or_dash(p.reserve)
        values[f"pool:{p.id}:hits"] = str(p.hits)
    for t in tables(ledger, live_window_s, now, detail=False):
        values[f"table:{t['id']}:state"] = t["state"]
        values[f"table:{t['id']}:last_seq"] = str(t["last_seq"])
        values[f"table:{t['id']}:outbox_lag"] = str(t["outbox_lag"])
    pending = ledger.db.one("SELECT COUNT(*) AS n FROM held_hits WHERE status = 'pending'")
    newest = ledger.db.one("SELECT MAX(alarm_no) AS n FROM alarms")
    values["alarms:active"] = str(ledger.active_alarm_count())
    return {"values": values, "pending": int(pending["n"]) if pending else 0,
            "alarm": int(newest["n"] or 0) if newest else 0}


def shift_meters(ledger: Ledger) -> list[dict[str, Any]]:
    """Each known table with its closed shifts, newest first (at most SHIFTS_PER_TABLE each),
    as the table closed them (`tablectl meters close-shift`, stored by headoffice/meters.py)."""
    out = []
    for r in ledger.db.execute("SELECT id FROM tables ORDER BY id"):
        shifts = ho_meters.shift_meters(ledger.db, r["id"], SHIFTS_PER_TABLE)
        out.append({"id": r["id"], "shifts": [ho_meters.headline(s) for s in shifts]})
    return out

