"""The table's accounting meters in the daemon: replayed from the journal at start, advanced
with each journaled batch, and the shift close (`meters.close_shift`) that journals the closing
figures with a `shift_meters` outbox message for head office (controller/meters.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from controller.journal import Journal, StoredEvent
from controller.link import contract
from controller.meters import CLOSE_SHIFT, SHIFT_METERS, Meters, replay
from controller.rounds.base import Effect

# Events the daemon itself journals (not a device's, not the dealer's). The round machines are
# stepped with them like with any event (so a replay steps them too) and take them as no move.
DAEMON_EVENTS = frozenset({CLOSE_SHIFT})

Rounds = list[tuple[int, str, Mapping[str, Any]]]


def _records(journal: Journal) -> Iterator[tuple[str, str, Rounds]]:
    for stored in journal.iter_events():
        yield stored.utc, stored.kind, rounds_of_stored(stored)


def rounds_of_stored(stored: StoredEvent) -> Rounds:
    return [(r.number, r.status, r.summary or {}) for r in stored.rounds]


def rounds_of_effects(effects: Sequence[Effect]) -> Rounds:
    """The rounds a step closed, as the journal will record them (its `round` effects)."""
    return [
        (int(e.data["number"]), str(e.data["status"]), e.data.get("summary") or {})
        for e in effects
        if e.kind == "round"
    ]


def meters_of(journal: Journal) -> Meters:
    """The meters of every record in the journal (the daemon at start; tests; audits)."""
    return replay(_records(journal))


def close_effects(table_id: str, closing: dict[str, Any]) -> list[Effect]:
    """What a shift close journals beside its event: the closing figures for head office
    (checked with the contract head office parses them with) and a line for the log."""
    figures = closing["figures"]
    said = Effect("log", {"text": f"shift {closing['shift']} closed: {figures['rounds_played']}"
                                  f" rounds played, {figures['rounds_voided']} voided"})
    try:
        payload = contract.check_outbox_payload(SHIFT_METERS, {"table": table_id, **closing})
    except contract.SchemaError as exc:  # figures beyond the contract's bounds: never sent
        return [said, Effect("alarm", {"severity": "technician", "text": "shift meters not"
                                       f" sent to head office: {exc}"})]
    return [Effect("outbox", {"type": SHIFT_METERS, "payload": payload}), said]
