"""The ledger's database: SQLite by default, PostgreSQL at scale, through one small interface.

The SQL is written once, in the subset both speak (`?` placeholders are rewritten to `%s` for
psycopg; `INSERT ... ON CONFLICT DO NOTHING`; SAVEPOINT-free). What differs is the dialect:
how a write transaction starts, whether rows are locked with `FOR UPDATE`, and how a column the
database numbers itself is declared (`{AUTO_KEY}` in the DDL). SQLite
serialises writers with `BEGIN IMMEDIATE`; on PostgreSQL the rows of the tables and pools a
transaction touches are locked, so several head-office workers never apply the same table's
messages or the same pool's hits concurrently.

`open_database` creates the schema and upgrades a ledger made by an older version (`_migrate`),
in one transaction; on PostgreSQL an advisory lock makes workers opening at once take turns.
"""

from __future__ import annotations

import contextlib
import fcntl
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from shared.clock import utc_now
from shared.errors import TablectlError

# The audit trail of every pool's parameters (create, set: applied or refused, resume).
# `entry_no` numbers a pool's entries 1, 2, 3 ... in the order they were made: it is taken as
# MAX + 1 inside the write transaction that holds the pool's row (locked FOR UPDATE on
# PostgreSQL, the whole database on SQLite), so it is gapless per pool and never depends on the
# clock (two changes in one millisecond, or a clock stepped back, keep their order).
PARAM_LOG_COLUMNS = """
    pool_id TEXT NOT NULL, entry_no BIGINT NOT NULL, utc TEXT NOT NULL, operator TEXT NOT NULL,
    action TEXT NOT NULL, forced BOOLEAN NOT NULL, outcome TEXT NOT NULL,
    live_tables TEXT NOT NULL, old TEXT, new TEXT, PRIMARY KEY (pool_id, entry_no)"""

# The alarms (a table offline, a pool stopped, a message refused ...: headoffice/ledger/
# alarms.py). `alarm_no` numbers them in the order they were raised, from the database's own
# generator: SQLite's rowid (an INTEGER PRIMARY KEY, given out under the database's single write
# lock), a PostgreSQL identity. Workers write alarms at once, each on its connection and with no
# common row locked, some inside a larger transaction: a MAX + 1 there would hand two of them
# the same number. `utc`: raised; `cond`: the condition it stands for, unique among the active
# (not cleared) ones (ALARMS_ACTIVE), so a condition seen again adds to `repeats`.
ALARMS_COLUMNS = """
    alarm_no {AUTO_KEY}, utc TEXT NOT NULL, pool_id TEXT, table_id TEXT, text TEXT NOT NULL,
    kind TEXT, severity TEXT, cond TEXT, subject TEXT, last_utc TEXT, last_text TEXT,
    repeats BIGINT, cleared_utc TEXT, acked_by TEXT, acked_utc TEXT, ack_note TEXT"""

# Columns added to `alarms` when alarms got kinds (added to older ledgers by _migrate; the
# alarms recorded before are history: kind `legacy`, cleared at the upgrade).
ALARMS_ADDED = (("kind", "TEXT"), ("severity", "TEXT"), ("cond", "TEXT"), ("subject", "TEXT"),
                ("last_utc", "TEXT"), ("last_text", "TEXT"), ("repeats", "BIGINT"),
                ("cleared_utc", "TEXT"), ("acked_by", "TEXT"), ("acked_utc", "TEXT"),
                ("ack_note", "TEXT"))
ALARMS_ACTIVE = ("CREATE UNIQUE INDEX IF NOT EXISTS alarms_active ON alarms (cond)"
                 " WHERE cleared_utc IS NULL")

# The audit trail's own entries: logins, failed logins, alarm acknowledgements (the decisions
# on held hits and pools are read where they are kept: headoffice/audit.py).
AUDIT_COLUMNS = """
    audit_no {AUTO_KEY}, utc TEXT NOT NULL, action TEXT NOT NULL, person TEXT NOT NULL,
    table_id TEXT, pool_id TEXT, subject TEXT, detail TEXT NOT NULL, client TEXT"""

# Columns added to `tables` after the first release (added to older ledgers by _migrate):
# `enrolled`, `enrolled_pool`: the configured tables (headoffice.toml [[tables]]); a table that
# is not enrolled is refused, never created on the fly. `journal_seq`, `chain_seq`,
# `chain_hash`: where the table's journal stood at the last message ledgered, and that
# record's chain hash when the table sends it (the chain head an auditor compares).
TABLES_ADDED = (("enrolled", "BOOLEAN"), ("enrolled_pool", "TEXT"), ("journal_seq", "BIGINT"),
                ("chain_seq", "BIGINT"), ("chain_hash", "TEXT"))

