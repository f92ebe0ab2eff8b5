"""Jackpot hits and their cancellations: in a batch (serialised per pool, in arrival order, the
pool's row held), held for an operator, approved or refused, verified at the table (rule 15)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from controller.errors import InputError
from controller.link import contract
from headoffice import hits as hitcheck
from headoffice.db import Database
from headoffice.hits import HitPolicy
from headoffice.ledger import common
from headoffice.ledger.alarms import held_text
from headoffice.ledger.common import (
    BatchResult,
    LedgerError,
    _HeldHit,
    _increment_of,
    _payouts,
    _Table,
    force_bool,
    log,
)
from headoffice.pools import ConservationError, Pool

# How long a worker's claim on an award it sends holds (claim_awards): far above a publish's
# PUBACK under load, so a live sender is never doubled; a dead one's awards wait this long.
SENDING_S = 120.0


class LedgerHits:
    """Ledger: the held hits (the jackpot lock) and their approval."""

    db: Database
    clock: Any
    policy: HitPolicy
    shard: str

    def _verify_hit(self, hold_no: int, table: str, user: str, result: BatchResult) -> None:
        """An attendant's verification at the table pays a hit held for its size alone: the
        same approval as `hit approve`, the attendant and the table recorded as who approved
        (rule 15: a large award waits for verification before the pool resets)."""
        try:
            message = self._pay_held(hold_no, operator=f"attendant {user} at table {table}",
                                     note="verified at the table", table=table)
        except LedgerError as exc:  # decided at head office meanwhile, or cannot be paid
            text = f"jackpot_verified from {table} for held hit #{hold_no} refused: {exc}"
            result.verify_refused.append(text)
            with self.db.transaction():
                self.alarm(text, None, table, kind="refused", subject="jackpot_verified")
        else:
            result.verifications_paid += 1
            # The pool this award lowered goes out with the batch's values, at once: every
            # linked meter comes down to it (2.4.3, 15.1.3), not at the next heartbeat.
            paid = self.pool(message["pool"])
            if paid is not None:
                result.pools[paid.id] = paid.value()
    # -- held hits (the jackpot lock) ----------------------------------------------------------
    def held_hits(self, pending_only: bool = False) -> list[dict[str, Any]]:
        """Hits held for an operator, oldest first; with who decided, when and why."""
        where = " WHERE status = 'pending'" if pending_only else ""
        rows = self.db.execute(
            "SELECT hold_no, table_id, round, seq, pool_id, utc, meter_at_hit, reason, status,"
            f" operator, decided_utc, note, award, delivered FROM held_hits{where}"
            " ORDER BY hold_no")
        for r in rows:
            r["delivered"] = bool(r["delivered"])
            r["award"] = None if r["award"] is None else json.loads(r["award"])
        return rows

    @staticmethod
    def _authorised(operator: str, authorised: Iterable[str]) -> None:
        if operator not in set(authorised):
            raise LedgerError(f"operator {operator!r} is not authorised to decide a held hit")

    def _held(self, hold_no: int) -> dict[str, Any]:
        """The pending held hit, locked (inside a transaction); LedgerError otherwise."""
        row = self.db.one(f"SELECT * FROM held_hits WHERE hold_no = ?{self.db.for_update}",
                          (hold_no,))
        if row is None:
            raise LedgerError(f"no held hit #{hold_no}")
        if row["status"] != "pending":
            raise LedgerError(f"held hit #{hold_no} was already {row['status']} by"
                              f" {row['operator']} at {row['decided_utc']}")
        return row

    def approve_hit(self, hold_no: int, *, operator: str, authorised: Iterable[str],
                    note: str = "") -> dict[str, Any]:
        """Pay a held hit: head office's award by rule 15 on the meter as it was at the hit
        (never more), recorded with who approved it and when. Returns the award message; the
        worker publishes it to the table (`undelivered_awards`)."""
        self._authorised(operator, authorised)
        return self._pay_held(hold_no, operator=operator, note=note)

    def _pay_held(self, hold_no: int, *, operator: str, note: str,
                  table: str | None = None) -> dict[str, Any]:
        """The approval itself, for an operator at head office or an attendant at `table`."""
        with self.db.transaction():
            row = self._held(hold_no)
            if table is not None and row["table_id"] != table:
                raise LedgerError(f"held hit #{hold_no} is {row['table_id']}'s, not {table}'s")
            found = self._locked_pool(row["pool_id"])
            if found is None:
                raise LedgerError(f"no pool {row['pool_id']!r}")
            pool = found
            if pool.stopped:
                raise LedgerError(f"pool {pool.id} is stopped: {pool.stopped}")
            body = json.loads(row["body"])
            try:
                entries = hitcheck.entries_of(body["payload"])
                new, result = pool.award(entries, int(row["meter_at_hit"]))
            except (InputError, ConservationError) as exc:
                raise LedgerError(f"held hit #{hold_no} cannot be paid ({exc}): refuse it"
                                  ) from None
            payouts = _payouts(result)
            message = contract.award_message(row["table_id"], pool.id, int(row["round"]),
                                             int(row["seq"]), payouts)
            now = common.utc_now()
            self._write_pool(new)
            self.db.execute(
                "INSERT INTO hits (pool_id, hit_no, table_id, round, seq, utc, pool_before,"
                " pool_after, paid, seed_from_house, award) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                " ?)",
                (pool.id, new.hits, row["table_id"], row["round"], row["seq"], now, pool.amount,
                 new.amount, sum(x["amount"] for x in payouts), result.seed_from_house,
                 json.dumps(message, sort_keys=True)))
            self.db.execute(
                "UPDATE held_hits SET status = 'approved', operator = ?, decided_utc = ?,"
                " note = ?, award = ? WHERE hold_no = ?",
                (operator, now, note, json.dumps(message, sort_keys=True), hold_no))
            # Decided: its alarm ends (the decision itself is in the audit trail).
            self.clear_alarm("held_hit", pool.id, row["table_id"], f"round {row['round']}")
        log.warning("held hit #%s approved by %s", hold_no, operator)
        return message

    def refuse_hit(self, hold_no: int, *, operator: str, authorised: Iterable[str],
                   reason: str) -> None:
        """Never pay a held hit; who refused it, when and why are recorded. Nothing is sent
        to the table: its hit stays PENDING there for the floor to resolve."""
        if not reason.strip():
            raise LedgerError("a refusal needs a reason")
        self._authorised(operator, authorised)
        with self.db.transaction():
            row = self._held(hold_no)
            self.db.execute(
                "UPDATE held_hits SET status = 'refused', operator = ?, decided_utc = ?,"
                " note = ? WHERE hold_no = ?", (operator, common.utc_now(), reason[:500], hold_no))
            self.clear_alarm("held_hit", row["pool_id"], row["table_id"], f"round {row['round']}")

    def undelivered_awards(self) -> list[tuple[int, str, dict[str, Any]]]:
        """Approved held hits whose award the tables have not been sent: (no, table, message)."""
        rows = self.db.execute(
            "SELECT hold_no, table_id, award FROM held_hits WHERE status = 'approved'"
            " AND delivered = ? ORDER BY hold_no", (force_bool(False),))
        return [(int(r["hold_no"]), r["table_id"], json.loads(r["award"])) for r in rows]

    def claim_awards(self, worker: str, now: float,
                     hold_s: float = SENDING_S) -> list[tuple[int, str, dict[str, Any]]]:
        """The undelivered approved awards no other worker is sending, now `worker`'s to send
        for `hold_s` seconds (then `mark_delivered`): (no, table, message). Every worker hears
        an approval (headoffice/notify.py) and a table's partition may change hands mid-send
        (headoffice/routing.py), so the claim, one UPDATE that re-checks each row under its
        lock, decides who sends. A worker that dies between the claim and the delivery has its
        claim run out: another sends the award then (a duplicate only then, which the table
        refuses and counts)."""
        with self.db.transaction():
            rows = self.db.execute(
                "UPDATE held_hits SET sending_by = ?, sending_until = ? WHERE status = 'approved'"
                " AND delivered = ? AND (sending_until IS NULL OR sending_until < ?)"
                " RETURNING hold_no, table_id, award",
                (worker, now + hold_s, force_bool(False), now))
        return sorted((int(r["hold_no"]), r["table_id"], json.loads(r["award"])) for r in rows)

    def mark_delivered(self, hold_nos: list[int]) -> None:
        with self.db.transaction():
            self.db.executemany("UPDATE held_hits SET delivered = ? WHERE hold_no = ?",
                                [(force_bool(True), n) for n in hold_nos])


class BatchHits:
    """_Batch: cancellations and hits, in the pool's order."""

    db: Database
    ledger: Any  # the Ledger
    result: BatchResult
    increments: dict[tuple[str, int], dict[str, Any]]
    cancelled: list[tuple[int, str, int]]
    hits: list[tuple[Any, ...]]
    held_hits: list[tuple[Any, ...]]
    stored: dict[tuple[str, int], dict[str, Any]]
    looked_up: set[tuple[str, int]]
    utc: str

    def _cancel(self, t: _Table, p: dict[str, Any], key: tuple[str, int], pool: Pool,
                seq: int) -> int:
        pool_id = pool.id
        inc = self.increments.get(key) or self._stored_increment(key)
        if inc is None or inc.get("cancelled"):
            raise InputError(f"round {p['round']}: cancel without an increment to cancel")
        if inc["amount"] != p["amount"] or inc["pool"] != pool_id:
            raise InputError(f"round {p['round']}: cancel of {p['amount']} on {pool_id}"
                             f" does not match the increment {inc['amount']} on {inc['pool']}")
        self._guarded(pool_id, lambda: pool.cancel(p["amount"], inc["meter"],
                                                    inc["reserve"]))
        inc["cancelled"] = True
        self.increments[key] = inc
        self.cancelled.append((seq, t.id, p["round"]))
        return -int(p["amount"])

    def _hit(self, t: _Table, body: dict[str, Any], p: dict[str, Any], key: tuple[str, int],
             pool: Pool, seq: int) -> int:
        pool_id = pool.id
        # jackpot_hit: checked against what head office knows (headoffice/hits.py); then the
        # UTH engine's award on the pool as it stands now (arrival order), unless held.
        if (self.db.one("SELECT 1 AS x FROM hits WHERE table_id = ? AND round = ?"
                        " UNION ALL SELECT 1 AS x FROM held_hits WHERE table_id = ? AND round = ?",
                        key + key) is not None
                or any(h[2:4] == key for h in self.hits)
                or any(h[0:2] == key for h in self.held_hits)):
            raise InputError(f"round {p['round']}: a second hit for the round")
        wrong = hitcheck.problems(p, self._wagered(key))
        if wrong:
            self._hold_hit(t, body, pool, "; ".join(wrong), alarm=True)
        entries = hitcheck.entries_of(p)
        try:  # pure: nothing is kept unless it is paid
            payouts = _payouts(pool.award(entries)[1])
        except ConservationError:
            payouts = []  # the books are off: _guarded below stops the pool
        why = hitcheck.needs_verification(self.ledger.policy, payouts)
        if why is not None:
            self._hold_hit(t, body, pool, why, alarm=False)
        answer: dict[str, Any] = {}

        def hit() -> Pool:
            new, result = pool.award(entries)
            answer["result"] = result
            return new

        new = self._guarded(pool_id, hit)
        result = answer["result"]
        payouts = _payouts(result)
        message = contract.award_message(t.id, pool_id, p["round"], seq, payouts)
        hit_no = new.hits
        self.hits.append((
            pool_id, hit_no, t.id, p["round"], seq, self.utc, pool.amount, new.amount,
            sum(x["amount"] for x in payouts), result.seed_from_house,
            json.dumps(message, sort_keys=True),
        ))
        self.result.awards.append((t.id, message))
        return 0


    def _verified(self, t: _Table, p: dict[str, Any], key: tuple[str, int]) -> int:
        """jackpot_verified: an attendant at the table verified its hit (rule 15). Accepted
        only for this table's hit held for its size alone (every check of headoffice/hits.py
        passes); paid after this batch commits (`Ledger._verify_hit`). InputError otherwise:
        the message is refused, alarmed and counted; nothing changes."""
        row = self.db.one("SELECT hold_no, status, pool_id, body FROM held_hits"
                          " WHERE table_id = ? AND round = ?", key)
        why = ""
        if row is None:
            why = "no hit of this table held for the round"
        elif row["status"] != "pending":
            why = f"its held hit #{row['hold_no']} was already {row['status']}"
        elif row["pool_id"] != p["pool_id"]:
            why = f"its held hit is on pool {row['pool_id']}, not {p['pool_id']}"
        else:
            hit = json.loads(row["body"])["payload"]
            wrong = hitcheck.problems(hit, self._wagered(key))
            if wrong:
                why = ("the held hit does not add up, an operator decides it at head office: "
                       + "; ".join(wrong))
            elif not set(p["boxes"]) <= set(hit["hits"]):
                why = f"boxes {p['boxes']} are not the hit's {hit['hits']}"
        if why:
            text = f"jackpot_verified from {t.id} for round {p['round']} refused: {why}"
            self.result.verify_refused.append(text)
            raise InputError(text)
        self.result.verified.append((int(row["hold_no"]), t.id, p["verified_by"]["user"]))
        return 0

    def _wagered(self, key: tuple[str, int]) -> dict[str, Any] | None:
        """The round's ledgered jackpot wagers {pool_id, boxes, wager, cancelled}, or None."""
        inc = self.increments.get(key) or self._stored_increment(key)
        if inc is None:
            return None
        if "boxes" not in inc:  # stored by an earlier transaction: its message has them
            row = self.db.one("SELECT body FROM messages WHERE table_id = ? AND seq = ?",
                              (key[0], inc["seq"]))
            payload = json.loads(row["body"]).get("payload", {}) if row else {}
            inc = {**inc, "boxes": payload.get("boxes", []), "wager": payload.get("wager")}
        return {"pool_id": inc["pool"], "boxes": inc["boxes"], "wager": inc["wager"],
                "cancelled": bool(inc.get("cancelled"))}

    def _hold_hit(self, t: _Table, body: dict[str, Any], pool: Pool, why: str,
                  alarm: bool) -> None:
        """The jackpot lock: the hit is recorded PENDING for a person, never paid here."""
        p = body["payload"]
        text = held_text(t.id, p["round"], why)
        self.held_hits.append((t.id, p["round"], body["seq"], pool.id, self.utc, pool.amount,
                               why[:2000], json.dumps(body, sort_keys=True), "pending",
                               force_bool(False)))
        self.result.held_hits.append(text)
        # Waiting for a person: an alarm until decided (critical when it does not add up).
        self.ledger.alarm(text, pool.id, t.id, kind="held_hit", subject=f"round {p['round']}",
                          severity="critical" if alarm else "warning")
        raise _HeldHit(why)

    def _stored_increment(self, key: tuple[str, int]) -> dict[str, Any] | None:
        if key not in self.looked_up:  # a parked message drained into this batch
            row = self.db.one(
                "SELECT seq, pool_id, amount, meter_part, reserve_part, cancelled_seq"
                " FROM increments WHERE table_id = ? AND round = ?", key,
            )
            self.looked_up.add(key)
            if row is not None:
                self.stored[key] = _increment_of(row)
        return self.stored.get(key)

    def _reanswer(self, table_id: str, body: dict[str, Any]) -> None:
        payload = body.get("payload")
        if isinstance(payload, dict) and isinstance(payload.get("round"), int):
            award = self.ledger.award_for(table_id, payload["round"])
            if award is not None:
                self.result.awards.append((table_id, award))

