"""Player Cards at head office (issue 29): which cards are valid, what each card's Loss Limit
leaves in its current period, the reservations tables hold against it, and each round's result.

A table reserves the most a card can lose in a round before the first card (`card_reserve`,
UTH 13.3); head office grants it only if it fits what remains of the card's Loss Limit in its
current period, across every table of the property. The decision is one write transaction
that first locks the card's row (`SELECT ... FOR UPDATE` on PostgreSQL; SQLite has one writer
at a time, BEGIN IMMEDIATE), then reads the period's settled net and every open reservation of
the card, then writes the reservation: two tables racing the same card take turns on that row,
and the second decides on what the first committed. Settlement (`card_settled`, an outbox
message applied exactly once with the table's other messages) takes the same lock, records the
round's net in the period its reservation was granted in, and releases the reservation.

What remains: limit - max(net loss so far in the period, 0) - open reservations. A player's
winnings in the period lower the net loss, but never lift the allowance above the Loss Limit
itself (the stricter reading of "the maximum net loss over a period": docs/headoffice.md). A
reservation never settled stays held: it only ever makes the limit stricter.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from headoffice.db import Database
from headoffice.ledger.common import LedgerError
from headoffice.ledger.decisions import authorised, reason_of
from shared.clock import utc_now
from shared.errors import InputError
from shared.link import patron
from shared.link.contract import MAX_CENTS
from shared.link.outbox import OutboxType
from shared.money import dollars

PERIOD_KINDS = ("day", "week", "month")
MAX_PERIOD_LEN = 366
MAX_LIST = 1000  # cards a listing shows
MAX_LOG = 200  # log entries (refusals, restrictions, decisions) the card's view shows
UNKNOWN = "unknown card: head office has no such Player Card (UTH 13.1)"
Row = dict[str, Any]


# -- periods ---------------------------------------------------------------------------------
def _dt(utc: str) -> datetime:
    return datetime.fromisoformat(utc.replace("Z", "+00:00"))


def _utc(dt: datetime) -> str:
    return dt.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def period_end(kind: str, length: int, start: str) -> str:
    """The end of the period that starts at `start` (exclusive)."""
    s = _dt(start)
    if kind == "day":
        return _utc(s + timedelta(days=length))
    if kind == "week":
        return _utc(s + timedelta(weeks=length))
    months = s.month - 1 + length
    year, month = s.year + months // 12, months % 12 + 1
    day = min(s.day, calendar.monthrange(year, month)[1])  # 31 Jan + 1 month: 28/29 Feb
    return _utc(s.replace(year=year, month=month, day=day))


def current_start(kind: str, length: int, start: str, now: str) -> str:
    """The start of the period `now` falls in, the periods following on from `start`."""
    if kind != "month":  # fixed length: straight there
        span = timedelta(days=length * (7 if kind == "week" else 1))
        passed = (_dt(now) - _dt(start)) // span
        return _utc(_dt(start) + span * passed) if passed > 0 else start
    while period_end(kind, length, start) <= now:
        start = period_end(kind, length, start)
    return start


# -- reading a card under its lock ------------------------------------------------------------
def lock_cards(db: Database, cards: Iterable[str]) -> None:
    """Lock the cards' rows in one order (a batch that settles several cards): two batches
    naming the same cards never deadlock."""
    ids = sorted(set(cards))
    if ids and db.dialect == "postgresql":
        db.execute(f"SELECT card_id FROM cards WHERE card_id IN ({', '.join('?' * len(ids))})"
                   f" ORDER BY card_id{db.for_update}", ids)


def _card(db: Database, card: str, now: str, lock: bool = True) -> Row | None:
    """The card's row, locked, its period rolled on to the one `now` falls in (written)."""
    row = db.one(f"SELECT * FROM cards WHERE card_id = ?{db.for_update if lock else ''}",
                 (card,))
    if row is None:
        return None
    start = current_start(row["period_kind"], int(row["period_len"]), row["period_start"], now)
    if start != row["period_start"]:
        row["period_start"] = start
        if lock:
            db.write("UPDATE cards SET period_start = ? WHERE card_id = ?", (start, card))
    return row