# Contributions not yet in their pool's row, one row per pool per writer (`shard`: one per
# Ledger, so one per worker): the exact meter and reserve parts, the wagers and the number of
# contributions (pool versions). A transaction that only contributes locks the pool's row
# FOR KEY SHARE, which other contributors share, and its own share FOR UPDATE, so workers'
# contributions to one pool commit side by side; everything else done to a pool (a hit, a
# cancellation, parameters, a resume) locks the pool's row FOR UPDATE, which waits for those
# and keeps them out, and folds every share into the row (`Ledger`, docs/headoffice.md).
# The pool is always its row plus its shares, read in one statement (one snapshot).
POOL_SHARES_COLUMNS = """
    pool_id TEXT NOT NULL, shard TEXT NOT NULL, meter TEXT NOT NULL, reserve TEXT NOT NULL,
    wagers_in BIGINT NOT NULL, changes BIGINT NOT NULL, PRIMARY KEY (pool_id, shard)"""

# ho_partitions, ho_workers: which worker reads which tables' outboxes, by lease (routing.py).

# Jackpot hits held for a person (the "jackpot lock"): a hit that does not add up, or an award
# at or above the verification threshold. Never paid until an authorised operator approves it
# (`status` pending -> approved | refused, with who and when); an approved hit's award is then
# in `hits` and `award` here, and `delivered` says the worker has published it to the table.
HELD_HITS_COLUMNS = """
    hold_no {AUTO_KEY}, table_id TEXT NOT NULL, round BIGINT NOT NULL, seq BIGINT NOT NULL,
    pool_id TEXT NOT NULL, utc TEXT NOT NULL, meter_at_hit BIGINT NOT NULL, reason TEXT NOT NULL,
    body TEXT NOT NULL, status TEXT NOT NULL, operator TEXT, decided_utc TEXT, note TEXT,
    award TEXT, delivered BOOLEAN NOT NULL, sending_by TEXT, sending_until DOUBLE PRECISION,
    verified_by TEXT, verified_utc TEXT"""

# Columns added to `held_hits` after the first release (added to older ledgers by _migrate):
# the worker that claimed an approved award to send it, and until when (epoch seconds):
# exactly one worker sends it (headoffice/ledger/hits.py `claim_awards`); the attendant's
# verification at the table (`jackpot_verified`: the table's word, recorded, never a release)
# and when head office received it.
HELD_HITS_ADDED = (("sending_by", "TEXT"), ("sending_until", "DOUBLE PRECISION"),
                   ("verified_by", "TEXT"), ("verified_utc", "TEXT"))

# The decisions people at head office made (headoffice/ledger/decisions.py): releasing or
# refusing a held hit, changing a pool's parameters. One row per decision: `kind` ('hit' |
# 'params'), `subject` (the held hit's number, the pool's id), `amount` (a hit's award in
# cents as head office computed it at the first signature), `detail` (JSON: what was decided),
# `signatures` needed (1, or 2 under dual control), the first signature and, under dual
# control, the second (who, when, why), and `status`: pending (one signature of two),
# approved, refused (by either), lapsed (what was signed changed before the second came).
DECISIONS_COLUMNS = """
    decision_no {AUTO_KEY}, kind TEXT NOT NULL, subject TEXT NOT NULL, status TEXT NOT NULL,
    signatures INTEGER NOT NULL, amount BIGINT, detail TEXT NOT NULL, first_by TEXT NOT NULL,
    first_utc TEXT NOT NULL, first_reason TEXT NOT NULL, second_by TEXT, second_utc TEXT,
    second_reason TEXT, outcome TEXT"""

