"""How a record's hash is formed: the whole of what an auditor needs to recompute the chain.

    hash_0 = hex(sha256(utf8("tablectl:" + table_id + ":" + game)))
    hash_n = hex(sha256(utf8(hash_{n-1} + canonical_json(
                 [seq, utc, mono_ms, kind, round, data, fx]))))

`canonical_json` is JSON with sorted keys, no spaces, UTF-8 as is (not escaped), no NaN.
`fx` is the journaled effects of the event, `{"outbox": [[id, type, payload]...],
"round": [[number, status, summary]...]}` (empty keys omitted; null when none), so a pending
outbox message or a round record cannot be altered without breaking the chain. An outbox message
whose payload is a round record's summary is stored once, as `[id, type, null, number]`.

What a commit stores for each record (codec.py) is that array without its seq, exactly the
hashed text, so the chain is checked without re-encoding: `chain_hash` puts the seq back in.
A snapshot of the round machine's state is hashed with the chain hash of its event.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical(obj: Any) -> str:
    """The one JSON spelling that is hashed and stored."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def genesis_hash(table_id: str, game: str) -> str:
    return hashlib.sha256(f"tablectl:{table_id}:{game}".encode()).hexdigest()


def element(utc: str, mono_ms: int, kind: str, round_: int, data: str, fx: str | None) -> str:
    """A record as stored in a commit body: `[utc, mono_ms, kind, round, data, fx]`, canonical;
    `data`/`fx` are already canonical JSON (embedded as is). The hashed text is this with the
    record's seq in front."""
    return (f"[{canonical(utc)},{mono_ms},{canonical(kind)},{round_},{data},"
            f"{'null' if fx is None else fx}]")


def chain_hash(prev: str, seq: int, elem: str) -> str:
    """hash_n from hash_{n-1} and the record's stored text (`element`)."""
    return hashlib.sha256(f"{prev}[{seq},{elem[1:]}".encode()).hexdigest()


def record_hash(prev: str, seq: int, utc: str, mono_ms: int, kind: str, round_: int,
                data: str, fx: str | None) -> str:
    """Chain hash over the stored text; `data`/`fx` are already canonical JSON (embedded as is)."""
    return chain_hash(prev, seq, element(utc, mono_ms, kind, round_, data, fx))


def snapshot_hash(event_hash: str, state: str) -> str:
    return hashlib.sha256((event_hash + state).encode("utf-8")).hexdigest()
