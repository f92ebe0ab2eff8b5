"""What the journal holds, as Python values: an event to append (`Entry`), a record read back
(`StoredEvent`) with its outbox messages and round records, and the checks that turn an entry
into the exact text the chain hashes (`prepare`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.events import Effect, EffectKind, Event, Kind, Now
from controller.journal.chain import canonical, chain_hash, element
from controller.journal.errors import EntryRefused

LOSS_KIND = Kind.JOURNAL_LOSS_ACCEPTED  # the record `accept_loss` appends


ROUND_STATUSES = ("completed", "voided")


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    id: int  # the message's sequence number towards head office, contiguous from 1
    seq: int  # the event that produced it
    type: str
    payload: Any
    utc: str

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "seq": self.seq, "type": self.type, "payload": self.payload,
                "utc": self.utc}


@dataclass(frozen=True, slots=True)
class RoundRecord:
    number: int
    status: str  # completed | voided
    seq: int
    summary: Any
    utc: str

    def as_json(self) -> dict[str, Any]:
        return {"number": self.number, "status": self.status, "seq": self.seq,
                "summary": self.summary, "utc": self.utc}


@dataclass(frozen=True, slots=True)
class StoredEvent:
    seq: int
    utc: str
    mono_ms: int
    kind: str
    data: dict[str, Any]
    round: int
    hash: str
    outbox: tuple[OutboxMessage, ...] = ()
    rounds: tuple[RoundRecord, ...] = ()

    @property
    def event(self) -> Event:
        return Event(self.kind, self.data)

    @property
    def now(self) -> Now:
        return Now(self.utc, self.mono_ms)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seq": self.seq, "utc": self.utc, "mono_ms": self.mono_ms,
                               "kind": self.kind, "data": self.data, "round": self.round}
        if self.outbox:
            out["outbox"] = [m.as_json() for m in self.outbox]
        if self.rounds:
            out["rounds"] = [r.as_json() for r in self.rounds]
        return out


@dataclass(frozen=True)
class Entry:
    """One event to append with what it produced (see Journal.append)."""

    event: Event
    now: Now
    round: int
    effects: tuple[Effect, ...] = ()
    snapshot: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Row:
    seq: int
    round: int
    element: str
    hash: str
    outbox: list[list[Any]]
    rounds: list[list[Any]]
    snapshot: str | None


def json_value(obj: Any, what: str) -> str:
    """Canonical text of a JSON value that round-trips exactly (str keys only, no NaN)."""
    _check_keys(obj, what)
    try:
        text = canonical(obj)
        text.encode("utf-8")  # lone surrogates would fail later, inside the transaction
    except (TypeError, ValueError) as exc:
        raise EntryRefused(f"{what} is not JSON: {exc}") from exc
    return text


def _check_keys(obj: Any, what: str) -> None:
    # json.dumps silently turns int keys into strings; replay would then differ from the input.
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if not isinstance(k, str):
                raise EntryRefused(f"{what} has a non-string key {k!r}")
            _check_keys(v, what)
    elif isinstance(obj, list | tuple):
        for v in obj:
            _check_keys(v, what)


def fx_items(obj: Any) -> tuple[list[tuple[int, str, Any]], list[tuple[int, str, Any]]]:
    """The journaled effects of one event (the parsed `fx`): outbox messages and round records.

    An outbox message whose payload is exactly a round record's summary is stored once, as
    [id, type, null, round_number] (a round result is the same document for the audit trail
    and for head office; storing it twice doubled the bytes written per round)."""
    rnds = [(int(n), str(s), m) for n, s, m in obj.get("round", [])]
    summaries = {n: m for n, _s, m in rnds}
    outs = []
    for item in obj.get("outbox", []):
        if len(item) == 4:
            oid, mtype, _null, number = item
            payload = summaries[int(number)]
        else:
            oid, mtype, payload = item
        outs.append((int(oid), str(mtype), payload))
    return outs, rnds


def parse_fx(fx: str) -> tuple[list[tuple[int, str, Any]], list[tuple[int, str, Any]]]:
    return fx_items(json.loads(fx))


def outbox_next(data: Mapping[str, Any]) -> int | None:
    """The first outbox id after an accepted loss (`accept_loss`), if it skips any."""
    value = data.get("outbox_next")
    return value if type(value) is int and value >= 1 else None


def round_next(data: Mapping[str, Any]) -> int | None:
    """The first round number after a recovery (`accept_loss`, `start_fresh`), if it skips
    any: round numbers head office has ledgered, or the high-water mark names, are never
    used again (docs/journal.md, "Recovering")."""
    value = data.get("round_next")
    return value if type(value) is int and value >= 1 else None


def prepare(entry: Entry, seq: int, prev_hash: str, last_round: int, next_id: int,
            next_round: int) -> Row:
    """Validate one entry and compute its record; ValueError names what is wrong."""
    event, now, round_ = entry.event, entry.now, entry.round
    if not isinstance(event.kind, str) or not event.kind:
        raise EntryRefused(f"event kind must be a non-empty string, got {event.kind!r}")
    if not isinstance(now.utc, str) or type(now.mono_ms) is not int:
        raise EntryRefused(f"bad clock {now!r}")
    if type(round_) is not int or round_ < last_round:
        raise EntryRefused(f"round {round_!r} goes back from round {last_round}")
    data = json_value(dict(event.data), f"event {event.kind} data")
    outbox: list[list[Any]] = []
    rounds: list[list[Any]] = []
    for eff in entry.effects:
        if eff.kind == EffectKind.OUTBOX:
            mtype = eff.data.get("type")
            if not isinstance(mtype, str) or not mtype:
                raise EntryRefused(f"outbox effect without a type: {eff!r}")
            outbox.append([next_id, mtype, eff.data.get("payload")])
            next_id += 1
        elif eff.kind == EffectKind.ROUND:
            number, status = eff.data.get("number"), eff.data.get("status")
            if number != next_round:
                raise EntryRefused(f"round effect number {number!r}, expected {next_round}"
                                 " (round numbers are contiguous)")
            if status not in ROUND_STATUSES:
                raise EntryRefused(f"round effect status {status!r}, not one of {ROUND_STATUSES}")
            rounds.append([number, status, eff.data.get("summary")])
            next_round += 1
    summaries = {r[0]: r[2] for r in rounds}
    stored_outbox = [
        next(([m[0], m[1], None, n] for n, summary in summaries.items() if summary == m[2]), m)
        for m in outbox
    ]
    fx_obj: dict[str, Any] = {}
    if outbox:
        fx_obj["outbox"] = stored_outbox
    if rounds:
        fx_obj["round"] = rounds
    fx = json_value(fx_obj, "journaled effects") if fx_obj else None
    snap = None if entry.snapshot is None else json_value(dict(entry.snapshot), "snapshot")
    try:
        elem = element(now.utc, now.mono_ms, event.kind, round_, data, fx)
        h = chain_hash(prev_hash, seq, elem)
    except UnicodeEncodeError as exc:
        raise EntryRefused(f"event {event.kind}: text is not valid Unicode: {exc}") from exc
    return Row(seq, round_, elem, h, outbox, rounds, snap)


def stored_v1(row: tuple[Any, ...]) -> StoredEvent:
    """A schema-1 row (`events`)."""
    seq, utc, mono, kind, rnd, data, fx, h = row
    return stored_event(seq, utc, mono, kind, rnd, json.loads(data),
                        None if fx is None else json.loads(fx), h)


def stored_event(seq: int, utc: str, mono: int, kind: str, rnd: int, data: dict[str, Any],
                 fx: Any, h: str) -> StoredEvent:
    outbox: tuple[OutboxMessage, ...] = ()
    rounds: tuple[RoundRecord, ...] = ()
    if fx is not None:
        outs, rnds = fx_items(fx)
        outbox = tuple(OutboxMessage(i, seq, t, p, utc) for i, t, p in outs)
        rounds = tuple(RoundRecord(n, s, seq, m, utc) for n, s, m in rnds)
    return StoredEvent(seq, utc, mono, kind, data, rnd, h, outbox, rounds)