# Player Cards (issue 29; headoffice/ledger/cards.py, docs/headoffice.md "Player Cards"). A card is
# an opaque id (never a name): its status (active | invalid), Loss Limit in cents (NULL: none set,
# where the profile does not require one), its period (`period_kind` day | week | month times
# `period_len`, the current one starting at `period_start`), and a supervisor's restriction (UTH
# 13.4) until the period resets. A reservation is the most a card can lose in one round at one
# table, held against the limit from before the first card until the round is settled (`settled`),
# in the period it was granted in. card_rounds: each round's result per card, as the table settled
# it (net: the player's, negative = a loss), counted in `period_start`. card_log: every decision
# about a card (a person's or head office's refusal), newest last. Every card row is locked (FOR
# UPDATE on PostgreSQL; SQLite: one writer) by whatever reserves against it or settles it, so the
# reservation is decided on what every table has committed.
CARDS_COLUMNS = """
    card_id TEXT PRIMARY KEY, status TEXT NOT NULL, loss_limit BIGINT,
    period_kind TEXT NOT NULL, period_len INTEGER NOT NULL, period_start TEXT NOT NULL,
    restricted_until TEXT, restricted_by TEXT, restricted_why TEXT, invalid_why TEXT,
    created_utc TEXT NOT NULL, updated_utc TEXT NOT NULL"""
CARD_RESERVATIONS_COLUMNS = """
    table_id TEXT NOT NULL, round BIGINT NOT NULL, card_id TEXT NOT NULL, amount BIGINT NOT NULL,
    period_start TEXT NOT NULL, utc TEXT NOT NULL, settled BOOLEAN NOT NULL,
    PRIMARY KEY (table_id, round, card_id)"""
CARD_ROUNDS_COLUMNS = """
    table_id TEXT NOT NULL, round BIGINT NOT NULL, card_id TEXT NOT NULL, seq BIGINT NOT NULL,
    period_start TEXT NOT NULL, reserved BIGINT NOT NULL, wagered BIGINT NOT NULL,
    net BIGINT NOT NULL, returned BIGINT NOT NULL, void BOOLEAN NOT NULL, utc TEXT NOT NULL,
    PRIMARY KEY (table_id, round, card_id)"""
CARD_LOG_COLUMNS = """
    log_no {AUTO_KEY}, utc TEXT NOT NULL, card_id TEXT NOT NULL, action TEXT NOT NULL,
    person TEXT, table_id TEXT, round BIGINT, amount BIGINT, detail TEXT NOT NULL"""
# The tables' journal segments as head office checked them (headoffice/segments.py).
SEGMENTS_COLUMNS = """
    table_id TEXT NOT NULL, number BIGINT NOT NULL, first_seq BIGINT NOT NULL,
    last_seq BIGINT NOT NULL, prev TEXT NOT NULL, head TEXT NOT NULL, digest TEXT NOT NULL,
    size BIGINT NOT NULL, first_round BIGINT NOT NULL, last_round BIGINT NOT NULL,
    closed_utc TEXT NOT NULL, received_utc TEXT NOT NULL, checked TEXT NOT NULL,
    status TEXT NOT NULL, reason TEXT, PRIMARY KEY (table_id, number)"""

