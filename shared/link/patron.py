"""The Player Card (patron) contract between tables and head office (issue 29).

A table asks head office whether a card is valid and what its Loss Limit leaves (`card_check`,
UTH 13.1, 13.3; Pai Gow 9.1), and reserves the most a card can lose in a round before the first
card (`card_reserve`), on `tablectl/v1/table/{table}/patron`; head office answers on
`tablectl/v1/ho/table/{table}/patron`. Both QoS 1, not retained. Settlements, restrictions and
declared chips go through the journal's outbox (contract.OUTBOX_TYPES: `card_settled`,
`card_restricted`, `chips_declared`; their payloads checked by contract.py with every outbox
message's). Every message carries only a card's opaque id, never a
name. Parsers are bounded and checked like contract.py's: SchemaError names the field.
"""

from __future__ import annotations

import re

from shared.link.contract import (
    CARD_ID,
    JSON,
    MAX_CARD_REASON,
    MAX_CENTS,
    MAX_SEQ,
    MAX_SMALL,
    PREFIX,
    TABLE_ID,
    VERSION,
    SchemaError,
    _bool,
    _int,
    _obj,
    _show,
    _str,
)

__all__ = ["CARD_ID", "REQUEST_TYPES", "answer_topic", "card_answer", "card_request",
           "parse_card_answer", "parse_card_request", "request_topic"]

REQUEST_TYPES = ("card_check", "card_reserve")
MAX_REQ = 64  # a request id: "<table>/<round>/<n>" (or "<table>/<n>")
MAX_REASON = MAX_CARD_REASON  # an answer's reason, as long as a restriction's (contract.py)
MAX_UTC = 40
REQ_ID = re.compile(r"[A-Za-z0-9_-]{1,32}(/[0-9]{1,30}){1,2}")


def request_topic(table: str) -> str:
    """Table -> head office, QoS 1, not retained."""
    return f"{PREFIX}/table/{table}/patron"


def answer_topic(table: str) -> str:
    """Head office -> table, QoS 1, not retained."""
    return f"{PREFIX}/ho/table/{table}/patron"


def card_request(table: str, req: str, type_: str, card: str, *, round: int | None = None,
                 amount: int | None = None, utc: str) -> JSON:
    """A request as the table sends it; `round` and `amount` only for card_reserve."""
    out: JSON = {"v": VERSION, "table": table, "req": req, "type": type_, "card": card,
                 "utc": utc}
    if type_ == "card_reserve":
        out["round"] = round
        out["amount"] = amount
    return out


def _table_and_req(data: JSON, what: str, topic_table: str | None) -> str:
    table = _str(data, "table", what, TABLE_ID, max_len=32)
    if topic_table is not None and table != topic_table:
        raise SchemaError(f"{what}: table {table!r} on the topic of {topic_table!r}")
    req = _str(data, "req", f"{what} from {table}", REQ_ID, max_len=MAX_REQ)
    if req.split("/", 1)[0] != table:  # "<table>/<round>/<n>": a table numbers its own
        raise SchemaError(f"{what} from {table}: 'req' {_show(req)} is not {table}/<round>/<n>")
    return table


def parse_card_request(raw: bytes | str, topic_table: str | None = None) -> JSON:
    """A table's request -> {v, table, req, type, card, utc[, round, amount]}; SchemaError
    naming the field. `topic_table`: the table of the topic it came on, which must be the
    message's own (a table never asks for another)."""
    what = "card request"
    data = _obj(raw, what, MAX_SMALL)
    table = _table_and_req(data, what, topic_table)
    what = f"card request from {table}"
    type_ = data.get("type")
    if type_ not in REQUEST_TYPES:
        raise SchemaError(f"{what}: 'type' must be one of {', '.join(REQUEST_TYPES)}, got"
                          f" {_show(type_)}")
    out: JSON = {"v": VERSION, "table": table, "req": data["req"], "type": type_,
                 "card": _str(data, "card", what, CARD_ID, max_len=32),
                 "utc": _str(data, "utc", what, max_len=MAX_UTC)}
    if type_ == "card_reserve":
        out["round"] = _int(data, "round", what, lo=1, hi=MAX_SEQ)
        out["amount"] = _int(data, "amount", what, lo=0, hi=MAX_CENTS)
    return out


def card_answer(table: str, req: str, card: str, *, valid: bool, reason: str | None = None,
                limit: int | None = None, remaining: int | None = None,
                period_end: str | None = None, restricted: bool = False,
                granted: int | None = None) -> JSON:
    """Head office's answer. `granted`: card_reserve only (0 = refused)."""
    return {"v": VERSION, "table": table, "req": req, "card": card, "valid": valid,
            "reason": None if reason is None else reason[:MAX_REASON], "limit": limit,
            "remaining": remaining, "period_end": period_end, "restricted": restricted,
            "granted": granted}


def _opt_cents(data: JSON, key: str, what: str) -> int | None:
    return None if data.get(key) is None else _int(data, key, what, lo=0, hi=MAX_CENTS)


def parse_card_answer(raw: bytes | str, topic_table: str | None = None) -> JSON:
    """Head office's answer -> the same fields, checked; SchemaError naming the field."""
    what = "card answer"
    data = _obj(raw, what, MAX_SMALL)
    _table_and_req(data, what, topic_table)
    out: JSON = {"v": VERSION, "table": data["table"], "req": data["req"],
                 "card": _str(data, "card", what, CARD_ID, max_len=32),
                 "valid": _bool(data, "valid", what),
                 "restricted": _bool(data, "restricted", what),
                 "limit": _opt_cents(data, "limit", what),
                 "remaining": _opt_cents(data, "remaining", what),
                 "granted": _opt_cents(data, "granted", what),
                 "reason": None, "period_end": None}
    for key, n in (("reason", MAX_REASON), ("period_end", MAX_UTC)):
        if data.get(key) is not None:
            out[key] = _str(data, key, what, max_len=n)
    return out
