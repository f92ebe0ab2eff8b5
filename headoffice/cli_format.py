"""What `tablectl-headoffice` prints for a person: the report, held hits and their review (what
an approver reads before deciding), decisions, parameter changes as before/after tables, shift
meters. Money in dollars, hands in words, times in the casino's time zone (`[service]
time_zone`; stored in UTC), as the console shows them; `--json` prints the stored values."""

from __future__ import annotations

from fractions import Fraction
from typing import Any
from zoneinfo import ZoneInfo

from headoffice import meters
from headoffice.console.money import param_changes
from headoffice.hits import hand_in_words
from headoffice.localtime import local_time
from shared.money import dollars_or_dash as _money

UTC_ZONE = ZoneInfo("UTC")


def _at(utc: str | None, tz: ZoneInfo) -> str:
    """A stored UTC time in the casino's zone, or "-" for none."""
    return local_time(utc, tz) or "-"


def _rate(text: str) -> str:
    return f"{float(Fraction(text)) * 100:.2f}%"


def format_report(report: dict[str, Any], tz: ZoneInfo = UTC_ZONE) -> str:
    lines: list[str] = []
    for p in report["pools"]:
        state = f"STOPPED: {p['stopped']}" if p["stopped"] else "running"
        lines.append(f"pool {p['pool']} (version {p['version']}, {state})")
        rows = [
            ("in", _money(p["in"])),
            ("current", _money(p["current"])),
            ("hits", str(p["hits"])),
            ("wins", _money(p["wins"])),
            ("overflow", _money(p["overflow"])),
            ("reserve", _money(p["reserve"])),
            ("base", _money(p["base"])),
            ("limit", _money(p["limit"])),
            ("rate", f"{_rate(p['rate'])} (hidden {_rate(p['hidden_rate'])})"),
            ("paid from meter", _money(p["paid_from_meter"])),
            ("paid by house", _money(p["paid_by_house"])),
            ("imbalance", f"{p['imbalance']} cents"),
        ]
        lines += [f"  {k:<16} {v}" for k, v in rows]
        if p["last_hits"]:
            lines.append("  last hits:")
        for h in p["last_hits"]:
            won = ", ".join(
                f"box {x['box']} {hand_in_words(x['award'])} {_money(x['amount'])}"
                for x in h["payouts"]
            )
            lines.append(
                f"    #{h['hit']} {_at(h['utc'], tz)} table {h['table']} round"
                f" {h['round']}: {won}; meter {_money(h['pool_before'])}"
                f" -> {_money(h['pool_after'])}"
            )
    if report["tables"]:
        lines.append("tables:")
    for t in report["tables"]:
        lines.append(
            f"  {t['id']:<20} pool {t['pool_id'] or '-':<12} last seq {t['last_seq']:<8}"
            f" {t['state']:<8} seen {_at(t['last_seen_utc'], tz)}"
            f"{'' if t['enrolled'] else ' NOT ENROLLED'}"
        )
        if t["chain_seq"]:
            lines.append(
                f"  {'':<20} chain head: seq {t['chain_seq']} journal record"
                f" {t['journal_seq']} hash {t['chain_hash'] or '-'}"
            )
    for h in report.get("held_hits", []):
        lines.append(format_held(h, tz))
    for a in report["alarms"]:
        lines.append(
            f"ALARM #{a['alarm_no']} {_at(a['utc'], tz)} {a['pool_id'] or ''}"
            f" {a['table_id'] or ''}: {a['text']}"
        )
    return "\n".join(lines)


def format_held(h: dict[str, Any], tz: ZoneInfo = UTC_ZONE) -> str:
    decided = (
        ""
        if h["status"] == "pending"
        else (f" by {h['operator']} at {_at(h['decided_utc'], tz)}: {h['note'] or ''}")
    )
    paid = ""
    if h["award"] is not None:
        paid = f"; paid {_money(sum(p['amount'] for p in h['award']['payouts']))}"
    verified = (
        ""
        if not h.get("verified_by")
        else f"; verified at the table by {h['verified_by']} (the table's word)"
    )
    return (
        f"HELD HIT #{h['hold_no']} {_at(h['utc'], tz)} table {h['table_id']} round {h['round']}"
        f" pool {h['pool_id']} (meter {_money(h['meter_at_hit'])}): {h['status'].upper()}"
        f"{decided}{paid}; why held: {h['reason']}{verified}"
    )