SCHEMA = """
CREATE TABLE IF NOT EXISTS pools (
    id TEXT PRIMARY KEY, params TEXT NOT NULL, amount BIGINT NOT NULL, carry TEXT NOT NULL,
    reserve BIGINT NOT NULL, reserve_carry TEXT NOT NULL, seed_in TEXT NOT NULL,
    contributions TEXT NOT NULL, paid BIGINT NOT NULL, house_paid BIGINT NOT NULL,
    overflow BIGINT NOT NULL, wagers_in BIGINT NOT NULL, hits BIGINT NOT NULL,
    wins BIGINT NOT NULL, version BIGINT NOT NULL, stopped TEXT, updated_utc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tables (
    id TEXT PRIMARY KEY, pool_id TEXT, last_seq BIGINT NOT NULL, state TEXT NOT NULL,
    last_seen_utc TEXT, last_seen_epoch DOUBLE PRECISION, birth TEXT{TABLES_ADDED});
CREATE TABLE IF NOT EXISTS messages (
    table_id TEXT NOT NULL, seq BIGINT NOT NULL, type TEXT NOT NULL, pool_id TEXT,
    round BIGINT, status TEXT NOT NULL, reason TEXT, amount BIGINT NOT NULL, body TEXT NOT NULL,
    utc TEXT NOT NULL, PRIMARY KEY (table_id, seq));
CREATE TABLE IF NOT EXISTS parked (
    table_id TEXT NOT NULL, seq BIGINT NOT NULL, body TEXT NOT NULL, utc TEXT NOT NULL,
    PRIMARY KEY (table_id, seq));
CREATE TABLE IF NOT EXISTS increments (
    table_id TEXT NOT NULL, round BIGINT NOT NULL, seq BIGINT NOT NULL, pool_id TEXT NOT NULL,
    amount BIGINT NOT NULL, meter_part TEXT NOT NULL, reserve_part TEXT NOT NULL,
    cancelled_seq BIGINT, PRIMARY KEY (table_id, round));
CREATE TABLE IF NOT EXISTS hits (
    pool_id TEXT NOT NULL, hit_no BIGINT NOT NULL, table_id TEXT NOT NULL, round BIGINT NOT NULL,
    seq BIGINT NOT NULL, utc TEXT NOT NULL, pool_before BIGINT NOT NULL,
    pool_after BIGINT NOT NULL, paid BIGINT NOT NULL, seed_from_house BIGINT NOT NULL,
    award TEXT NOT NULL, PRIMARY KEY (pool_id, hit_no));
CREATE UNIQUE INDEX IF NOT EXISTS hits_by_round ON hits (table_id, round);
CREATE TABLE IF NOT EXISTS rounds (
    table_id TEXT NOT NULL, round BIGINT NOT NULL, seq BIGINT NOT NULL, status TEXT NOT NULL,
    summary TEXT NOT NULL, PRIMARY KEY (table_id, seq));
CREATE TABLE IF NOT EXISTS param_log ({PARAM_LOG_COLUMNS});
CREATE TABLE IF NOT EXISTS alarms ({ALARMS_COLUMNS});
CREATE TABLE IF NOT EXISTS audit ({AUDIT_COLUMNS});
CREATE INDEX IF NOT EXISTS audit_by_utc ON audit (utc);
CREATE TABLE IF NOT EXISTS held_hits ({HELD_HITS_COLUMNS});
CREATE UNIQUE INDEX IF NOT EXISTS held_hits_by_round ON held_hits (table_id, round);
CREATE TABLE IF NOT EXISTS pool_shares ({POOL_SHARES_COLUMNS});
CREATE TABLE IF NOT EXISTS decisions ({DECISIONS_COLUMNS});
CREATE INDEX IF NOT EXISTS decisions_by_subject ON decisions (kind, subject, status);
CREATE TABLE IF NOT EXISTS segments ({SEGMENTS_COLUMNS});
CREATE TABLE IF NOT EXISTS cards ({CARDS_COLUMNS});
CREATE TABLE IF NOT EXISTS card_reservations ({CARD_RESERVATIONS_COLUMNS});
CREATE INDEX IF NOT EXISTS card_reservations_by_card ON card_reservations (card_id, settled);
CREATE TABLE IF NOT EXISTS card_rounds ({CARD_ROUNDS_COLUMNS});
CREATE INDEX IF NOT EXISTS card_rounds_by_card ON card_rounds (card_id, period_start);
CREATE TABLE IF NOT EXISTS card_log ({CARD_LOG_COLUMNS});
CREATE INDEX IF NOT EXISTS card_log_by_card ON card_log (card_id, log_no);
CREATE TABLE IF NOT EXISTS ho_partitions (
    part INTEGER PRIMARY KEY, owner TEXT, expires_epoch DOUBLE PRECISION NOT NULL);
CREATE TABLE IF NOT EXISTS ho_workers (
    worker TEXT PRIMARY KEY, seen_epoch DOUBLE PRECISION NOT NULL);
""".replace("{PARAM_LOG_COLUMNS}", PARAM_LOG_COLUMNS).replace(
    "{ALARMS_COLUMNS}", ALARMS_COLUMNS).replace("{AUDIT_COLUMNS}", AUDIT_COLUMNS).replace(
    "{HELD_HITS_COLUMNS}", HELD_HITS_COLUMNS).replace(
    "{TABLES_ADDED}", "".join(f", {name} {kind}" for name, kind in TABLES_ADDED)).replace(
    "{POOL_SHARES_COLUMNS}", POOL_SHARES_COLUMNS).replace(
    "{DECISIONS_COLUMNS}", DECISIONS_COLUMNS).replace(
    "{SEGMENTS_COLUMNS}", SEGMENTS_COLUMNS).replace(
    "{CARDS_COLUMNS}", CARDS_COLUMNS).replace(
    "{CARD_RESERVATIONS_COLUMNS}", CARD_RESERVATIONS_COLUMNS).replace(
    "{CARD_ROUNDS_COLUMNS}", CARD_ROUNDS_COLUMNS).replace("{CARD_LOG_COLUMNS}", CARD_LOG_COLUMNS)

