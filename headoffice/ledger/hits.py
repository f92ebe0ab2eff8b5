"""Jackpot hits and their cancellations: in a batch (serialised per pool, in arrival order, the
pool's row held), held for a person at head office, approved (one signature, or two under dual
control: headoffice/ledger/decisions.py) or refused; an attendant's verification at the table
(rule 15) recorded against the held hit, never a release."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

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
from headoffice.ledger.decisions import LedgerDecisions, reason_of
from headoffice.ledger.decisions import authorised as authorised_
from headoffice.pools import ConservationError, Pool
from shared.errors import InputError
from shared.link import contract
from shared.money import dollars

# How long a worker's claim on an award it sends holds (claim_awards): far above a publish's
# PUBACK under load, so a live sender is never doubled; a dead one's awards wait this long.
SENDING_S = 120.0


class LedgerHits(LedgerDecisions):
    """Ledger: the held hits (the jackpot lock) and their approval."""

    db: Database
    clock: Any
    policy: HitPolicy
    shard: str

    # -- held hits (the jackpot lock) ----------------------------------------------------------
    def held_hits(self, pending_only: bool = False) -> list[dict[str, Any]]:
        """Hits held for an operator, oldest first; with who decided, when and why, and the
        attendant's verification at the table if one came."""
        where = " WHERE status = 'pending'" if pending_only else ""
        rows = self.db.execute(
            "SELECT hold_no, table_id, round, seq, pool_id, utc, meter_at_hit, reason, status,"
            " operator, decided_utc, note, award, delivered, verified_by, verified_utc"
            f" FROM held_hits{where} ORDER BY hold_no")
        for r in rows:
            r["delivered"] = bool(r["delivered"])
            r["award"] = None if r["award"] is None else json.loads(r["award"])
        return rows

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

    @staticmethod
    def _award_of(row: dict[str, Any], pool: Pool) -> tuple[Pool, Any, list[dict[str, Any]]]:
        """Head office's award for a held hit on the meter as it was at the hit (never more):
        (the pool after it, the engine's result, the payouts); LedgerError if it cannot be
        paid."""
        if pool.stopped:
            raise LedgerError(f"pool {pool.id} is stopped: {pool.stopped}")
        body = json.loads(row["body"])
        try:
            entries = hitcheck.entries_of(body["payload"])
            new, result = pool.award(entries, int(row["meter_at_hit"]))
        except (InputError, ConservationError) as exc:
            raise LedgerError(f"held hit #{row['hold_no']} cannot be paid ({exc}): refuse it"
                              ) from None
        return new, result, _payouts(result)

    def hit_review(self, hold_no: int) -> dict[str, Any]:
        """What an approver reads before deciding a held hit: the hit, the award head office
        would pay now (cents), each hand as head office evaluates the cards, what the checks
        found, the attendant's verification, the first approval under dual control, and how
        many signatures it needs. Reads only; LedgerError if there is no such hit."""
        row = self.db.one("SELECT * FROM held_hits WHERE hold_no = ?", (hold_no,))
        if row is None:
            raise LedgerError(f"no held hit #{hold_no}")
        payload = json.loads(row["body"])["payload"]
        review: dict[str, Any] = {
            k: row[k] for k in ("hold_no", "table_id", "round", "seq", "pool_id", "utc",
                                "meter_at_hit", "reason", "status", "operator", "decided_utc",
                                "note", "verified_by", "verified_utc")}
        review["flop"] = list(payload.get("flop") or [])
        review["hands"] = hitcheck.hands_of(payload)
        review["checks"] = hitcheck.problems(payload, self._wagered_stored(
            row["table_id"], int(row["round"])))
        review["payouts"], review["amount"], review["cannot_pay"] = [], None, None
        pool = self.pool(row["pool_id"])
        if row["award"] is not None:
            review["payouts"] = json.loads(row["award"])["payouts"]
        elif pool is None:
            review["cannot_pay"] = f"no pool {row['pool_id']!r}"
        else:
            try:
                review["payouts"] = self._award_of(row, pool)[2]
            except LedgerError as exc:
                review["cannot_pay"] = str(exc)
        if review["payouts"]:
            review["amount"] = sum(p["amount"] for p in review["payouts"])
        review["signatures"] = (2 if review["amount"] is not None
                                and hitcheck.needs_two(self.policy, review["amount"]) else 1)
        review["first"] = self._pending_decision("hit", str(hold_no))
        if review["first"] is not None:
            review["signatures"] = int(review["first"]["signatures"])
        review["decisions"] = self.decisions(kind="hit", subject=str(hold_no))
        return review

    def _wagered_stored(self, table: str, round_: int) -> dict[str, Any] | None:
        """The round's ledgered jackpot wagers {pool_id, boxes, wager, cancelled}, or None."""
        inc = self.db.one("SELECT seq, pool_id, cancelled_seq FROM increments"
                          " WHERE table_id = ? AND round = ?", (table, round_))
        if inc is None:
            return None
        msg = self.db.one("SELECT body FROM messages WHERE table_id = ? AND seq = ?",
                          (table, inc["seq"]))
        payload = json.loads(msg["body"]).get("payload", {}) if msg else {}
        return {"pool_id": inc["pool_id"], "boxes": payload.get("boxes", []),
                "wager": payload.get("wager"), "cancelled": inc["cancelled_seq"] is not None}

    def approve_hit(self, hold_no: int, *, operator: str, authorised: Iterable[str],
                    reason: str) -> dict[str, Any]:
        """An approval of a held hit by `operator`, a person the caller authenticated at head
        office (the console's session, the CLI's OS login) and in `authorised` (head office's
        operators). Pays head office's award by rule 15 on the meter as it was at the hit
        (never more) unless the award needs two signatures (dual control) and this is the
        first: then the approval is recorded and the hit stays pending for a second, different
        approver. Returns {status: "approved" | "pending", decision_no, amount (cents),
        award (the message the worker publishes to the table, `undelivered_awards`, or None),
        first_by (the first approver under dual control, or None)}."""
        why = reason_of(reason)
        authorised_(operator, authorised, "release a held hit")
        with self.db.transaction():
            row = self._held(hold_no)
            found = self._locked_pool(row["pool_id"])
            if found is None:
                raise LedgerError(f"no pool {row['pool_id']!r}")
            pool = found
            new, result, payouts = self._award_of(row, pool)
            amount = sum(x["amount"] for x in payouts)
            first = self._pending_decision("hit", str(hold_no))
            what = f"held hit #{hold_no} ({row['table_id']} round {row['round']})"
            if first is not None:
                self._not_twice(first, operator, what)
                if first["amount"] != amount:  # what the first signed is not what is paid
                    self._lapse(first["decision_no"], f"the award is now {amount} cents, not the"
                                f" {first['amount']} first approved")
                    first = None
            detail = {"table": row["table_id"], "round": int(row["round"]),
                      "pool": pool.id, "payouts": payouts}
            if first is None and hitcheck.needs_two(self.policy, amount):
                no = self._first_signature(
                    "hit", str(hold_no), status="pending", signatures=2, operator=operator,
                    reason=why, amount=amount, detail=detail,
                    outcome="first approval: waits for a second, different approver")
                # The hit's own alarm stays active, now saying what it waits for.
                self.alarm(f"{what}: first approval by {operator} ({dollars(amount)}, dual"
                           " control): waits for a second approver", pool.id, row["table_id"],
                           kind="held_hit", subject=f"round {row['round']}")
                log.warning("held hit #%s: first approval by %s", hold_no, operator)
                return {"status": "pending", "decision_no": no, "amount": amount,
                        "award": None, "first_by": operator}
            message = contract.award_message(row["table_id"], pool.id, int(row["round"]),
                                             int(row["seq"]), payouts)
            now = common.utc_now()
            self._write_pool(new)
            self.db.execute(
                "INSERT INTO hits (pool_id, hit_no, table_id, round, seq, utc, pool_before,"
                " pool_after, paid, seed_from_house, award) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                " ?)",
                (pool.id, new.hits, row["table_id"], row["round"], row["seq"], now, pool.amount,
                 new.amount, amount, result.seed_from_house,
                 json.dumps(message, sort_keys=True)))
            paid = f"paid {dollars(amount)}"
            if first is not None:
                no = int(first["decision_no"])
                self._second_signature(no, status="approved", operator=operator, reason=why,
                                       outcome=paid)
                who = f"{first['first_by']} and {operator}"
                note = f"{first['first_reason']} / {why}"
            else:
                no = self._first_signature("hit", str(hold_no), status="approved", signatures=1,
                                           operator=operator, reason=why, amount=amount,
                                           detail=detail, outcome=paid)
                who, note = operator, why
            self.db.execute(
                "UPDATE held_hits SET status = 'approved', operator = ?, decided_utc = ?,"
                " note = ?, award = ? WHERE hold_no = ?",
                (who, now, note[:1001], json.dumps(message, sort_keys=True), hold_no))
            # Decided: its alarm ends (the decision itself is in the audit trail).
            self.clear_alarm("held_hit", pool.id, row["table_id"], f"round {row['round']}")
        log.warning("held hit #%s approved by %s", hold_no, who)
        return {"status": "approved", "decision_no": no, "amount": amount, "award": message,
                "first_by": None if first is None else first["first_by"]}

    def refuse_hit(self, hold_no: int, *, operator: str, authorised: Iterable[str],
                   reason: str) -> None:
        """Never pay a held hit; who refused it, when and why are recorded (a first approval
        under dual control ends with it). Nothing is sent to the table: its hit stays PENDING
        there for the floor to resolve."""
        if not (reason or "").strip():
            raise LedgerError("a refusal needs a reason")
        why = reason_of(reason)
        authorised_(operator, authorised, "refuse a held hit")
        with self.db.transaction():
            row = self._held(hold_no)
            first = self._pending_decision("hit", str(hold_no))
            if first is not None:
                self._second_signature(int(first["decision_no"]), status="refused",
                                       operator=operator, reason=why, outcome="refused")
            else:
                self._first_signature("hit", str(hold_no), status="refused", signatures=1,
                                      operator=operator, reason=why, amount=None,
                                      detail={"table": row["table_id"],
                                              "round": int(row["round"]),
                                              "pool": row["pool_id"]},
                                      outcome="refused")
            self.db.execute(
                "UPDATE held_hits SET status = 'refused', operator = ?, decided_utc = ?,"
                " note = ? WHERE hold_no = ?", (operator, common.utc_now(), why, hold_no))
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
        """jackpot_verified: an attendant at the table says they verified its hit (rule 15).
        It is still the table's word (the name is a string the table sent), so it releases
        nothing: it is recorded against this table's pending held hit as a second factor the
        approver at head office sees. InputError (refused, alarmed and counted; nothing
        changes) for no such pending hit, a hit that does not add up, boxes that are not the
        hit's, or a hit already verified."""
        row = self.db.one("SELECT hold_no, status, pool_id, body, verified_by FROM held_hits"
                          " WHERE table_id = ? AND round = ?", key)
        why = ""
        if row is None:
            why = "no hit of this table held for the round"
        elif row["status"] != "pending":
            why = f"its held hit #{row['hold_no']} was already {row['status']}"
        elif row["pool_id"] != p["pool_id"]:
            why = f"its held hit is on pool {row['pool_id']}, not {p['pool_id']}"
        elif row["verified_by"] is not None:
            why = f"its held hit #{row['hold_no']} was already verified by {row['verified_by']}"
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
        who = p["verified_by"]
        verified_by = f"{who['user']} (uid {who['uid']}) at table {t.id}"
        self.db.execute("UPDATE held_hits SET verified_by = ?, verified_utc = ?"
                        " WHERE hold_no = ?", (verified_by, self.utc, row["hold_no"]))
        self.result.verified.append((int(row["hold_no"]), t.id, who["user"]))
        log.warning("held hit #%s: verified at the table by %s (recorded; a person at head"
                    " office releases it)", row["hold_no"], verified_by)
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

