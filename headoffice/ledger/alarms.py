"""Head office's alarms: raised, re-detected, cleared, acknowledged.

An alarm has a kind (`KINDS`), a severity, the table and/or pool it is about, a text, when it
was raised, and, for a condition that ends (a table offline, a held hit waiting), when it was
cleared. One alarm stays active per condition (`cond`: kind, pool, table and a subject such as
the held hit's round): seeing it again while it is active adds to its `repeats` and records
the last time and text, never a new row. An event (a message refused, a parameter changed) has
no end of its own: its acknowledgement ends it. A condition stays active until it ends, whoever
acknowledged it. An acknowledgement records who, when and a note; a second one is refused.

`Ledger.alarm(text, pool_id, table)` without a kind records an event of kind `other`, one row
per call, as before alarms had kinds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from headoffice.db import Database
from headoffice.ledger import common
from headoffice.ledger.common import LedgerError, log
from shared.errors import InputError

MAX_NOTE = 500  # characters of an acknowledgement's note
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Kind:
    severity: str  # critical | warning | notice
    condition: bool  # True: cleared when the condition ends; False: an event, ended by its ack
    title: str


KINDS: dict[str, Kind] = {
    "table_offline": Kind("warning", True, "table offline"),
    "table_out_of_service": Kind("critical", True, "table out of service"),
    "table_behind": Kind("critical", False, "table behind head office"),
    "chain_mismatch": Kind("critical", False, "chain mismatch"),
    "journal_loss": Kind("critical", False, "journal loss reported"),
    "held_hit": Kind("warning", True, "held hit waiting"),
    "refused": Kind("warning", False, "refused message"),
    "conservation": Kind("critical", True, "conservation failure (pool stopped)"),
    "param_change": Kind("notice", False, "parameter change"),
    "worker_down": Kind("critical", True, "broker or worker down"),
    "other": Kind("warning", False, "other"),
    "legacy": Kind("warning", False, "recorded by an older version"),
}
SEVERITIES = ("critical", "warning", "notice")
# What the alarm lists show of a row (and the CLI's --json).
ALARM_FIELDS = ("alarm_no, kind, severity, pool_id, table_id, subject, text, utc, last_utc,"
                " last_text, repeats, cleared_utc, acked_by, acked_utc, ack_note")


def cond_key(kind: str, pool_id: str | None, table: str | None, subject: str | None) -> str:
    """The condition an active alarm stands for: at most one active row per key."""
    return f"{kind}|{pool_id or ''}|{table or ''}|{subject or ''}"


def check_note(note: str) -> str:
    """An acknowledgement's note: one line, 1-500 characters; LedgerError names what is wrong."""
    text = note.strip()
    if not text:
        raise LedgerError("an acknowledgement needs a note (what was seen or done)")
    if len(text) > MAX_NOTE or _CONTROL.search(text):
        raise LedgerError(f"the note is one line of at most {MAX_NOTE} characters")
    return text


