"""The table's accounting meters in the daemon: replayed from the journal at start, advanced
with each journaled batch, and the shift close (`meters.close_shift`) that journals the closing
figures with a `shift_meters` outbox message for head office (controller/meters.py).

A replay of the whole journal grows with the table's life (1,500 UTH rounds: 2.7 s on a PC),
so the daemon keeps a checkpoint beside the journal (`meters.json`, written with every second
journal snapshot, i.e. every 64 rounds, and each shift close): the meters up to a record, with
that record's seq and chain hash, MAC'd with the journal's key. At start a checkpoint whose
MAC, seq and hash match the journal is taken and only the records after it are replayed;
anything else (no file, another journal, an edited file) means a full replay. It is a cache:
the journal stays the record.

The meters' JSON is stored deflated (`state_z`, base64): a UTH table's is ~3.9 KB, ~4.5 KB once
quoted inside the file, two 4 KiB pages; deflated it is ~0.8 KB, one
page (docs/daemon.md, "Where the bytes of a round go"). A file of the older form (`state`, the
JSON as a string) is still read.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import os
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from controller.events import EffectKind
from controller.journal import Journal, StoredEvent
from controller.meters import CLOSE_SHIFT, SHIFT_METERS, Meters, replay
from controller.rounds.base import Effect
from shared.link import contract

# Events the daemon itself journals (not a device's, not the dealer's). The round machines are
# stepped with them like with any event (so a replay steps them too) and take them as no move.
DAEMON_EVENTS = frozenset({CLOSE_SHIFT})

Rounds = list[tuple[int, str, Mapping[str, Any]]]


CHECKPOINT = "meters.json"
MAC_DOMAIN = "meters-checkpoint"


# The meters' JSON inflates to at most this (a UTH table's is ~4 KB): a checkpoint that would
# inflate further is refused (a full replay), never inflated without bound.
MAX_STATE_BYTES = 1 << 20


def _records(journal: Journal, start_seq: int = 1) -> Iterator[tuple[str, str, Rounds]]:
    for stored in journal.iter_events(start_seq):
        yield stored.utc, stored.kind, rounds_of_stored(stored)


def rounds_of_stored(stored: StoredEvent) -> Rounds:
    return [(r.number, r.status, r.summary or {}) for r in stored.rounds]


def rounds_of_effects(effects: Sequence[Effect]) -> Rounds:
    """The rounds a step closed, as the journal will record them (its `round` effects)."""
    return [
        (int(e.data["number"]), str(e.data["status"]), e.data.get("summary") or {})
        for e in effects
        if e.kind == EffectKind.ROUND
    ]


def meters_of(journal: Journal) -> Meters:
    """The meters of every record in the journal (tests; audits; a start without checkpoint)."""
    return replay(_records(journal))


def _mac(journal: Journal, seq: int, chain_hash: str, state: str) -> str:
    return journal.key.mac(MAC_DOMAIN, journal.table_id, journal.game, seq, chain_hash,
                           state).hex()


def save_checkpoint(journal: Journal, meters: Meters, state_dir: Path) -> None:
    """The meters as of the journal's last record (written aside, renamed over; not fsync'd:
    a lost checkpoint only costs a longer replay)."""
    seq, chain_hash = journal.last_seq, journal.last_hash
    state = json.dumps(meters.to_state(), sort_keys=True, separators=(",", ":"))
    packed = base64.b64encode(zlib.compress(state.encode("utf-8"), 9)).decode("ascii")
    body = {"seq": seq, "hash": chain_hash, "state_z": packed,
            "mac": _mac(journal, seq, chain_hash, state)}
    tmp = state_dir / (CHECKPOINT + ".tmp")
    tmp.write_text(json.dumps(body), encoding="utf-8")
    os.replace(tmp, state_dir / CHECKPOINT)


def _state_of(body: Mapping[str, Any]) -> str:
    """The meters' JSON of a checkpoint (deflated, or as a string in the older form);
    ValueError if it is malformed or would inflate past MAX_STATE_BYTES."""
    if "state_z" not in body:
        return str(body["state"])
    try:
        packed = base64.b64decode(str(body["state_z"]), validate=True)
    except binascii.Error:
        raise ValueError("state_z is not base64") from None
    inflater = zlib.decompressobj()
    raw = inflater.decompress(packed, MAX_STATE_BYTES)
    if inflater.unconsumed_tail or inflater.unused_data or not inflater.eof:
        raise ValueError(f"state_z does not inflate to at most {MAX_STATE_BYTES} bytes")
    return raw.decode("utf-8")


def load_meters(journal: Journal, state_dir: Path) -> tuple[Meters, str]:
    """The journal's meters, from the checkpoint when it is this journal's, else replayed in
    full; and how ("checkpoint at seq N" / "full replay: why")."""
    start, meters, how = 1, None, "full replay"
    try:
        body = json.loads((state_dir / CHECKPOINT).read_text(encoding="utf-8"))
        seq, chain_hash, state = int(body["seq"]), str(body["hash"]), _state_of(body)
        if not hmac.compare_digest(str(body["mac"]), _mac(journal, seq, chain_hash, state)):
            how = "full replay: the checkpoint's MAC does not match"
        elif not 1 <= seq <= journal.last_seq or next(
                journal.iter_events(seq, seq)).hash != chain_hash:
            how = "full replay: the checkpoint is not of this journal"
        else:
            meters, start = Meters.from_state(json.loads(state)), seq + 1
            how = f"checkpoint at seq {seq}"
    except FileNotFoundError:
        how = "full replay: no checkpoint"
    except (OSError, ValueError, KeyError, TypeError, StopIteration, zlib.error) as exc:
        how = f"full replay: checkpoint unusable ({type(exc).__name__})"
    if meters is None:
        # Records pruned by retention are not replayed (they are in the archives): the meters
        # would silently restart at the first kept round, so they say what they lack.
        pruned = journal.reader.pruned[0]
        if pruned:
            how += f"; records 1..{pruned} were pruned: the meters lack their rounds"
        return replay(_records(journal), pruned), how
    for utc, kind, rounds in _records(journal, start):
        meters.record(utc, kind, rounds)
    return meters, how


def close_effects(table_id: str, closing: dict[str, Any]) -> list[Effect]:
    """What a shift close journals beside its event: the closing figures for head office
    (checked with the contract head office parses them with) and a line for the log."""
    figures = closing["figures"]
    said = Effect(EffectKind.LOG, {
        "text": f"shift {closing['shift']} closed: {figures['rounds_played']}"
                f" rounds played, {figures['rounds_voided']} voided"})
    try:
        payload = contract.check_outbox_payload(SHIFT_METERS, {"table": table_id, **closing})
    except contract.SchemaError as exc:  # figures beyond the contract's bounds: never sent
        return [said, Effect(EffectKind.ALARM, {"severity": "technician", "text": "shift meters not"
                                       f" sent to head office: {exc}"})]
    return [Effect(EffectKind.OUTBOX, {"type": SHIFT_METERS, "payload": payload}), said]