def format_review(r: dict[str, Any], tz: ZoneInfo = UTC_ZONE) -> str:
    """What an approver reads before deciding a held hit (the console's confirmation page)."""
    lines = [
        f"held hit #{r['hold_no']}: table {r['table_id']}, round {r['round']}, pool"
        f" {r['pool_id']}; held {_at(r['utc'], tz)}; {r['status'].upper()}"
    ]
    if r["amount"] is not None:
        what = "paid" if r["status"] == "approved" else "award head office pays"
        lines.append(
            f"  {what}: {_money(r['amount'])} (on the meter at the hit,"
            f" {_money(r['meter_at_hit'])}; UTH rule 15)"
        )
        lines += [
            f"    box {p['box']}: {hand_in_words(p['award'])} {_money(p['amount'])} ({p['rule']})"
            for p in r["payouts"]
        ]
    else:
        lines.append(f"  award: cannot be paid: {r['cannot_pay']}")
    for h in r["hands"]:
        lines.append(f"  box {h['box']}: {' '.join(h['cards'])}: {h['hand']}")
    lines.append(f"  why held: {r['reason']}")
    lines.append(
        "  checks: "
        + (
            "; ".join(r["checks"])
            if r["checks"]
            else "all pass (wagers ledgered, one deck, hands as claimed)"
        )
    )
    lines.append(
        "  attendant's verification at the table: "
        + (
            f"{r['verified_by']} at {_at(r['verified_utc'], tz)} (the table's word)"
            if r["verified_by"]
            else "none"
        )
    )
    first = r["first"]
    if first is not None:
        lines.append(
            f"  first approval: {first['first_by']} at {_at(first['first_utc'], tz)}"
            f" ({_money(first['amount'])}): {first['first_reason']}"
        )
    if r["status"] == "pending":
        lines.append(
            "  needs: "
            + ("two different approvers (dual control)" if r["signatures"] == 2 else "one approver")
        )
    else:
        lines.append(
            f"  decided by {r['operator']} at {_at(r['decided_utc'], tz)}: {r['note'] or ''}"
        )
    return "\n".join(lines)


def format_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> str:
    """A parameter change as a before/after table of only what changes, indented."""
    rows = param_changes(old, new)
    width = max([len(r[0]) for r in rows] + [4])
    return "\n".join(
        [f"  {'what':<{width}}  {'before':>14}  {'after':>14}"]
        + [f"  {a:<{width}}  {b:>14}  {c:>14}" for a, b, c in rows]
    )


def format_decision(d: dict[str, Any], tz: ZoneInfo = UTC_ZONE) -> str:
    subject = (
        f"held hit #{d['subject']}" if d["kind"] == "hit" else f"parameters of pool {d['subject']}"
    )
    amount = "" if d["amount"] is None else f" {_money(d['amount'])}"
    second = (
        ""
        if d["second_by"] is None
        else f"; {d['second_by']} at {_at(d['second_utc'], tz)}: {d['second_reason']}"
    )
    return (
        f"DECISION #{d['decision_no']} {subject}{amount}: {d['status'].upper()}"
        f" ({d['signatures']} signature{'s' if d['signatures'] > 1 else ''});"
        f" {d['first_by']} at {_at(d['first_utc'], tz)}: {d['first_reason']}{second}"
        f"{'; ' + d['outcome'] if d['outcome'] else ''}"
    )


def format_shift(s: dict[str, Any], tz: ZoneInfo = UTC_ZONE) -> str:
    """One closed shift's headline (headoffice/meters.py `headline`) for a person."""
    h = meters.headline(s)
    by_type = "; ".join(f"{kind} {_money(w)} / {_money(p)}" for kind, w, p in h["by_type"])
    rows = [
        ("rounds played", str(h["rounds_played"])),
        ("rounds voided", str(h["rounds_voided"])),
        ("wagers", _money(h["wagers"])),
        ("payouts", _money(h["payouts"])),
        ("by type", by_type or "-"),
        ("commission", _money(h["commission"])),
        ("jackpot in", _money(h["jackpot_contributions"])),
        ("jackpot paid", _money(h["jackpot_awards"])),
        ("house win", _money(h["house_win"])),
    ]
    return "\n".join(
        [
            f"table {h['table']} shift {h['shift']} (message {h['seq']}):"
            f" {_at(h['opened_utc'], tz)} .. {_at(h['closed_utc'], tz)}"
        ]
        + ([f"  {h['incomplete']}"] if h["incomplete"] else [])
        + [f"  {k:<16} {v}" for k, v in rows]
    )