def figures(db: Database, row: Row, now: str,
            exclude: tuple[str, int] | None = None) -> dict[str, Any]:
    """What the card's limit leaves: the period's settled net (the player's), its net loss,
    the open reservations (all but `exclude`'s, a (table, round)), and what remains."""
    net = db.one("SELECT COALESCE(SUM(net), 0) AS n FROM card_rounds WHERE card_id = ?"
                 " AND period_start = ?", (row["card_id"], row["period_start"]))
    held = db.execute("SELECT table_id, round, amount FROM card_reservations WHERE card_id = ?"
                      " AND settled = ?", (row["card_id"], False))
    net_cents = int(net["n"]) if net else 0
    reserved = sum(int(r["amount"]) for r in held
                   if exclude is None or (r["table_id"], int(r["round"])) != exclude)
    limit = None if row["loss_limit"] is None else int(row["loss_limit"])
    remaining = None
    if limit is not None:
        remaining = limit - max(-net_cents, 0) - reserved
    restricted = (row["restricted_until"] is not None and row["restricted_until"] > now)
    return {"net": net_cents, "net_loss": -net_cents, "reserved": reserved, "limit": limit,
            "remaining": remaining, "restricted": restricted,
            "period_start": row["period_start"],
            "period_end": period_end(row["period_kind"], int(row["period_len"]),
                                     row["period_start"])}


def _log(db: Database, card: str, action: str, detail: str, *, person: str | None = None,
         table: str | None = None, round_: int | None = None,
         amount: int | None = None) -> None:
    db.write("INSERT INTO card_log (utc, card_id, action, person, table_id, round, amount,"
             " detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
             (utc_now(), card, action, person, table, round_, amount, detail[:500]))


# -- answering a table ------------------------------------------------------------------------
def answer(db: Database, req: dict[str, Any], now: str | None = None) -> dict[str, Any] | None:
    """A parsed request (patron.parse_card_request) -> the answer, decided in one transaction;
    None if the table is not enrolled (head office answers no stranger)."""
    now = now or utc_now()
    with db.transaction():
        enrolled = db.one("SELECT enrolled FROM tables WHERE id = ?", (req["table"],))
        if enrolled is None or not enrolled["enrolled"]:
            return None
        return _decide(db, req, now)


def _decide(db: Database, req: dict[str, Any], now: str) -> dict[str, Any]:
    table, card = req["table"], req["card"]
    reserve = req["type"] == "card_reserve"

    def out(valid: bool, reason: str | None, f: dict[str, Any] | None = None,
            granted: int | None = None) -> dict[str, Any]:
        if reason is not None and reserve:
            _log(db, card, "refused", reason, table=table, round_=req.get("round"),
                 amount=req.get("amount"))
        f = f or {}
        return patron.card_answer(
            table, req["req"], card, valid=valid, reason=reason, limit=f.get("limit"),
            remaining=None if f.get("remaining") is None else max(f["remaining"], 0),
            period_end=f.get("period_end"), restricted=bool(f.get("restricted")),
            granted=(granted if granted is not None else 0) if reserve else None)

    row = _card(db, card, now)
    if row is None:
        return out(False, UNKNOWN)
    if row["status"] != "active":
        return out(False, f"card invalidated at head office: {row['invalid_why'] or ''}"
                          " (UTH 13.1)")
    if not reserve:
        f = figures(db, row, now)
        return out(True, _restricted_text(row) if f["restricted"] else None, f)
    key = (table, req["round"])
    held = db.one("SELECT amount, settled FROM card_reservations WHERE table_id = ? AND"
                  " round = ? AND card_id = ?", (table, req["round"], card))
    f = figures(db, row, now, exclude=key)
    if f["restricted"]:
        return out(True, _restricted_text(row), f)
    if held is not None and held["settled"]:
        return out(True, f"round {req['round']} at table {table} is already settled for"
                         " this card", f)
    amount = req["amount"]
    if held is not None and amount <= int(held["amount"]):
        # Already held: a repeat, or a smaller total arriving after a larger one (a table's
        # requests may be decided out of order by two workers of a shared subscription). The
        # larger stays held, so what a table was granted is never released before settlement.
        if f["remaining"] is not None:
            f["remaining"] -= int(held["amount"])
        return out(True, None, f, granted=amount)
    if f["remaining"] is not None and amount > f["remaining"]:
        # 13.3: no wager that would exceed the Loss Limit. An earlier grant for the round
        # stays held (the table keeps what it was granted).
        return out(True, f"over the Loss Limit: {dollars(max(f['remaining'], 0))} remains"
                         " (UTH 13.3)", f)
    db.write("INSERT INTO card_reservations (table_id, round, card_id, amount, period_start,"
             " utc, settled) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (table_id, round, card_id)"
             " DO UPDATE SET amount = excluded.amount, utc = excluded.utc"
             " WHERE excluded.amount > card_reservations.amount",
             (table, req["round"], card, amount, row["period_start"], now, False))
    if f["remaining"] is not None:
        f["remaining"] -= amount
    return out(True, None, f, granted=amount)


