"""The Player Card (patron) contract between a table and head office (issue 29;
/work/briefs/patron-contract.md): topics, requests and answers, bounded and checked like
`contract.py`'s parsers. Privacy: a card travels only as its opaque id, never a name.

Owned by head office's side (carded-ho); this copy has exactly the contract's names so the table
builds against it before the merge.
"""

from __future__ import annotations

import re
from typing import Any

from controller.link import contract
from controller.link.contract import MAX_SMALL, PREFIX, SchemaError

CARD_ID = contract.CARD_ID  # the opaque id (4-32 letters, digits, _ or -)
REQ_ID = re.compile(r"[A-Za-z0-9_/.-]{1,64}")
REQUEST_TYPES = ("card_check", "card_reserve")
MAX_REASON = 200

JSON = dict[str, Any]


def request_topic(table: str) -> str:
    return f"{PREFIX}/table/{table}/patron"


def answer_topic(table: str) -> str:
    return f"{PREFIX}/ho/table/{table}/patron"


def card_request(table: str, req: str, type_: str, card: str, *, round: int | None = None,
                 amount: int | None = None, utc: str) -> JSON:
    out: JSON = {"v": contract.VERSION, "table": table, "req": req, "type": type_, "card": card,
                 "utc": utc}
    if type_ == "card_reserve":
        out["round"] = round
        out["amount"] = amount
    return out


def _envelope(raw: bytes | str, what: str, topic_table: str | None) -> JSON:
    data = contract._obj(raw, what, MAX_SMALL)
    table = contract._str(data, "table", what, contract.TABLE_ID)
    if topic_table is not None and table != topic_table:
        raise SchemaError(f"{what}: table {table!r} published on the topic of {topic_table!r}")
    contract._str(data, "req", what, REQ_ID)
    contract._str(data, "card", what, CARD_ID)
    return data


def parse_card_request(raw: bytes | str, topic_table: str | None = None) -> JSON:
    what = "card request"
    data = _envelope(raw, what, topic_table)
    type_ = contract._str(data, "type", what)
    if type_ not in REQUEST_TYPES:
        raise SchemaError(f"{what}: type {type_!r} is not one of {REQUEST_TYPES}")
    if type_ == "card_reserve":
        contract._int(data, "round", what, lo=1, hi=contract.MAX_SEQ)
        contract._int(data, "amount", what)
    contract._str(data, "utc", what)
    return data


def card_answer(table: str, req: str, card: str, *, valid: bool, reason: str | None = None,
                limit: int | None = None, remaining: int | None = None,
                period_end: str | None = None, restricted: bool = False,
                granted: int | None = None) -> JSON:
    return {"v": contract.VERSION, "table": table, "req": req, "card": card, "valid": valid,
            "reason": reason, "limit": limit, "remaining": remaining, "period_end": period_end,
            "restricted": restricted, "granted": granted}


def _optional_cents(data: JSON, key: str, what: str) -> None:
    if data.get(key) is not None:
        contract._int(data, key, what)


def parse_card_answer(raw: bytes | str, topic_table: str | None = None) -> JSON:
    what = "card answer"
    data = _envelope(raw, what, topic_table)
    for key in ("valid", "restricted"):
        if not isinstance(data.get(key, False), bool):
            raise SchemaError(f"{what}: {key} must be true or false")
    if "valid" not in data:
        raise SchemaError(f"{what}: valid is required")
    reason = data.get("reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON):
        raise SchemaError(f"{what}: reason must be text of at most {MAX_REASON} characters")
    for key in ("limit", "remaining", "granted"):
        _optional_cents(data, key, what)
    if data.get("period_end") is not None:
        contract._str(data, "period_end", what)
    return data
