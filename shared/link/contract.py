"""The wire contract between tables and head office: topics and versioned JSON payloads.

Every payload is a JSON object with `"v": 1` (the schema version). `parse_*` functions take the
raw bytes of a message and return a plain dict or raise `SchemaError` naming what is wrong;
nothing here touches the network. docs/mqtt.md and docs/asyncapi.yaml describe the same thing
for people and for tools. ~750 lines because it is the one document both ends and a test lab
read against docs/mqtt.md: every message's builder and parser beside the bounds they share.
"""

from __future__ import annotations

import json
import re
from typing import Any

from shared.errors import InputError
from shared.link.outbox import OutboxType

VERSION = 1
PREFIX = f"tablectl/v{VERSION}"
SHARE_GROUP = "headoffice"  # MQTT v5 shared-subscription group of head-office workers

TABLE_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
POOL_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
CARD_ID = re.compile(r"[A-Za-z0-9_-]{4,32}")  # a Player Card's opaque id (patron.py), never a name
MAX_CARD_REASON = 200  # why a card is restricted (card_restricted) or refused (patron.py)
RECOVERED = OutboxType.TABLE_RECOVERED  # a recovery of the journal (controller/journal/recover.py)
# The Player Card's outbox messages (shared/link/patron.py, issue 29): per card per round
# settled, a supervisor's restriction (UTH 13.4), chips declared (UTH 13.2).
CARD_TYPES = (OutboxType.CARD_SETTLED, OutboxType.CARD_RESTRICTED, OutboxType.CHIPS_DECLARED)
OUTBOX_TYPES = tuple(OutboxType)  # the registry: controller/events.py (rounds cannot import link)
MAX_RECOVERY_TEXT = 1000  # who ran a recovery, why, and what it found (the reason: 500)
MAX_METER_BOXES = 16  # boxes in a shift's meters (Pai Gow has 7, UTH 7; room for more)
MAX_WAGER_TYPES = 8  # wager types in one meter (UTH: ante, blind, play, trips)
MAX_USER = 64  # a login name (useradd allows 32); who verified a jackpot at the table
MAX_PAYLOAD = 256 * 1024  # a round_result with every card is ~3 KB; anything this big is junk
MAX_SMALL = 4 * 1024  # acks, pool values, status: a few dozen bytes each
MAX_DEPTH = 16  # nesting of objects and lists; the deepest real message (a round_result) is ~6
MAX_STRING = 4096  # characters in one string (keys too); card tokens and ids are short
MAX_DIGITS = 18  # an integer's digits: below 2**63, so every one fits a BIGINT column
MAX_CENTS = 10**12  # $10 billion: no amount on the wire is larger
MAX_AWARDS = 10**12  # hits answered from one pool (a pool value's `awards`): never reached
MAX_BOXES = 7  # player boxes at a UTH table (UTH_MAX_BOXES); a hit names at most this many
JOURNAL_HASH = re.compile(r"[0-9a-f]{64}")  # a journal record's chain hash (docs/journal.md)
SHA256 = JOURNAL_HASH  # an archive's digest: the same form
MAX_SEGMENT = 10**9  # segment numbers (one every >= 100 rounds: never reached)
MAX_SEQ = 2**62  # journal seqs and rounds
MAX_ARCHIVE_BYTES = 1 << 40  # an archive file's size: 1 TiB is junk
SEGMENT_ACK_STATUSES = ("held", "refused")
_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?(Z|[+-]\d\d:\d\d)")

JSON = dict[str, Any]


class SchemaError(InputError):
    """A message that does not follow the contract; the text says which field and why."""


# -- topics ------------------------------------------------------------------------------------
def outbox_topic(table: str) -> str:
    return f"{PREFIX}/table/{table}/outbox"


def birth_topic(table: str) -> str:
    return f"{PREFIX}/table/{table}/birth"


def status_topic(table: str) -> str:
    return f"{PREFIX}/table/{table}/status"


def segment_topic(table: str) -> str:
    """An archived journal segment's head and digest, table -> head office (docs/mqtt.md)."""
    return f"{PREFIX}/table/{table}/segment"


def segment_ack_topic(table: str) -> str:
    return f"{PREFIX}/ho/table/{table}/segment_ack"


def ack_topic(table: str) -> str:
    return f"{PREFIX}/ho/table/{table}/ack"


def award_topic(table: str) -> str:
    return f"{PREFIX}/ho/table/{table}/award"


def pool_topic(pool: str) -> str:
    return f"{PREFIX}/ho/pool/{pool}"