def _restricted_text(row: Row) -> str:
    return (f"restricted by {row['restricted_by']} until {row['restricted_until']}:"
            f" {row['restricted_why']} (UTH 13.4)")


# -- the tables' outbox messages (in the ledger's batch transaction) ---------------------------
def apply_outbox(db: Database, table: str, seq: int, type_: str, p: dict[str, Any],
                 alarm: Any) -> int:
    """card_settled, card_restricted, chips_declared from a table's outbox, applied once (the
    batch's (table, seq) check); the amount the ledger's message row records. InputError: the
    message is refused (recorded and alarmed, the table's queue goes on)."""
    now = utc_now()
    card = p["card"]
    row = _card(db, card, now)
    if type_ == OutboxType.CARD_SETTLED:
        return _settled(db, table, seq, p, row, now, alarm)
    if type_ == OutboxType.CARD_RESTRICTED:
        if row is None:
            raise InputError(f"card_restricted: {UNKNOWN}")
        until = period_end(row["period_kind"], int(row["period_len"]), row["period_start"])
        by = f"{p['by']}@{table}"
        db.write("UPDATE cards SET restricted_until = ?, restricted_by = ?, restricted_why = ?,"
                 " updated_utc = ? WHERE card_id = ?", (until, by, p["reason"], now, card))
        _log(db, card, "restricted", f"until {until} (the period resets; UTH 13.4):"
             f" {p['reason']}", person=by, table=table)
        return 0
    # chips_declared (UTH 13.2): recorded against the card, even one head office lacks
    _log(db, card, f"chips_{p['kind']}", f"{p['kind']} {dollars(p['amount'])} declared"
         " (UTH 13.2)", table=table, round_=p.get("round"), amount=p["amount"])
    return int(p["amount"])


def _settled(db: Database, table: str, seq: int, p: dict[str, Any], row: Row | None,
             now: str, alarm: Any) -> int:
    card, round_ = p["card"], p["round"]
    held = db.one("SELECT amount, period_start, settled FROM card_reservations WHERE"
                  " table_id = ? AND round = ? AND card_id = ?", (table, round_, card))
    if db.one("SELECT 1 AS x FROM card_rounds WHERE table_id = ? AND round = ? AND"
              " card_id = ?", (table, round_, card)) is not None:
        raise InputError(f"card_settled: round {round_} at {table} is already settled for"
                         f" card {card}")
    # The round counts in the period its reservation was granted in (earlier rounds stand:
    # UTH 11.17.2); without one, in the card's current period.
    start = (held["period_start"] if held is not None
             else row["period_start"] if row is not None else now)
    db.write("INSERT INTO card_rounds (table_id, round, card_id, seq, period_start, reserved,"
             " wagered, net, returned, void, utc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
             (table, round_, card, seq, start, p["reserved"], p["wagered"], p["net"],
              p["returned"], p["void"], now))
    if held is not None:
        db.write("UPDATE card_reservations SET settled = ? WHERE table_id = ? AND round = ?"
                 " AND card_id = ?", (True, table, round_, card))
    granted = 0 if held is None else int(held["amount"])
    if row is None or (-p["net"] > granted and row["loss_limit"] is not None):
        what = UNKNOWN if row is None else (
            f"a loss of {dollars(-p['net'])}, more than the {dollars(granted)} reserved")
        alarm(f"table {table} round {round_} card {card}: settled {what}", None, table)
    return int(p["wagered"])