# Serialises schema creation and migration between workers opening one PostgreSQL database at
# once (concurrent CREATE TABLE IF NOT EXISTS can fail there); any constant, this one is ours.
_SCHEMA_LOCK = 0x7461626C6563746C  # "tablectl"


class NoDriver(TablectlError):
    """The database a URL names needs a driver this host has not installed (psycopg 3)."""


class Database:
    """A connection plus its dialect. Use from one thread at a time."""

    def __init__(self, conn: Any, dialect: str, url: str, lock_path: Path | None = None) -> None:
        self.conn = conn
        self.dialect = dialect
        self.url = url
        pg = dialect == "postgresql"
        self.for_update = " FOR UPDATE" if pg else ""
        # Taken by contributions (see POOL_SHARES_COLUMNS): shared with each other, excluded
        # by FOR UPDATE. SQLite has one writer at a time: no row locks at all.
        self.for_key_share = " FOR KEY SHARE" if pg else ""
        # Rows another worker holds are left out (their messages wait for the next
        # transaction) rather than waited for.
        self.skip_locked = " FOR UPDATE SKIP LOCKED" if pg else ""
        # A BIGINT key the database gives out itself, increasing. (SQLite: the rowid, which
        # reuses a number only after the highest row is deleted; alarms are never deleted.)
        self.auto_key = ("BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
                         if dialect == "postgresql" else "INTEGER PRIMARY KEY")
        # SQLite's own wait for a busy database sleeps 1, 2, 5 ... 100 ms between tries, so
        # a worker whose turn came after 2 ms slept 25: two workers sharing one ledger spent
        # their time asleep (bench/fleet). Writers queue on a file lock instead, woken the
        # moment it is free; BEGIN IMMEDIATE still guards against anything that does not.
        self._lock_file = None if lock_path is None else open(lock_path, "a+b")  # noqa: SIM115

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.dialect == "postgresql" else sql

    def ddl(self, sql: str) -> str:
        """Schema text in this dialect: `{AUTO_KEY}` becomes its self-numbered key column."""
        return sql.replace("{AUTO_KEY}", self.auto_key)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cur = self.conn.execute(self._sql(sql), tuple(params))
        if cur.description is None:
            return []
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def write(self, sql: str, params: Sequence[Any] = ()) -> int:
        """An INSERT/UPDATE/DELETE: how many rows it changed (0 for an `ON CONFLICT DO NOTHING`
        that found the row already there)."""
        cur = self.conn.execute(self._sql(sql), tuple(params))
        return max(cur.rowcount, 0)

    def columns(self, table: str) -> list[str]:
        cur = self.conn.execute(f"SELECT * FROM {table} WHERE 1 = 0")
        return [d[0] for d in cur.description]

    def one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        rows = self.execute(sql, params)
        return rows[0] if rows else None

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        if self.dialect == "postgresql":
            with self.conn.cursor() as cur:
                cur.executemany(self._sql(sql), rows)
        else:
            self.conn.executemany(sql, rows)

    def insert_many(self, table: str, columns: Sequence[str],
                    rows: Sequence[Sequence[Any]]) -> None:
        """Plain INSERTs of many rows: COPY on PostgreSQL (one stream, no statement per row),
        executemany on SQLite."""
        if not rows:
            return
        if self.dialect == "postgresql":
            with self.conn.cursor() as cur, cur.copy(
                    f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            self.conn.executemany(
                f"INSERT INTO {table} ({', '.join(columns)})"
                f" VALUES ({', '.join('?' * len(columns))})", rows)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction: committed (durably: synchronous=FULL on SQLite) on success,
        rolled back on any exception."""
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX)
        try:
            self.conn.execute("BEGIN IMMEDIATE" if self.dialect == "sqlite" else "BEGIN")
            try:
                yield
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
        finally:
            if self._lock_file is not None:
                fcntl.flock(self._lock_file, fcntl.LOCK_UN)

    def is_retryable(self, exc: BaseException) -> bool:
        """A transaction the server aborted on its own (deadlock, serialisation failure):
        rolled back in full, safe to run again."""
        return self.dialect == "postgresql" and getattr(exc, "sqlstate", None) in (
            "40P01", "40001")

    def close(self) -> None:
        self.conn.close()
        if self._lock_file is not None:
            self._lock_file.close()


def open_database(url: str | Path) -> Database:
    """`sqlite:///abs/path.db`, a plain path, or `postgresql://...` (needs psycopg 3)."""
    text = str(url)
    if text.startswith(("postgresql://", "postgres://")):
        try:
            import psycopg  # type: ignore[import-not-found]
        except ImportError:
            raise NoDriver(
                "a PostgreSQL ledger needs psycopg 3: pip install 'psycopg[binary]'"
            ) from None
        conn = psycopg.connect(text, autocommit=True)
        db = Database(conn, "postgresql", text)
    else:
        path = Path(text.removeprefix("sqlite://"))
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")  # a committed ack is on the disk
        db = Database(conn, "sqlite", str(path), lock_path=path.with_name(path.name + ".lock"))
    with db.transaction():
        if db.dialect == "postgresql":
            db.execute("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,))
        for statement in SCHEMA.split(";"):
            if statement.strip():
                db.execute(db.ddl(statement))
        _migrate(db)
    return db


def _migrate(db: Database) -> None:
    """Bring a ledger made by an older version up to SCHEMA (inside open's transaction)."""
    have = db.columns("tables")
    for name, kind in TABLES_ADDED:
        if name not in have:  # NULL in old rows: not enrolled until a worker's config says so
            db.execute(f"ALTER TABLE tables ADD COLUMN {name} {kind}")
    have = db.columns("held_hits")
    for name, kind in HELD_HITS_ADDED:
        if name not in have:  # NULL in old rows: nobody is sending their award
            db.execute(f"ALTER TABLE held_hits ADD COLUMN {name} {kind}")
    if "entry_no" not in db.columns("param_log"):
        # param_log had no sequence: its order was `utc`, ties undefined. The table is rebuilt
        # with the current columns and each pool's entries numbered by utc, then by the order
        # they were stored in (SQLite's rowid, PostgreSQL's ctid: an append-only table).
        stored = "rowid" if db.dialect == "sqlite" else "ctid"
        names = [c for c in db.columns("param_log") if c != "entry_no"]
        db.execute("ALTER TABLE param_log RENAME TO param_log_unnumbered")
        db.execute(f"CREATE TABLE param_log ({PARAM_LOG_COLUMNS})")
        db.execute(
            f"INSERT INTO param_log (entry_no, {', '.join(names)})"
            f" SELECT ROW_NUMBER() OVER (PARTITION BY pool_id ORDER BY utc, {stored}),"
            f" {', '.join(names)} FROM param_log_unnumbered"
        )
        db.execute("DROP TABLE param_log_unnumbered")
    if "alarm_no" not in db.columns("alarms"):
        # alarms had no number: report() ordered them by rowid on SQLite, by utc (ties
        # undefined) on PostgreSQL. Rebuilt as param_log was, numbered 1, 2, 3 ... in that
        # order (PostgreSQL's ties by ctid: the order stored); the identity is then set to go
        # on after the last (SQLite's rowid does by itself). Inserts that name no alarm_no,
        # an older worker's too, get the next number.
        stored = "rowid" if db.dialect == "sqlite" else "utc, ctid"
        names = [c for c in db.columns("alarms") if c != "alarm_no"]
        db.execute("ALTER TABLE alarms RENAME TO alarms_unnumbered")
        db.execute(db.ddl(f"CREATE TABLE alarms ({ALARMS_COLUMNS})"))
        db.execute(
            f"INSERT INTO alarms (alarm_no, {', '.join(names)})"
            f" SELECT ROW_NUMBER() OVER (ORDER BY {stored}), {', '.join(names)}"
            " FROM alarms_unnumbered"
        )
        db.execute("DROP TABLE alarms_unnumbered")
        if db.dialect == "postgresql":
            db.execute(
                "SELECT setval(pg_get_serial_sequence('alarms', 'alarm_no'),"
                " COALESCE(MAX(alarm_no), 0) + 1, false) FROM alarms"
            )
    have = db.columns("alarms")
    missing = [(name, kind) for name, kind in ALARMS_ADDED if name not in have]
    for name, kind in missing:
        db.execute(f"ALTER TABLE alarms ADD COLUMN {name} {kind}")
    if missing:  # the log of an older version: history, ended by this upgrade
        db.execute("UPDATE alarms SET kind = 'legacy', severity = 'warning', repeats = 1,"
                   " last_utc = utc, cleared_utc = ? WHERE kind IS NULL", (utc_now(),))
    db.execute(ALARMS_ACTIVE)
