"""Helpers shared by the journal's tests (tests/journal/): a table, a clock, a filled journal."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from controller.journal import JOURNAL_FILE, Journal, verify_dir
from controller.rounds.base import Effect, Event, Now

TABLE, GAME = "T07", "paigow"


def now(i: int) -> Now:
    return Now(f"2026-11-25T21:{i // 60 % 60:02d}:{i % 60:02d}.000Z", 1000 * i)


def fill(j: Journal, rounds: int = 3, per_round: int = 10) -> None:
    """`rounds` rounds of `per_round` events; an outbox message every 4th event; the last event
    of each round records it (round 2 voided) with a snapshot."""
    first = j.last_round_number + 1
    for r in range(first, first + rounds):
        for k in range(per_round):
            i = j.last_seq + 1
            effects = [Effect("display", {"mode": "text", "text": "x"})]
            if i % 4 == 0:
                effects.append(Effect("outbox", {"type": "increment", "payload": {"cents": i}}))
            last = k == per_round - 1
            if last:
                status = "voided" if r == 2 else "completed"
                effects.append(Effect("round", {"number": r, "status": status,
                                                "summary": {"r": r}}))
            j.append(Event("dealer.action", {"i": i, "box": k % 8}), now(i), round=r,
                     effects=effects, snapshot={"round": r, "after": i} if last else None)


def raw(d: Path) -> sqlite3.Connection:
    return sqlite3.connect(d / JOURNAL_FILE, isolation_level=None)


def errors_of(d: Path) -> list[str]:
    rep = verify_dir(d)
    assert not rep.ok
    assert rep.as_json()["ok"] is False
    return rep.errors
