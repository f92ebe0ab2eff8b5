"""The journal's SQLite layout, its four schema versions, pragmas, and making a new journal
(docs/journal.md, "Storage"). Upgrades of older journals: upgrade.py."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from controller.journal.chain import genesis_hash
from controller.journal.dicts import deflate_dict
from controller.journal.errors import JournalError, RecordDamaged
from controller.journal.mac import JournalKey, fsync_dir

JOURNAL_FILE = "journal.sqlite3"


LOCK_FILE = "journal.lock"


SCHEMA_VERSION = "4"


# 1, 2 and 3: journals of older formats, upgraded when a writer opens them (1 -> 2 -> 3 -> 4).
SCHEMAS_READ = ("1", "2", "3", "4", "5")  # 5: schema 4 with a segment moved out


KEYED_SCHEMAS = ("3", "4", "5")  # the schemas whose rows carry MACs (mac.py)


# Small pages: each commit appends every page it modified to the WAL, so the page size sets the
# bytes written per commit (one 512-byte page is 536 bytes of WAL). Commit rows are ~50-700 bytes;
# a big one overflows, harmlessly.
PAGE_SIZE = 512


WAL_CHECKPOINT_PAGES = 4000  # 2 MB of WAL at 512-byte pages


TABLES_V1 = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE events(
    seq INTEGER PRIMARY KEY,
    utc TEXT NOT NULL,
    mono_ms INTEGER NOT NULL,
    kind TEXT NOT NULL,
    round INTEGER NOT NULL,
    data TEXT NOT NULL,
    fx TEXT,
    hash TEXT NOT NULL
);
CREATE TABLE outbox(id INTEGER PRIMARY KEY, seq INTEGER NOT NULL REFERENCES events(seq));
CREATE TABLE outbox_acked(upto_id INTEGER PRIMARY KEY, utc TEXT NOT NULL);
CREATE TABLE rounds(
    number INTEGER PRIMARY KEY,
    status TEXT NOT NULL,
    seq INTEGER NOT NULL REFERENCES events(seq)
);
CREATE TABLE snapshots(
    seq INTEGER PRIMARY KEY,
    state BLOB NOT NULL,
    hash TEXT NOT NULL
);
"""


# Schema 2 adds one table; the schema-1 tables stay (empty in a journal created as schema 2) and
# hold the records written before an upgrade.
TABLE_COMMITS = """
CREATE TABLE commits(
    seq INTEGER PRIMARY KEY,
    round INTEGER NOT NULL,
    rec INTEGER NOT NULL,
    out INTEGER NOT NULL,
    body BLOB NOT NULL,
    hash BLOB NOT NULL
)
"""


INDEX_COLUMNS = ("round", "rec", "out")  # commits columns that are bisected


# Schema 3 adds a MAC (HMAC-SHA256 with the table's key, controller/journal/mac.py) to each
# commit (over its seq and chain hash), snapshot and ack; NULL in rows written before the
# upgrade. meta `mac_since` is the seq from which every commit carries one, `mac_since_mac`
# MACs that seq, the chain hash there and `acked_at_mac` (the acks before MACs began).
V3_COLUMNS = (
    "ALTER TABLE commits ADD COLUMN mac BLOB",
    "ALTER TABLE snapshots ADD COLUMN mac BLOB",
    "ALTER TABLE outbox_acked ADD COLUMN mac BLOB",
)


V3_META = frozenset({"mac_since", "mac_since_mac", "acked_at_mac", "key_id"})


# Schema 4 stores no chain hash in the commits it writes: `hash` is an empty BLOB in every row
# after seq `hash_stored_through` (meta; 0 for a journal created as schema 4), recomputed from the
# records (anchor.py). 32 of a row's ~175 bytes: with 512-byte pages a round then allocates fewer
# pages, and each page allocated costs its parent's and page 1's frames (and, in a pruned
# journal, a freelist trunk's): docs/daemon.md, "Schema 4". Integrity is unchanged: verification
# always recomputed the chain, each commit's MAC covers the recomputed hash, and each checkpoint
# (every 32 rounds), segment head and the high-water mark carry it.
HASH_STORED_THROUGH = "hash_stored_through"