# -- operators --------------------------------------------------------------------------------
def _card_id(card: str) -> str:
    if not isinstance(card, str) or not patron.CARD_ID.fullmatch(card):
        raise InputError(f"card: 4-32 of A-Z a-z 0-9 _ -, got {str(card)[:40]!r}")
    return card


def _limit(limit: int | None) -> int | None:
    if limit is not None and not 0 <= limit <= MAX_CENTS:
        raise InputError(f"limit: 0..{MAX_CENTS} cents, got {limit}")
    return limit


def _period(kind: str, length: int) -> None:
    if kind not in PERIOD_KINDS:
        raise InputError(f"period: one of {', '.join(PERIOD_KINDS)}, got {kind[:20]!r}")
    if not 1 <= length <= MAX_PERIOD_LEN:
        raise InputError(f"period length: 1..{MAX_PERIOD_LEN}, got {length}")


def add_card(db: Database, card: str, *, limit: int | None, kind: str, length: int,
             start: str | None, operator: str, allowed: Iterable[str], reason: str) -> Row:
    """A new card (its id only: head office's patron records hold who it is)."""
    _card_id(card)
    _limit(limit)
    _period(kind, length)
    authorised(operator, allowed, "add a Player Card")
    why = reason_of(reason)
    now = utc_now()
    start = _day_start(now) if start is None else _utc(_dt(start))
    with db.transaction():
        if db.write("INSERT INTO cards (card_id, status, loss_limit, period_kind, period_len,"
                    " period_start, created_utc, updated_utc) VALUES (?, 'active', ?, ?, ?, ?,"
                    " ?, ?) ON CONFLICT (card_id) DO NOTHING",
                    (card, limit, kind, length, start, now, now)) == 0:
            raise LedgerError(f"card {card} exists already (card limit to change it)")
        _log(db, card, "added", f"limit {_shown(limit)} per {length} {kind}(s) from {start}:"
             f" {why}", person=operator, amount=limit)
    return show(db, card)


def _day_start(now: str) -> str:
    return _utc(_dt(now).replace(hour=0, minute=0, second=0, microsecond=0))


def _shown(limit: int | None) -> str:
    return "none" if limit is None else dollars(limit)


def _change(db: Database, card: str, operator: str, allowed: Iterable[str], reason: str,
            what: str) -> tuple[str, str, Row]:
    """Checks, then (inside the caller's transaction) the card's row locked."""
    _card_id(card)
    authorised(operator, allowed, what)
    why = reason_of(reason)
    now = utc_now()
    row = _card(db, card, now)
    if row is None:
        raise LedgerError(f"no card {card} at head office")
    return why, now, row


def set_limit(db: Database, card: str, *, limit: int | None, kind: str | None = None,
              length: int | None = None, operator: str, allowed: Iterable[str],
              reason: str) -> Row:
    """A new Loss Limit (and period): from now; reservations granted before stay held."""
    _limit(limit)
    with db.transaction():
        why, now, row = _change(db, card, operator, allowed, reason, "change a Loss Limit")
        kind = kind or row["period_kind"]
        length = length or int(row["period_len"])
        _period(kind, length)
        db.write("UPDATE cards SET loss_limit = ?, period_kind = ?, period_len = ?,"
                 " updated_utc = ? WHERE card_id = ?", (limit, kind, length, now, card))
        _log(db, card, "limit", f"limit {_shown(row['loss_limit'])} -> {_shown(limit)} per"
             f" {length} {kind}(s): {why}", person=operator, amount=limit)
    return show(db, card)


def restrict(db: Database, card: str, *, operator: str, allowed: Iterable[str],
             reason: str) -> Row:
    """A supervisor's restriction until the card's period resets (UTH 13.4)."""
    with db.transaction():
        why, now, row = _change(db, card, operator, allowed, reason, "restrict a player")
        until = period_end(row["period_kind"], int(row["period_len"]), row["period_start"])
        db.write("UPDATE cards SET restricted_until = ?, restricted_by = ?, restricted_why = ?,"
                 " updated_utc = ? WHERE card_id = ?", (until, operator, why, now, card))
        _log(db, card, "restricted", f"until {until} (the period resets; UTH 13.4): {why}",
             person=operator)
    return show(db, card)