class LedgerAlarms:
    """Ledger: the alarm model."""

    db: Database
    clock: Any

    def alarm(self, text: str, pool_id: str | None = None, table: str | None = None, *,
              kind: str | None = None, severity: str | None = None,
              subject: str | None = None) -> int:
        """Raise an alarm (or see an active one again); its number. Without a kind: an event
        of kind `other`, its own row (the database numbers it: `alarm_no`, see db.py)."""
        if kind is not None and kind not in KINDS:
            raise InputError(f"no alarm kind {kind!r}")
        kind_ = kind or "other"
        level = severity or KINDS[kind_].severity
        if level not in SEVERITIES:
            raise InputError(f"no severity {level!r}")
        now = common.utc_now()
        cond = None if kind is None else cond_key(kind_, pool_id, table, subject)
        if cond is None:
            rows = self.db.execute(
                "INSERT INTO alarms (utc, pool_id, table_id, text, kind, severity, last_utc,"
                " repeats) VALUES (?, ?, ?, ?, ?, ?, ?, 1) RETURNING alarm_no, repeats",
                (now, pool_id, table, text, kind_, level, now))
        else:
            rows = self.db.execute(
                "INSERT INTO alarms (utc, pool_id, table_id, text, kind, severity, cond,"
                " subject, last_utc, repeats) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)"
                " ON CONFLICT (cond) WHERE cleared_utc IS NULL DO UPDATE SET"
                " last_utc = excluded.last_utc, last_text = excluded.text,"
                " repeats = alarms.repeats + 1 RETURNING alarm_no, repeats",
                (now, pool_id, table, text, kind_, level, cond, subject, now))
        if int(rows[0]["repeats"]) == 1:
            log.critical("ALARM #%s %s: %s", rows[0]["alarm_no"], kind_, text)
        return int(rows[0]["alarm_no"])

    def clear_alarm(self, kind: str, pool_id: str | None = None, table: str | None = None,
                    subject: str | None = None) -> int:
        """The condition ended: its active alarm, if any, is cleared now. The rows cleared."""
        n = self.db.write(
            "UPDATE alarms SET cleared_utc = ? WHERE cond = ? AND cleared_utc IS NULL",
            (common.utc_now(), cond_key(kind, pool_id, table, subject)))
        if n:
            log.warning("alarm cleared: %s %s %s %s", kind, pool_id or "", table or "",
                        subject or "")
        return n

    def active_conditions(self, kind: str) -> dict[str, dict[str, Any]]:
        """The active alarms of one kind, by their condition key."""
        return {r["cond"]: r for r in self.db.execute(
            "SELECT alarm_no, cond, pool_id, table_id, subject FROM alarms"
            " WHERE kind = ? AND cleared_utc IS NULL AND cond IS NOT NULL", (kind,))}

    def alarms(self, *, active_only: bool = True, limit: int = 500) -> list[dict[str, Any]]:
        """Active alarms (not cleared), most severe then newest first; or every alarm, newest
        first (history)."""
        if active_only:
            return self.db.execute(
                f"SELECT {ALARM_FIELDS} FROM alarms WHERE cleared_utc IS NULL ORDER BY"
                " CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END,"
                " alarm_no DESC LIMIT ?", (limit,))
        return self.db.execute(f"SELECT {ALARM_FIELDS} FROM alarms ORDER BY alarm_no DESC"
                               " LIMIT ?", (limit,))

    def active_alarm_count(self) -> int:
        row = self.db.one("SELECT COUNT(*) AS n FROM alarms WHERE cleared_utc IS NULL")
        return int(row["n"]) if row else 0

    def ack_alarm(self, alarm_no: int, *, person: str, note: str,
                  client: str | None = None) -> dict[str, Any]:
        """Acknowledge an alarm: who, when, a note (required). An event ends with it; a
        condition stays active until it ends. A second acknowledgement is refused. Recorded in
        the audit trail too. Returns the alarm as it now stands."""
        text = check_note(note)
        if not person:
            raise LedgerError("an acknowledgement needs who makes it")
        with self.db.transaction():
            row = self.db.one(f"SELECT {ALARM_FIELDS} FROM alarms WHERE alarm_no = ?"
                              f"{self.db.for_update}", (alarm_no,))
            if row is None:
                raise LedgerError(f"no alarm #{alarm_no}")
            if row["acked_utc"] is not None:
                raise LedgerError(f"alarm #{alarm_no} was already acknowledged by"
                                  f" {row['acked_by']} at {row['acked_utc']}")
            now = common.utc_now()
            kind = KINDS.get(row["kind"] or "other", KINDS["other"])
            clears = not kind.condition and row["cleared_utc"] is None
            self.db.execute(
                "UPDATE alarms SET acked_by = ?, acked_utc = ?, ack_note = ?"
                f"{', cleared_utc = ?' if clears else ''} WHERE alarm_no = ?",
                (person, now, text, *((now,) if clears else ()), alarm_no))
            self.audit("alarm_ack", person, table=row["table_id"], pool_id=row["pool_id"],
                       subject=f"alarm #{alarm_no}",
                       detail=f"{row['kind']}: {row['text'][:200]} -- note: {text}",
                       client=client, utc=now)
            found = self.db.one(f"SELECT {ALARM_FIELDS} FROM alarms WHERE alarm_no = ?",
                                (alarm_no,))
        log.warning("alarm #%s acknowledged by %s: %s", alarm_no, person, text)
        assert found is not None
        return found

    def audit(self, action: str, person: str, *, table: str | None = None,
              pool_id: str | None = None, subject: str | None = None, detail: str = "",
              client: str | None = None, utc: str | None = None) -> None:
        """One entry of the audit trail's own record (logins, acknowledgements): the other
        entries are read from where the decisions are kept (headoffice/audit.py)."""
        self.db.execute(
            "INSERT INTO audit (utc, action, person, table_id, pool_id, subject, detail, client)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (utc or common.utc_now(), action, person[:64], table, pool_id, subject,
             detail[:1000], client))

    # -- conditions found by looking (the worker's heartbeat, the console) ------------------------
    def sweep_alarms(self, now: float, live_window_s: float, worker_stale_s: float) -> None:
        """Raise and clear what is seen by looking at the ledger rather than in a message:
        tables offline or silent for longer than `live_window_s`, workers not heard from
        within `worker_stale_s`, held hits waiting (and decided ones whose alarm still
        stands). Writes only when something changes."""
        want: dict[str, dict[str, tuple[str, str | None, str | None, str | None]]] = {
            k: {} for k in ("table_offline", "worker_down", "held_hit")}
        for t in self.db.execute("SELECT id, pool_id, state, last_seen_utc, last_seen_epoch"
                                 " FROM tables WHERE enrolled = ?", (True,)):
            seen = t["last_seen_epoch"]
            why = None
            if t["state"] == "offline":
                why = f"table {t['id']} is offline (last seen {t['last_seen_utc'] or 'never'})"
            elif t["state"] == "online" and (seen is None or now - float(seen) > live_window_s):
                why = (f"table {t['id']} silent for {int(now - float(seen or 0))} s"
                       f" (more than {live_window_s:g} s; last seen {t['last_seen_utc']})")
            if why is not None:
                want["table_offline"][cond_key("table_offline", None, t["id"], None)] = (
                    why, None, t["id"], None)
        for w in self.db.execute("SELECT worker, seen_epoch FROM ho_workers"):
            if now - float(w["seen_epoch"]) > worker_stale_s:
                want["worker_down"][cond_key("worker_down", None, None, w["worker"])] = (
                    f"head-office worker {w['worker']} not heard from for"
                    f" {int(now - float(w['seen_epoch']))} s", None, None, w["worker"])
        for h in self.db.execute("SELECT hold_no, table_id, round, pool_id, reason FROM held_hits"
                                 " WHERE status = 'pending'"):
            subject = f"round {h['round']}"
            want["held_hit"][cond_key("held_hit", h["pool_id"], h["table_id"], subject)] = (
                held_text(h["table_id"], int(h["round"]), h["reason"]), h["pool_id"],
                h["table_id"], subject)
        have = {kind: self.active_conditions(kind) for kind in want}
        # A worker's own report of a lost broker (subject "broker:<worker>") is its to clear.
        have["worker_down"] = {k: v for k, v in have["worker_down"].items()
                               if not str(v["subject"] or "").startswith("broker:")}
        raise_, clear = [], []
        for kind, conds in want.items():
            raise_ += [(kind, v) for c, v in conds.items() if c not in have[kind]]
            clear += [(kind, r) for c, r in have[kind].items() if c not in conds]
        if not raise_ and not clear:
            return
        with self.db.transaction():
            for kind, (text, pool_id, table, subject) in raise_:
                self.alarm(text, pool_id, table, kind=kind, subject=subject)
            for kind, r in clear:
                self.clear_alarm(kind, r["pool_id"], r["table_id"], r["subject"])


def held_text(table: str, round_: int, why: str) -> str:
    return f"jackpot hit {table} round {round_} HELD for approval: {why}"