HO_STATUS_TOPIC = f"{PREFIX}/ho/status"
# What head-office workers subscribed to before issue 17, shared among them (each message goes to
# one worker): kept for tools that name it.
HO_SUBSCRIPTIONS = tuple(
    f"$share/{SHARE_GROUP}/{PREFIX}/table/+/{leaf}"
    for leaf in ("outbox", "birth", "status", "segment")
)
# Workers since issue 17 share births, statuses and archived segments (checked against the shared
# ledger, whichever worker hears them); each reads the outboxes of the tables in the partitions it
# holds, by exact topic (headoffice/routing.py). The tables' side is unchanged.
HO_SHARED_SUBSCRIPTIONS = tuple(
    f"$share/{SHARE_GROUP}/{PREFIX}/table/+/{leaf}" for leaf in ("birth", "status", "segment"))
HO_SHARED_OUTBOX = f"$share/{SHARE_GROUP}/{PREFIX}/table/+/outbox"  # before: unsubscribed


def table_of_topic(topic: str) -> tuple[str, str]:
    """`tablectl/v1/table/<id>/<leaf>` -> (id, leaf); SchemaError for anything else."""
    parts = topic.split("/")
    if len(parts) != 5 or "/".join(parts[:3]) != f"{PREFIX}/table":
        raise SchemaError(f"topic {topic!r} is not a table topic")
    if not TABLE_ID.fullmatch(parts[3]):
        raise SchemaError(f"topic {topic!r}: bad table id")
    return parts[3], parts[4]


# -- field readers -----------------------------------------------------------------------------
def _bounded_int(text: str) -> int:
    # Called by the JSON parser before int(): a 5,000-digit number never reaches int(), whose
    # own limit (sys.int_info.str_digits_check_threshold) raises a bare ValueError.
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise SchemaError(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_DIGITS})")
    return int(text)


def _no_constant(text: str) -> Any:
    raise SchemaError(f"{text} is not a JSON number")