def hash_stored_through(meta: Mapping[str, str]) -> int | None:
    """The last seq whose commit row stores its chain hash; None: every row does (schema < 4).
    ValueError for a schema-4 journal whose meta does not say it as a number."""
    if meta.get("schema") not in ("4", "5"):
        return None
    value = meta.get(HASH_STORED_THROUGH, "")
    if not value.isdigit():
        raise RecordDamaged(f"meta {HASH_STORED_THROUGH} is {value!r}, not a number")
    return int(value)


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta"))


def v1_last_seq(meta: Mapping[str, str]) -> int | None:
    """The last seq stored as a schema-1 row (`events`); None for a schema-1 journal (all)."""
    if meta.get("schema") == "1":
        return None
    return int(meta["v1_last_seq"])


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def set_synchronous_full(conn: sqlite3.Connection, path: Path) -> None:
    conn.execute("PRAGMA synchronous=FULL")
    if conn.execute("PRAGMA synchronous").fetchone()[0] != 2:
        raise JournalError(f"journal {path}: PRAGMA synchronous=FULL did not take")


def set_pragmas(conn: sqlite3.Connection, path: Path) -> None:
    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]  # persistent; set at creation
    if str(mode).lower() != "wal":
        raise JournalError(f"journal {path}: journal_mode is {mode!r}, WAL required")
    set_synchronous_full(conn, path)
    conn.execute("PRAGMA foreign_keys=ON")
    if conn.execute("PRAGMA foreign_keys").fetchone()[0] != 1:
        raise JournalError(f"journal {path}: foreign_keys=ON did not take")
    # Checkpoint less often than SQLite's 1000 pages: a page changed by many commits is copied
    # to the main file once per checkpoint, so rarer checkpoints write fewer bytes per round.
    conn.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
    # Debian's SQLite (so Raspberry Pi OS's) defaults to secure_delete=ON: a prune would write
    # every page it frees, zeroed (a segment's worth of writes to the card for rows already
    # archived; 2.1 MB of WAL instead of 0.55 for 1,280 rounds of a year's journal). FAST zeroes
    # deleted content only where the page is written anyway; nothing here is secret.
    conn.execute("PRAGMA secure_delete=FAST")
    if conn.execute("PRAGMA secure_delete").fetchone()[0] != 2:
        raise JournalError(f"journal {path}: secure_delete=FAST did not take")


def read_acked_upto(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT coalesce(max(upto_id), 0) FROM outbox_acked").fetchone()[0])


def mac_meta(key: JournalKey, table_id: str, game: str, since: int, chain: str,
             acked: int) -> list[tuple[str, str]]:
    """The meta rows where MACs begin: at seq `since` (chain hash `chain`, acks up to `acked`)."""
    mac = key.mac("since", table_id, game, since, chain, str(acked))
    return [("mac_since", str(since)), ("mac_since_mac", mac.hex()),
            ("acked_at_mac", str(acked)), ("key_id", key.key_id)]


def create_journal(path: Path, table_id: str, game: str, key: JournalKey, *,
                   hashless: bool = True) -> None:
    """Build a new journal beside the target and link it into place: `journal.sqlite3` exists
    only complete, so an empty or half-made one is always corruption, never 'new'. Schema 4, or
    with `hashless=False` schema 3 (a trial boot: the software before may have to read it)."""
    tmp = path.with_name(path.name + ".new")
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{tmp}{suffix}")
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640))
    os.chmod(tmp, 0o640)  # whatever the umask; SQLite gives -wal/-shm the same mode
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN IMMEDIATE")
        for stmt in [*TABLES_V1.split(";"), TABLE_COMMITS, *V3_COLUMNS]:
            if stmt.strip():
                conn.execute(stmt)
        genesis = genesis_hash(table_id, game)
        schema4 = [(HASH_STORED_THROUGH, "0")] if hashless else []
        conn.executemany("INSERT INTO meta(key, value) VALUES (?,?)", [
            ("schema", SCHEMA_VERSION if hashless else "3"), ("table_id", table_id),
            ("game", game), ("created_utc", utc_now()), ("genesis", genesis),
            ("v1_last_seq", "0"), ("deflate_dict", deflate_dict(game)),
            *schema4, *mac_meta(key, table_id, game, 0, genesis, 0)])
        conn.execute("COMMIT")
    finally:
        conn.close()  # checkpoints and removes tmp's WAL
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # fails if a journal appeared meanwhile: never overwrite one
    finally:
        os.unlink(tmp)
    fsync_dir(path.parent)
