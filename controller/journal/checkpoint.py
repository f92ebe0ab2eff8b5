"""Checkpoints: what start-up trusts so that it verifies only what follows (docs/journal.md,
"Checkpoints and fast start").

A checkpoint is written in the same transaction as each snapshot of the round machine's state:
the position after record `seq` (its chain hash, the round, the rounds completed and voided, the
last outbox id and the acknowledged one) and the snapshot's hash, as canonical JSON, MAC'd with
the table's key. A writer opening the journal takes the latest checkpoint whose MAC and snapshot
check out and verifies the chain from there; the whole chain (every checkpoint checked against
the records it sums up) is verified offline and by a background pass (background.py).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass
from typing import Any

from controller.journal.chain import canonical, snapshot_hash
from controller.journal.codec import Codec, snapshot_text
from controller.journal.errors import RecordDamaged
from controller.journal.mac import JournalKey
from controller.journal.records import Row

TABLE_CHECKPOINTS = """
CREATE TABLE IF NOT EXISTS checkpoints(
    seq INTEGER PRIMARY KEY,
    body TEXT NOT NULL,
    mac BLOB NOT NULL
)
"""
_DOMAIN = "checkpoint"
TRIED = 4  # checkpoints tried, newest first, before verifying from the start
# Below this many records the whole chain is walked at start anyway (~0.1 s): a young journal is
# checked as fully as ever, and READY stops growing with age only where it would matter.
WALK_WHOLE_BELOW = 20_000


@dataclass(frozen=True)
class Checkpoint:
    seq: int
    hash: str  # the chain hash after record `seq`
    round: int  # the round of record `seq`
    completed: int
    voided: int
    out: int  # the last outbox id written
    acked: int  # the last outbox id acknowledged when it was written
    snapshot: str  # the hash of the snapshot at `seq` (chain.snapshot_hash)
    # Round numbers skipped by recoveries so far (records.round_next): the next round is
    # completed + voided + skipped + 1. Left out of the text while 0, so that every checkpoint
    # written before recoveries skipped numbers keeps its canonical form (and its MAC).
    skipped: int = 0

    def text(self) -> str:
        body = asdict(self)
        if not self.skipped:
            del body["skipped"]
        return canonical(body)

    @property
    def last_round_number(self) -> int:
        return self.completed + self.voided + self.skipped

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        """ValueError unless `text` is exactly a checkpoint's canonical JSON."""
        try:
            obj = json.loads(text)
            cp = cls(**obj)
        except (TypeError, ValueError) as exc:
            raise RecordDamaged(f"not a checkpoint: {exc}") from exc
        if cp.text() != text or not all(
                type(getattr(cp, f)) is int and getattr(cp, f) >= 0
                for f in ("seq", "round", "completed", "voided", "out", "acked", "skipped")):
            raise RecordDamaged("not a checkpoint in canonical form")
        return cp


def mac(key: JournalKey, table_id: str, game: str, cp: Checkpoint) -> bytes:
    return key.mac(_DOMAIN, table_id, game, cp.seq, cp.text())


def insert(conn: sqlite3.Connection, key: JournalKey, table_id: str, game: str,
           cp: Checkpoint) -> None:
    conn.execute("INSERT INTO checkpoints(seq, body, mac) VALUES (?,?,?)",
                 (cp.seq, cp.text(), mac(key, table_id, game, cp)))


def has_table(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND "
                        "name='checkpoints'").fetchone() is not None


def check_row(key: JournalKey, table_id: str, game: str, seq: int, body: Any, tag: Any
              ) -> Checkpoint:
    """The checkpoint of one row; ValueError naming what is wrong with it."""
    cp = Checkpoint.parse(body if isinstance(body, str) else "")
    if cp.seq != seq:
        raise RecordDamaged(f"its body names seq {cp.seq}")
    if not key.check(tag, _DOMAIN, table_id, game, seq, cp.text()):
        raise RecordDamaged("MAC mismatch (written without the table's key)")
    return cp


def latest(conn: sqlite3.Connection, key: JournalKey, table_id: str, game: str,
           after: int) -> tuple[Checkpoint | None, dict[int, str]]:
    """The newest checkpoint (past seq `after` and WALK_WHOLE_BELOW) that checks out on its
    own: its MAC, and the MAC'd snapshot it names. The chain from it is verified by the caller.
    Also what was refused, newest first: a checkpoint that does not check out is never trusted,
    and an older one (or the start of the journal) is verified from instead (the walk from
    there passes it by: a cache entry not used cannot mislead; `tablectl journal verify`
    reports it)."""
    if not has_table(conn):
        return None, {}
    refused: dict[int, str] = {}
    for seq, body, tag in conn.execute(
            "SELECT seq, body, mac FROM checkpoints WHERE seq > ? ORDER BY seq DESC LIMIT ?",
            (max(after, WALK_WHOLE_BELOW), TRIED)).fetchall():
        try:
            cp = check_row(key, table_id, game, seq, body, tag)
            snap = conn.execute("SELECT hash, mac, state FROM snapshots WHERE seq = ?",
                                (seq,)).fetchone()
            if snap is None or snap[0] != cp.snapshot or not key.check(
                    snap[1], "snapshot", table_id, game, seq, snap[0]) or snapshot_hash(
                    cp.hash, snapshot_text(snap[2])) != cp.snapshot:
                raise RecordDamaged("its snapshot is missing or does not match")
            stored = conn.execute("SELECT hash FROM commits WHERE seq = ?", (seq,)).fetchone()
            # (Schema 4 stores none: the walk from here checks the next commit's MAC over it.)
            if stored is not None and stored[0] != b"" and stored[0] != bytes.fromhex(cp.hash):
                raise RecordDamaged("its chain hash is not the commit's")
        except ValueError as exc:
            refused[seq] = f"checkpoint at seq {seq} refused: {exc}"
            continue
        return cp, refused
    return None, refused


_SNAPSHOT_CODEC = Codec("")


def insert_snapshot(c: sqlite3.Connection, row: Row, mac: Any) -> None:
    """Deflated (no dictionary), and never deleted: a deleted snapshot's freed pages would be
    reused at the price of a freelist page written with each; they are ~300 bytes each.
    MAC'd over its seq and hash (which covers the event's chain hash and the state)."""
    assert row.snapshot is not None
    digest = snapshot_hash(row.hash, row.snapshot)
    c.execute("INSERT INTO snapshots(seq, state, hash, mac) VALUES (?,?,?,?)",
              (row.seq, _SNAPSHOT_CODEC.pack(row.snapshot), digest,
               mac("snapshot", row.seq, digest)))


def hash_at(conn: sqlite3.Connection, seq: int) -> str:
    """The chain hash the checkpoint at `seq` names ("" if there is none)."""
    row = conn.execute("SELECT body FROM checkpoints WHERE seq = ?", (seq,)).fetchone()
    return "" if row is None else Checkpoint.parse(row[0]).hash
