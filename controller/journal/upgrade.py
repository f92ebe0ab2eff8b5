"""In-place upgrades of journals written by older code: schema 1 -> 2 -> 3 -> 4. No record is
rewritten; each upgrade is one transaction. And the one way back, 4 -> 3, for a rollback to
the software before schema 4."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from controller.journal import schema
from controller.journal.chain import genesis_hash
from controller.journal.dicts import deflate_dict
from controller.journal.errors import JournalError
from controller.journal.lock import WriteGuard
from controller.journal.mac import JournalKey
from controller.journal.read import Reader
from controller.journal.schema import mac_meta, utc_now
from controller.journal.walk import VerifyReport


@contextlib.contextmanager
def _to_schema(conn: sqlite3.Connection, path: Path, version: str) -> Iterator[None]:
    """One transaction that ends by setting meta `schema` to `version`; rolled back whole,
    JournalError, if any statement fails."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (version,))
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise JournalError(f"journal {path}: upgrade to schema {version} failed: {exc}") from exc


def upgrade_to_v2(conn: sqlite3.Connection, path: Path, game: str, last_seq: int) -> None:
    """Schema 1 -> 2, in one transaction: the records stay in `events`; `commits` takes the next
    ones. `snapshots` loses its foreign key to `events` (later snapshots are of commits).
    `upgrade_to_v3` follows at once."""
    with _to_schema(conn, path, "2"):
        conn.execute(schema.TABLE_COMMITS)
        conn.execute("CREATE TABLE snapshots_v2(seq INTEGER PRIMARY KEY, state BLOB NOT NULL, "
                     "hash TEXT NOT NULL)")
        conn.execute("INSERT INTO snapshots_v2 SELECT seq, state, hash FROM snapshots")
        conn.execute("DROP TABLE snapshots")
        conn.execute("ALTER TABLE snapshots_v2 RENAME TO snapshots")
        conn.executemany("INSERT INTO meta(key, value) VALUES (?,?)", [
            ("v1_last_seq", str(last_seq)), ("deflate_dict", deflate_dict(game)),
            ("upgraded_utc", utc_now())])


def upgrade_to_v3(conn: sqlite3.Connection, path: Path, key: JournalKey, table_id: str,
                  game: str, state: VerifyReport) -> None:
    """Schema 2 -> 3, in one transaction: a `mac` column in `commits`, `snapshots` and
    `outbox_acked` (NULL in the rows already there) and the MAC of the chain head now, which
    covers every record before it. No record is rewritten."""
    chain = state.last_hash or genesis_hash(table_id, game)
    with _to_schema(conn, path, "3"):
        for stmt in schema.V3_COLUMNS:
            conn.execute(stmt)
        conn.executemany("INSERT INTO meta(key, value) VALUES (?,?)", [
            *mac_meta(key, table_id, game, state.last_seq, chain, state.acked_upto),
            ("upgraded3_utc", utc_now())])


def upgrade_to_v4(conn: sqlite3.Connection, path: Path, last_seq: int) -> None:
    """Schema 3 -> 4, in one transaction: the commits after `last_seq` store no chain hash
    (schema.HASH_STORED_THROUGH); every row already there keeps its own. Nothing else changes:
    the MACs, the mark and the checkpoints were already over the recomputed chain."""
    with _to_schema(conn, path, "4"):
        conn.executemany("INSERT INTO meta(key, value) VALUES (?,?)", [
            (schema.HASH_STORED_THROUGH, str(last_seq)), ("upgraded4_utc", utc_now())])


def downgrade_to_v3(conn: sqlite3.Connection, guard: WriteGuard, reader: Reader) -> int:
    """Schema 4 -> 3 (`tablectl journal downgrade`, which `tablectl-slot rollback` runs): every
    row that stores no chain hash is given it, and the meta says schema 3, in one transaction;
    returns how many rows. The next start that may upgrade (the daemon, outside a trial boot)
    upgrades again. The caller holds the writer's mutex."""
    through = reader.hashes.stored_through
    if through is None:
        return 0
    fill: list[tuple[bytes, int]] = []
    prev: tuple[int, str] | None = None
    for key, body, stored in conn.execute(
            "SELECT seq, body, hash FROM commits WHERE seq > ? ORDER BY seq",
            (through,)).fetchall():
        if prev is None:
            prev = reader.commit_before(key)
        prev = (key, reader.decode(key, body, prev)[-1].hash)
        if stored == b"":
            fill.append((bytes.fromhex(prev[1]), key))
    with guard.transaction("downgrade to schema 3") as c:
        c.executemany("UPDATE commits SET hash = ? WHERE seq = ?", fill)
        c.execute("DELETE FROM meta WHERE key IN (?, 'upgraded4_utc')",
                  (schema.HASH_STORED_THROUGH,))
        c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('downgraded3_utc', ?)",
                  (utc_now(),))
        c.execute("UPDATE meta SET value = '3' WHERE key = 'schema'")
    reader.hashes.stored_through = None
    return len(fill)