def unrestrict(db: Database, card: str, *, operator: str, allowed: Iterable[str],
               reason: str) -> Row:
    with db.transaction():
        why, now, row = _change(db, card, operator, allowed, reason, "lift a restriction")
        if row["restricted_until"] is None or row["restricted_until"] <= now:
            raise LedgerError(f"card {card} is not restricted")
        db.write("UPDATE cards SET restricted_until = NULL, restricted_by = NULL,"
                 " restricted_why = NULL, updated_utc = ? WHERE card_id = ?", (now, card))
        _log(db, card, "unrestricted", f"restriction by {row['restricted_by']} lifted: {why}",
             person=operator)
    return show(db, card)


def invalidate(db: Database, card: str, *, operator: str, allowed: Iterable[str],
               reason: str) -> Row:
    """The card is no longer valid: every check and reservation is refused (UTH 11.16.2 at
    the table for a hand in play)."""
    with db.transaction():
        why, now, row = _change(db, card, operator, allowed, reason, "invalidate a card")
        if row["status"] != "active":
            raise LedgerError(f"card {card} is invalid already")
        db.write("UPDATE cards SET status = 'invalid', invalid_why = ?, updated_utc = ?"
                 " WHERE card_id = ?", (why, now, card))
        _log(db, card, "invalidated", why, person=operator)
    return show(db, card)


# -- what people read -------------------------------------------------------------------------
def show(db: Database, card: str) -> Row:
    """A card's view: its limit and period, the period's net, what is reserved and where, the
    tables it played at, its refusals, restrictions and decisions. LedgerError if unknown."""
    _card_id(card)
    now = utc_now()
    row = _card(db, card, now, lock=False)
    if row is None:
        raise LedgerError(f"no card {card} at head office")
    f = figures(db, row, now)
    held = db.execute("SELECT table_id, round, amount, utc, period_start FROM card_reservations"
                      " WHERE card_id = ? AND settled = ? ORDER BY utc, table_id, round",
                      (card, False))
    tables = db.execute(
        "SELECT table_id, COUNT(*) AS rounds, SUM(wagered) AS wagered, SUM(net) AS net,"
        " MAX(utc) AS last_utc FROM card_rounds WHERE card_id = ? AND period_start = ?"
        " GROUP BY table_id ORDER BY table_id", (card, row["period_start"]))
    log = db.execute("SELECT log_no, utc, action, person, table_id, round, amount, detail"
                     " FROM card_log WHERE card_id = ? ORDER BY log_no DESC LIMIT ?",
                     (card, MAX_LOG))
    return {"card": card, "status": row["status"], "invalid_why": row["invalid_why"],
            "period_kind": row["period_kind"], "period_len": int(row["period_len"]),
            "restricted_until": row["restricted_until"] if f["restricted"] else None,
            "restricted_by": row["restricted_by"] if f["restricted"] else None,
            "restricted_why": row["restricted_why"] if f["restricted"] else None,
            **f, "remaining": None if f["remaining"] is None else max(f["remaining"], 0),
            "held": [{**r, "round": int(r["round"]), "amount": int(r["amount"])} for r in held],
            "tables": [{"table_id": t["table_id"], "rounds": int(t["rounds"]),
                        "wagered": int(t["wagered"]), "net": int(t["net"]),
                        "last_utc": t["last_utc"]} for t in tables],
            "refusals": [e for e in log if e["action"] == "refused"],
            "decisions": [e for e in log if e["action"] != "refused"]}


def list_cards(db: Database, limit: int = MAX_LIST) -> list[Row]:
    """Every card, by id: status, limit, period, net so far, reserved, remaining."""
    now = utc_now()
    out = []
    for row in db.execute("SELECT * FROM cards ORDER BY card_id LIMIT ?", (limit,)):
        row["period_start"] = current_start(row["period_kind"], int(row["period_len"]),
                                            row["period_start"], now)
        f = figures(db, row, now)
        out.append({"card": row["card_id"], "status": row["status"],
                    "invalid_why": row["invalid_why"], "period_kind": row["period_kind"],
                    "period_len": int(row["period_len"]),
                    **f, "remaining": None if f["remaining"] is None else max(f["remaining"], 0)})
    return out