def _check_shape(data: Any, what: str, depth: int = 1) -> None:
    """Depth and string lengths of a parsed document (`data` at `depth` in it), iteratively (no
    recursion to exhaust)."""
    stack: list[tuple[Any, int]] = [(data, depth)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            if len(node) > MAX_STRING:
                raise SchemaError(f"{what}: a string of {len(node)} characters"
                                  f" (at most {MAX_STRING})")
        elif isinstance(node, dict | list):
            if depth > MAX_DEPTH:
                raise SchemaError(f"{what}: nested deeper than {MAX_DEPTH}")
            items = list(node.items()) if isinstance(node, dict) else [(None, v) for v in node]
            for key, value in items:
                if key is not None and len(key) > MAX_STRING:
                    raise SchemaError(f"{what}: a key of {len(key)} characters")
                stack.append((value, depth + 1))


_STRICT = json.JSONDecoder(parse_int=_bounded_int, parse_constant=_no_constant)
_PLAIN = json.JSONDecoder(parse_constant=_no_constant)
_NINES = bytes.maketrans(b"012345678", b"999999999")
_LONG_DIGITS = b"9" * (MAX_DIGITS + 1)


def _obj(raw: bytes | str, what: str, limit: int = MAX_PAYLOAD) -> JSON:
    """Bytes from outside -> a JSON object of this schema version, or SchemaError: bounded in
    size, nesting, string length and integer digits before anything reads a field."""
    data, text = _decode(raw, what, limit)
    _shaped(data, text, what)
    return _versioned(data, what)


def _decode(raw: bytes | str, what: str, limit: int) -> tuple[Any, str]:
    """-> (the JSON value, its text), bounded in size and integer digits."""
    if len(raw) > limit:  # checked before decoding: nothing large is ever copied
        raise SchemaError(f"{what}: {len(raw)} bytes, more than {limit}")
    if isinstance(raw, bytes | bytearray):
        # Without a run of more than MAX_DIGITS digits anywhere in the text (every digit made
        # a '9', then one search: a regex took 8 us a message), no integer can be too long and
        # the C scanner reads them without a Python call each (issue 17).
        long_digits = _LONG_DIGITS in raw.translate(_NINES)
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SchemaError(f"{what}: not UTF-8") from None
    else:
        long_digits = _LONG_DIGITS in raw.encode("utf-8", "replace").translate(_NINES)
    decoder = _STRICT if long_digits else _PLAIN
    try:
        data = decoder.decode(raw)
    except SchemaError as exc:
        raise SchemaError(f"{what}: {exc}") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise SchemaError(f"{what}: not JSON ({exc})") from None
    return data, raw


def _shaped(data: Any, text: str, what: str, depth: int = 1) -> None:
    """Nesting and string lengths of `data`, found `depth` levels down a document, whose JSON
    text is `text` (or longer: an encoding of it). No decoded string (or key) is longer than the
    text it came from, and each object or list is one '{' or '[' of the text: a short text with
    few of them is within the bounds without walking it (a table's increment: ~200
    characters, 3 of them)."""
    if len(text) > MAX_STRING or text.count("{") + text.count("[") > MAX_DEPTH - depth + 1:
        _check_shape(data, what, depth)


def _versioned(data: Any, what: str) -> JSON:
    if not isinstance(data, dict):
        raise SchemaError(f"{what}: a JSON object is expected, got {type(data).__name__}")
    if data.get("v") != VERSION:
        raise SchemaError(f"{what}: schema version {_show(data.get('v'))}, this build speaks"
                          f" {VERSION}")
    return data


def _int(data: JSON, key: str, what: str, lo: int = 0, hi: int = MAX_CENTS) -> int:
    value = data.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise SchemaError(f"{what}: {key!r} must be an integer in {lo}..{hi}, got {_show(value)}")
    return value


def _show(value: Any) -> str:
    """A value from outside, short enough for a log line."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


def _bool(data: JSON, key: str, what: str) -> bool:
    value = data.get(key)
    if not isinstance(value, bool):
        raise SchemaError(f"{what}: {key!r} must be true or false, got {_show(value)}")
    return value


def _str(data: JSON, key: str, what: str, pattern: re.Pattern[str] | None = None,
         max_len: int = 64) -> str:
    value = data.get(key)
    if (not isinstance(value, str) or len(value) > max_len
            or (pattern is not None and not pattern.fullmatch(value))):
        raise SchemaError(f"{what}: {key!r} is not a valid value: {_show(value)}")
    return value


def _dict(data: JSON, key: str, what: str) -> JSON:
    value = data.get(key)
    if not isinstance(value, dict):
        raise SchemaError(f"{what}: {key!r} must be an object")
    return value


def _list(data: JSON, key: str, what: str) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list):
        raise SchemaError(f"{what}: {key!r} must be a list")
    return value


# One encoder for every message: json.dumps with options makes a new one per call.
_ENCODE = json.JSONEncoder(separators=(",", ":"), sort_keys=True).encode


def dumps(data: JSON) -> bytes:
    return _ENCODE(data).encode()


# -- table -> head office ----------------------------------------------------------------------
def outbox_message(table: str, seq: int, journal_seq: int, type_: str, utc: str,
                   payload: Any, journal_hash: str | None = None) -> JSON:
    """One journal outbox row on the wire: (table, seq) is its identity at head office.
    `journal_hash` is the chain hash of the journal record that wrote it (optional in v1:
    head office keeps the latest as the table's chain head, for an auditor to compare)."""
    out = {
        "v": VERSION,
        "table": table,
        "seq": seq,
        "msg_id": f"{table}/{seq}",
        "journal_seq": journal_seq,
        "type": type_,
        "utc": utc,
        "payload": payload,
    }
    if journal_hash is not None:
        out["journal_hash"] = journal_hash
    return out


def parse_outbox(raw: bytes | str, topic_table: str | None = None) -> JSON:
    """An outbox message. The envelope is checked here; the payload of each type by
    `check_outbox_payload` (a bad payload with a good envelope still has a sequence number, so
    head office records it as refused instead of blocking the table's queue behind it)."""
    return _outbox_envelope(_obj(raw, "outbox message"), topic_table)


def _outbox_envelope(data: JSON, topic_table: str | None) -> JSON:
    what = "outbox message"
    table = _str(data, "table", what, TABLE_ID)
    if topic_table is not None and table != topic_table:
        raise SchemaError(f"{what}: table {table!r} published on the topic of {topic_table!r}")
    what = f"outbox message from {table}"
    _int(data, "seq", what, lo=1)
    _int(data, "journal_seq", what, lo=1)
    _str(data, "type", what)
    _str(data, "utc", what)
    if "journal_hash" in data:
        _str(data, "journal_hash", what, JOURNAL_HASH)
    if "payload" not in data:
        raise SchemaError(f"{what}: no payload")
    return data


def _cents(data: JSON, key: str, what: str) -> int:
    return _int(data, key, what, lo=0, hi=MAX_CENTS)


def _box(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_BOXES


def check_card_payload(type_: str, payload: Any, what: str) -> JSON:
    """The payloads of `card_settled`, `card_restricted` and `chips_declared` (outbox; the
    Player Card messages of patron.py)."""
    _str(payload, "card", what, CARD_ID, max_len=32)
    if type_ == OutboxType.CARD_SETTLED:
        _int(payload, "round", what, lo=1, hi=MAX_SEQ)
        for key in ("reserved", "wagered", "returned"):
            _int(payload, key, what, lo=0, hi=MAX_CENTS)
        net = _int(payload, "net", what, lo=-MAX_CENTS, hi=MAX_CENTS)
        wagered = payload["wagered"]
        if _bool(payload, "void", what) and not -wagered <= net <= 0:
            # a void round returns everything but what a supervisor forfeited (UTH 13.10,
            # NSW Pai Gow 16.6): its net is 0 or that loss, never more than was wagered
            raise SchemaError(f"{what}: a void round's 'net' must be between -wagered"
                              f" ({-wagered}) and 0, got {net}")
    elif type_ == OutboxType.CARD_RESTRICTED:
        by = _str(payload, "by", what, max_len=64)
        reason = _str(payload, "reason", what, max_len=MAX_CARD_REASON)
        if not by or not by.isprintable() or not reason.strip() or not reason.isprintable():
            raise SchemaError(f"{what}: 'by' and 'reason' must be printable and not empty")
    else:  # chips_declared (UTH 13.2)
        if payload.get("round") is not None:
            _int(payload, "round", what, lo=1, hi=MAX_SEQ)
        _int(payload, "amount", what, lo=0, hi=MAX_CENTS)
        if payload.get("kind") not in ("purchase", "brought"):
            raise SchemaError(f"{what}: 'kind' must be purchase or brought, got"
                              f" {_show(payload.get('kind'))}")
    return payload


def check_outbox_payload(type_: str, payload: Any) -> JSON:
    """The payload of one outbox message type (docs/rounds-uth.md); SchemaError if wrong."""
    what = f"{type_} payload"
    if type_ not in OUTBOX_TYPES:
        raise SchemaError(f"unknown outbox message type {type_!r}")
    if not isinstance(payload, dict):
        raise SchemaError(f"{what}: must be an object")
    if type_ == OutboxType.ROUND_RESULT:
        if "round" not in payload and "number" in payload:
            # A Pai Gow round summary names its round `number` (UTH's: `round`); journals hold
            # such messages, so both are read, and head office stores it under `round`.
            _int(payload, "number", what, lo=1)
            payload = {**payload, "round": payload["number"]}
        _int(payload, "round", what, lo=1)
        _str(payload, "status", what)
        return payload
    if type_ == OutboxType.SHIFT_METERS:
        return _shift_meters(payload, what)
    if type_ == RECOVERED:
        return _recovered(payload, what)
    if type_ in CARD_TYPES:
        return check_card_payload(type_, payload, what)
    _int(payload, "round", what, lo=1)
    _str(payload, "pool_id", what, POOL_ID)
    if type_ in (OutboxType.JACKPOT_INCREMENT, OutboxType.JACKPOT_CANCEL):
        wager = _int(payload, "wager", what, lo=1)
        wagers = _int(payload, "wagers", what, lo=1)
        amount = _cents(payload, "amount", what)
        boxes = _list(payload, "boxes", what)
        if amount != wager * wagers:
            raise SchemaError(f"{what}: amount {amount} != wager {wager} x wagers {wagers}")
        if (len(boxes) != wagers or not all(_box(b) for b in boxes)
                or len(set(boxes)) != len(boxes)):  # boxes first: a list is unhashable
            raise SchemaError(f"{what}: boxes {_show(boxes)} do not match wagers {wagers}")
        return payload
    if type_ == OutboxType.JACKPOT_VERIFIED:  # UTH rule 15: an attendant verified a held hit
        boxes = _list(payload, "boxes", what)
        if (not boxes or len(boxes) > MAX_BOXES or not all(_box(b) for b in boxes)
                or len(set(boxes)) != len(boxes)):
            raise SchemaError(f"{what}: boxes must be 1..{MAX_BOXES} distinct boxes")
        who = payload.get("verified_by")
        if not isinstance(who, dict):
            raise SchemaError(f"{what}: verified_by must be an object {{uid, user}}")
        _int(who, "uid", what, lo=0, hi=2**32 - 1)
        user = who.get("user")
        if not isinstance(user, str) or not 0 < len(user) <= MAX_USER or not user.isprintable():
            raise SchemaError(f"{what}: verified_by.user must be 1..{MAX_USER} printable chars")
        return payload
    hits = _list(payload, "hits", what)
    entries = _list(payload, "entries", what)
    if not entries or not hits:
        raise SchemaError(f"{what}: no entries or no hits")
    if len(entries) > MAX_BOXES or len(hits) > MAX_BOXES or not all(_box(b) for b in hits):
        raise SchemaError(f"{what}: at most {MAX_BOXES} entries and hits, boxes 1..{MAX_BOXES}")
    for e in entries:
        if not isinstance(e, dict):
            raise SchemaError(f"{what}: entry {_show(e)} is not an object")
        _int(e, "box", what, lo=1, hi=MAX_BOXES)
        _int(e, "wager", what, lo=1)
        cards = _list(e, "cards", what)
        if len(cards) != 5 or not all(isinstance(c, str) and len(c) <= 3 for c in cards):
            raise SchemaError(f"{what}: box {e['box']}: cards must be 5 card tokens")
        if not isinstance(e.get("folded", False), bool):
            raise SchemaError(f"{what}: box {e['box']}: folded must be a boolean")
    return payload


def _recovered(payload: JSON, what: str) -> JSON:
    """table_recovered: who recovered the table's journal, why, and where its round numbers
    and outbox ids go on from (docs/journal.md, "Recovering")."""
    for key in ("by", "reason", "problem"):
        text = payload.get(key)
        if not isinstance(text, str) or not 0 < len(text) <= MAX_RECOVERY_TEXT \
                or not text.isprintable():
            raise SchemaError(f"{what}: {key!r} must be 1..{MAX_RECOVERY_TEXT} printable "
                              f"characters, got {_show(text)}")
    _int(payload, "round_next", what, lo=1, hi=2**62)
    _int(payload, "outbox_next", what, lo=1, hi=2**62)
    _int(payload, "journal_seq", what, lo=0, hi=2**62)
    if not isinstance(payload.get("fresh"), bool):
        raise SchemaError(f"{what}: 'fresh' must be true or false")
    if not isinstance(payload.get("voided_held", False), bool):  # optional
        raise SchemaError(f"{what}: 'voided_held' must be true or false")
    lost = payload.get("outbox_lost")  # optional: the ids skipped, [first, last]
    if lost is not None and not (
            isinstance(lost, list) and len(lost) == 2
            and all(type(n) is int and 1 <= n < MAX_SEQ for n in lost) and lost[0] <= lost[1]
            and lost[1] == payload["outbox_next"] - 1):
        raise SchemaError(f"{what}: 'outbox_lost' must be [first, last] ids, last = "
                          f"outbox_next - 1, got {_show(lost)}")
    return payload


def _shift_meters(payload: JSON, what: str) -> JSON:
    """A shift's closing meters (docs/operations.md "Meters"): every figure an integer in
    bounds, every name short, at most MAX_METER_BOXES boxes."""
    _str(payload, "table", what, TABLE_ID)
    _int(payload, "shift", what, lo=1, hi=2**62)
    _str(payload, "closed_utc", what)
    if payload.get("opened_utc") is not None:
        _str(payload, "opened_utc", what)
    _meter_figures(_dict(payload, "figures", what), f"{what} figures", boxes=True)
    _meter_figures(_dict(payload, "lifetime", what), f"{what} lifetime", boxes=False)
    if "incomplete" in payload:  # absent: whole (and every message of an older table)
        _meter_lacking(_dict(payload, "incomplete", what), f"{what} incomplete")
    return payload


INCOMPLETE_KEYS = frozenset({"missing_through", "shift", "first_round_counted"})


def _meter_lacking(d: JSON, what: str) -> None:
    """What a shift close's meters lack (controller/meters.py `close_incomplete`): the table
    replayed them from a journal whose records 1..missing_through were pruned, so they count
    no round before first_round_counted (null: none counted since); `shift`: the closing
    shift's figures lack them too, not only the lifetime's."""
    if set(d) != INCOMPLETE_KEYS:
        raise SchemaError(f"{what}: must have exactly {sorted(INCOMPLETE_KEYS)}")
    _int(d, "missing_through", what, lo=1, hi=MAX_SEQ)
    if not isinstance(d["shift"], bool):
        raise SchemaError(f"{what}: 'shift' must be a boolean")
    if d["first_round_counted"] is not None:
        _int(d, "first_round_counted", what, lo=1, hi=MAX_SEQ)


def _meter_figures(f: JSON, what: str, *, boxes: bool) -> None:
    _int(f, "rounds_played", what, hi=2**62)
    _int(f, "rounds_voided", what, hi=2**62)
    for key in ("first_round", "last_round"):
        if f.get(key) is not None:
            _int(f, key, what, lo=1, hi=2**62)
    _meter_money(f, what)
    _int(f, "house_win", what, lo=-MAX_CENTS)
    if not boxes:
        return
    per_box = _dict(f, "boxes", what)
    if len(per_box) > MAX_METER_BOXES:
        raise SchemaError(f"{what}: more than {MAX_METER_BOXES} boxes")
    for name, box in per_box.items():
        if not (name.isdigit() and 1 <= int(name) <= MAX_METER_BOXES) or not isinstance(box, dict):
            raise SchemaError(f"{what}: box {_show(name)} is not a box's figures")
        _meter_money(box, f"{what} box {name}")
        _int(box, "player_net", f"{what} box {name}", lo=-MAX_CENTS)


def _meter_money(f: JSON, what: str) -> None:
    for key in ("wagers", "payouts"):
        amounts = _dict(f, key, what)
        if len(amounts) > MAX_WAGER_TYPES:
            raise SchemaError(f"{what}: more than {MAX_WAGER_TYPES} wager types in {key}")
        for name in amounts:
            if not name.isidentifier() or len(name) > 16:
                raise SchemaError(f"{what}: wager type {_show(name)} in {key}")
            _cents(amounts, name, f"{what} {key}")
    for key in ("commission", "jackpot_contributions", "jackpot_awards"):
        _cents(f, key, what)


def birth_message(table: str, utc: str, snapshot: JSON) -> JSON:
    return {"v": VERSION, "table": table, "utc": utc, **snapshot}


def parse_birth(raw: bytes | str, topic_table: str | None = None) -> JSON:
    what = "birth message"
    data = _obj(raw, what)
    table = _str(data, "table", what, TABLE_ID)
    if topic_table is not None and table != topic_table:
        raise SchemaError(f"{what}: table {table!r} published on the topic of {topic_table!r}")
    pool = data.get("pool")
    if pool is not None and not isinstance(pool, dict):
        raise SchemaError(f"{what}: pool must be an object")
    pending = data.get("pending_hits", [])
    if not isinstance(pending, list) or not all(
        isinstance(h, dict) and isinstance(h.get("round"), int) for h in pending
    ):
        raise SchemaError(f"{what}: pending_hits must be a list of {{round, boxes}}")
    _service_fields(data, what)
    if "software" in data:
        _str(data, "software", what, max_len=MAX_SOFTWARE)
    return data


# Optional in schema 1 (a table before them sends none): whether the table is in service and,
# when not, why (its out-of-service reason, cut to MAX_REASON); in its birth and status.
MAX_REASON = 200
MAX_SOFTWARE = 64  # the birth's `software`: the table program's version


def _service_fields(data: JSON, what: str) -> None:
    if "in_service" in data and not isinstance(data["in_service"], bool):
        raise SchemaError(f"{what}: in_service must be true or false, got"
                          f" {_show(data['in_service'])}")
    if data.get("out_of_service") is not None:
        _str(data, "out_of_service", what, max_len=MAX_REASON)


def status_message(table: str, state: str, utc: str | None = None, *,
                   in_service: bool | None = None, reason: str | None = None) -> JSON:
    out: JSON = {"v": VERSION, "table": table, "state": state}
    if utc is not None:
        out["utc"] = utc
    if in_service is not None:
        out["in_service"] = in_service
        if not in_service and reason:
            out["out_of_service"] = reason[:MAX_REASON]
    return out


def parse_status(raw: bytes | str, topic_table: str | None = None) -> JSON:
    what = "status message"
    data = _obj(raw, what, MAX_SMALL)
    table = _str(data, "table", what, TABLE_ID)
    if topic_table is not None and table != topic_table:
        raise SchemaError(f"{what}: table {table!r} published on the topic of {topic_table!r}")
    if data.get("state") not in ("online", "offline"):
        raise SchemaError(f"{what}: state must be online or offline, got {data.get('state')!r}")
    _service_fields(data, what)
    return data


# -- head office -> table ----------------------------------------------------------------------
def ack_message(table: str, upto: int, last_round: int | None = None,
                pack: int | None = None) -> JSON:
    """`last_round` (head office's answer to a birth): the last round number it has ledgered
    for the table, so that a table whose journal is behind it never numbers a round again
    that head office holds (docs/journal.md, "Recovering"). `pack`: the most outbox rows head
    office reads in one packed message (below; absent: it reads single messages only)."""
    out: JSON = {"v": VERSION, "table": table, "upto": upto}
    if last_round is not None:
        out["round"] = last_round
    if pack is not None:
        out["pack"] = pack
    return out


def parse_ack(raw: bytes | str, table: str) -> int:
    return parse_ack_round(raw, table)[0]


def parse_ack_round(raw: bytes | str, table: str) -> tuple[int, int | None]:
    """-> (upto, the last round head office has ledgered, when the ack says it)."""
    return parse_ack_fields(raw, table)[:2]


def parse_ack_fields(raw: bytes | str, table: str) -> tuple[int, int | None, int]:
    """-> (upto, the last round head office has ledgered or None, the most rows it reads in one
    packed outbox message: 1 when the ack does not say, an older head office)."""
    what = "ack"
    data = _obj(raw, what, MAX_SMALL)
    if _str(data, "table", what, TABLE_ID) != table:
        raise SchemaError(f"{what}: for table {data['table']!r}, this is {table!r}")
    upto = _int(data, "upto", what, lo=0, hi=2**62)
    last_round = _int(data, "round", what, lo=0, hi=2**62) if "round" in data else None
    return upto, last_round, _int(data, "pack", what, lo=1, hi=PACK_MAX) if "pack" in data else 1


def pool_message(pool: str, amount: int, version: int, utc: str, *, awards: int | None = None,
                 wager: int | None = None) -> JSON:
    """A pool's value. `awards`: hits answered from the pool so far, so a table tells a lower
    value after an award from one that should not happen (UTH 2.4.3, 15.1.3); `wager`: the pool's
    qualifying jackpot wager in cents (UTH 15.2.5.3). Both optional in v1."""
    out: JSON = {"v": VERSION, "pool": pool, "amount": amount, "version": version, "utc": utc}
    if awards is not None:
        out["awards"] = awards
    if wager is not None:
        out["wager"] = wager
    return out


def parse_pool(raw: bytes | str) -> JSON:
    """-> the `ho.pool` event data {pool, amount, version, awards?, wager?}. The optional
    fields are passed on only when present: an older head office's value gives the same event
    (and journal bytes) as before."""
    what = "pool value"
    data = _obj(raw, what, MAX_SMALL)
    out = {
        "pool": _str(data, "pool", what, POOL_ID),
        "amount": _cents(data, "amount", what),
        "version": _int(data, "version", what, lo=1, hi=2**62),
    }
    if data.get("awards") is not None:
        out["awards"] = _int(data, "awards", what, lo=0, hi=MAX_AWARDS)
    if data.get("wager") is not None:
        out["wager"] = _int(data, "wager", what, lo=1, hi=MAX_CENTS)  # UTH 15.2.5.3
    return out


def award_message(table: str, pool: str, round_: int, seq: int, payouts: list[JSON]) -> JSON:
    return {"v": VERSION, "table": table, "pool": pool, "round": round_, "seq": seq,
            "payouts": payouts}


def parse_award(raw: bytes | str, table: str) -> JSON:
    """-> the `ho.award` event data {round, payouts: [{box, award, amount}]}."""
    what = "award"
    data = _obj(raw, what)
    if _str(data, "table", what, TABLE_ID) != table:
        raise SchemaError(f"{what}: for table {data['table']!r}, this is {table!r}")
    payouts = []
    for p in _list(data, "payouts", what):
        if not isinstance(p, dict):
            raise SchemaError(f"{what}: payout {_show(p)} is not an object")
        payouts.append({
            "box": _int(p, "box", what, lo=1, hi=MAX_BOXES),
            "award": _str(p, "award", what),
            "amount": _cents(p, "amount", what),
        })
    return {"round": _int(data, "round", what, lo=1), "payouts": payouts}


# -- journal segments (docs/journal.md "Segments, archive, retention") ---------------------------
def segment_message(table: str, number: int, first: int, last: int, prev: str, head: str,
                    digest: str, size: int, rounds: tuple[int, int], closed_utc: str) -> JSON:
    """An archived journal segment: seq `first`..`last`, the chain hash before it (`prev`) and
    after it (`head`), the archive's sha256 and size. Sent until head office answers."""
    return {"v": VERSION, "table": table, "segment": number, "first": first, "last": last,
            "prev": prev, "head": head, "digest": digest, "size": size,
            "rounds": [rounds[0], rounds[1]], "closed_utc": closed_utc}


def parse_segment(raw: bytes | str, topic_table: str | None = None) -> JSON:
    what = "segment message"
    data = _obj(raw, what, MAX_SMALL)
    table = _str(data, "table", what, TABLE_ID)
    if topic_table is not None and table != topic_table:
        raise SchemaError(f"{what}: table {table!r} published on the topic of {topic_table!r}")
    what = f"segment message from {table}"
    _int(data, "segment", what, lo=1, hi=MAX_SEGMENT)
    first = _int(data, "first", what, lo=1, hi=MAX_SEQ)
    if _int(data, "last", what, lo=1, hi=MAX_SEQ) < first:
        raise SchemaError(f"{what}: last {data['last']} before first {first}")
    for key in ("prev", "head", "digest"):
        _str(data, key, what, SHA256)
    _int(data, "size", what, lo=1, hi=MAX_ARCHIVE_BYTES)
    rounds = _list(data, "rounds", what)
    if (len(rounds) != 2 or not all(type(r) is int and 0 <= r <= MAX_SEQ for r in rounds)
            or rounds[0] > rounds[1]):
        raise SchemaError(f"{what}: rounds must be [first, last], got {_show(rounds)}")
    _str(data, "closed_utc", what, _UTC, max_len=40)
    return data


def segment_ack_message(table: str, number: int, head: str, digest: str, status: str,
                        reason: str | None = None) -> JSON:
    """Head office's answer: `held` (it stores the segment's head and digest) or `refused`
    (they do not agree with what it knows of the table's chain; `reason` says why)."""
    out: JSON = {"v": VERSION, "table": table, "segment": number, "head": head,
                 "digest": digest, "status": status}
    if reason is not None:
        out["reason"] = reason[:500]
    return out


def parse_segment_ack(raw: bytes | str, table: str) -> JSON:
    what = "segment ack"
    data = _obj(raw, what, MAX_SMALL)
    if _str(data, "table", what, TABLE_ID) != table:
        raise SchemaError(f"{what}: for table {data['table']!r}, this is {table!r}")
    out = {"segment": _int(data, "segment", what, lo=1, hi=MAX_SEGMENT),
           "head": _str(data, "head", what, SHA256),
           "digest": _str(data, "digest", what, SHA256),
           "status": _str(data, "status", what)}
    if out["status"] not in SEGMENT_ACK_STATUSES:
        raise SchemaError(f"{what}: status must be held or refused, got {_show(out['status'])}")
    if data.get("reason") is not None:
        out["reason"] = _str(data, "reason", what, max_len=500)
    return out


# -- packed outbox messages (issue 31: fewer MQTT messages per increment) ------------------------
# A relay with several rows due sends them as one message on the same outbox topic, once head
# office has said it reads packs (its ack's `pack`: the most rows in one). Each row keeps its own
# (table, seq) identity and is exactly the single message it would otherwise be: head office
# applies them one by one, as if they had come singly. An older head office sends no `pack` and
# gets single messages; an older table sends singles, which stay understood. Head office's
# Python cost per MQTT message (receive, PUBACK, parse, queue) is paid once per pack.
PACK_MAX = 64  # rows in one pack at most
PACK_BYTES = 64 * 1024  # a relay packs rows up to this size; a larger row goes alone


def outbox_pack(table: str, messages: list[JSON]) -> JSON:
    """Several outbox messages (each as `outbox_message` makes it) of one table, in one."""
    return {"v": VERSION, "table": table, "pack": messages}


def parse_outbox_messages(raw: bytes | str, topic_table: str | None = None,
                          ) -> tuple[list[tuple[JSON, str]], bool]:
    """A message on an outbox topic -> ([(outbox message, its text as a single message)],
    whether it was a pack): one, or a pack's 1..PACK_MAX, each checked as `parse_outbox` checks
    a single one (the pack's table is theirs). A row's text is its encoding by `dumps`, the
    relay's: what head office stores does not depend on how the row came."""
    what = "outbox message"
    data, text = _decode(raw, what, MAX_PAYLOAD)
    if not isinstance(data, dict) or "pack" not in data:
        _shaped(data, text, what)
        return [(_outbox_envelope(_versioned(data, what), topic_table), text)], False
    what = "outbox pack"
    _versioned(data, what)
    table = _str(data, "table", what, TABLE_ID)
    if topic_table is not None and table != topic_table:
        raise SchemaError(f"{what}: table {table!r} published on the topic of {topic_table!r}")
    items = _list(data, "pack", what)
    if not 1 <= len(items) <= PACK_MAX:
        raise SchemaError(f"{what} from {table}: {len(items)} messages (1..{PACK_MAX})")
    for key, value in data.items():  # anything beside the rows: bounded too
        if key != "pack":
            _check_shape({key: value}, what)
    rows = []
    for item in items:
        if not isinstance(item, dict) or item.get("v") != VERSION:
            raise SchemaError(f"{what} from {table}: {_show(item)} is not an outbox message"
                              f" of schema version {VERSION}")
        # Walked only when its own text is long or deep: a row is 2 levels down the pack.
        row_text = _ENCODE(item)
        _shaped(item, row_text, what, depth=3)
        rows.append((_outbox_envelope(item, table), row_text))
    return rows, True
