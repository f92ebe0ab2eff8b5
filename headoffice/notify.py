"""Telling a head-office worker that another process changed the ledger (issue 13).

An operator approves or refuses a held hit from another process (`tablectl-headoffice hit
approve|refuse`, the web console). The approval lowers the pool (a hit, UTH 2.4.3, 15.1.3) and
owes the table its award; without a word from the ledger the worker would see both only at its
next heartbeat. So with a pool's parameters changed or a stopped pool resumed
(`tablectl-headoffice pool set|resume`: each writes its `param_log` entry), which changes the
value every meter shows. `LedgerWatch.changed()` returns as soon as such a decision has
committed, and at once on its first call, when the watch is armed: a decision committed
before then (the worker was starting) woke nothing, so the caller reads the ledger then:

* PostgreSQL: LISTEN on `CHANNEL`; statement triggers on `held_hits` (updated) and `param_log`
  (inserted), installed here under an advisory lock so workers starting together take turns,
  NOTIFY it in the deciding transaction, so the notice is delivered when, and only if, the
  decision commits. Not on `pools`: every batch of every worker updates it.
* SQLite: no notifications between processes. `PRAGMA data_version` on the worker's own
  connection changes when another connection commits (its own commits do not change it): read
  every `POLL_S`, one cheap pragma, no row read. Any other writer's commit (another worker's
  batch) also wakes it; the worker then reads the undelivered awards, and publishes only when
  an approval left one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from headoffice.db import Database

# The channel keeps its first name (it carried held-hit decisions first): a worker of the older
# version LISTENs on it, and both versions' triggers NOTIFY it, so a fleet upgraded one worker
# at a time never misses a notice.
CHANNEL = "tablectl_held_hits"
POLL_S = 0.1  # SQLite: how often data_version is read
_TRIGGER_LOCK = 0x7AB1EC7D  # pg advisory lock key: the trigger is (re)made by one worker at a time
# The trigger function was first named tablectl_held_hits_notify, though param_log's trigger
# runs it too. Installing re-points both triggers at tablectl_ledger_notify and then drops the
# old function (no CASCADE: nothing else of ours depends on it, and nothing else is dropped).
# An older worker starting later makes the old one again and points the triggers back at it;
# both NOTIFY the same CHANNEL, so either way every decision is heard.
NOTIFY_FUNCTION = "tablectl_ledger_notify"
OLD_NOTIFY_FUNCTION = "tablectl_held_hits_notify"
_TRIGGER = (
    f"""CREATE OR REPLACE FUNCTION {NOTIFY_FUNCTION}() RETURNS trigger AS $$
    BEGIN PERFORM pg_notify('{CHANNEL}', ''); RETURN NULL; END $$ LANGUAGE plpgsql""",
    "DROP TRIGGER IF EXISTS tablectl_held_hits_decided ON held_hits",
    f"""CREATE TRIGGER tablectl_held_hits_decided AFTER UPDATE ON held_hits
    FOR EACH STATEMENT EXECUTE FUNCTION {NOTIFY_FUNCTION}()""",
    "DROP TRIGGER IF EXISTS tablectl_param_log_entered ON param_log",
    f"""CREATE TRIGGER tablectl_param_log_entered AFTER INSERT ON param_log
    FOR EACH STATEMENT EXECUTE FUNCTION {NOTIFY_FUNCTION}()""",
    f"DROP FUNCTION IF EXISTS {OLD_NOTIFY_FUNCTION}()",
)

Run = Callable[..., Awaitable[Any]]


class LedgerWatch:
    """`await changed()` until another process's decision is committed. `run` runs a blocking
    call on the worker's ledger connection (the worker's own serialising `_db`)."""

    def __init__(self, db: Database, run: Run) -> None:
        self.db = db
        self.run = run
        self._listener: Any = None  # psycopg.AsyncConnection on PostgreSQL
        self._notices: Any = None
        self._version: int | None = None

    async def changed(self) -> None:
        """Until a decision commits; the first call arms the watch and returns at once."""
        if self.db.dialect == "postgresql":
            await self._pg_changed()
        else:
            await self._sqlite_changed()

    async def close(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close()
            self._listener = self._notices = None

    # -- SQLite ---------------------------------------------------------------------------------
    def _data_version(self) -> int:
        row = self.db.one("PRAGMA data_version")
        assert row is not None
        return int(next(iter(row.values())))

    async def _sqlite_changed(self) -> None:
        if self._version is None:
            self._version = await self.run(self._data_version)  # the baseline: armed
            return
        while True:
            await asyncio.sleep(POLL_S)
            version = await self.run(self._data_version)
            if version != self._version:
                self._version = version
                return

    # -- PostgreSQL -----------------------------------------------------------------------------
    def _install_trigger(self) -> None:
        with self.db.transaction():
            self.db.execute("SELECT pg_advisory_xact_lock(?)", (_TRIGGER_LOCK,))
            for statement in _TRIGGER:
                self.db.execute(statement)

    async def _pg_changed(self) -> None:
        if self._listener is None:
            import psycopg  # type: ignore[import-not-found]

            await self.run(self._install_trigger)
            self._listener = await psycopg.AsyncConnection.connect(self.db.url, autocommit=True)
            await self._listener.execute(f"LISTEN {CHANNEL}")
            self._notices = self._listener.notifies()
            return  # armed: what committed before the LISTEN is read by the caller now
        await anext(self._notices)
