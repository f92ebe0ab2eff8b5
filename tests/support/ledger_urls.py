"""Head-office ledger URLs for the tests: the `new_url` fixture (tests/conftest.py).

On PostgreSQL a ledger is a schema of its own (the connection's search_path). Making one costs
about a second of the server's time (CREATE SCHEMA, the ledger's ~35 CREATE TABLE/INDEX, DROP
SCHEMA ... CASCADE afterwards), and the suite asked for hundreds (a hypothesis example each).
So each test process keeps the schemas it made: after a test, a schema is emptied (every row
deleted, identity counters reset to 1, the notify triggers head office installs dropped) and
handed to a later test, but only if its catalog is still exactly what `open_database` makes (a
test that dropped a column or built an old ledger's table gets its schema dropped instead). A
reused schema is indistinguishable from a fresh one to the ledger: `open_database` finds every
table there and empty, as at a fresh ledger's second open. `bare()` gives a schema with nothing
in it, for the tests that build an older version's tables before the ledger first opens.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

# What the catalog holds in one schema, with the schema's own name taken out: every relation
# (table, index, sequence, view) and its kind, every column, every trigger and function.
_CATALOG = """
SELECT
  (SELECT string_agg(c.relname || ':' || c.relkind::text, ',' ORDER BY c.relname)
     FROM pg_class c WHERE c.relnamespace = n.oid),
  (SELECT string_agg(concat_ws(' ', table_name, ordinal_position, column_name, data_type,
                               is_nullable, column_default, is_identity), ','
                     ORDER BY table_name, ordinal_position)
     FROM information_schema.columns WHERE table_schema = n.nspname),
  (SELECT string_agg(indexdef, ',' ORDER BY indexname) FROM pg_indexes
     WHERE schemaname = n.nspname),
  (SELECT string_agg(t.tgname, ',' ORDER BY t.tgname) FROM pg_trigger t
     JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = n.oid),
  (SELECT string_agg(p.proname, ',' ORDER BY p.proname) FROM pg_proc p
     WHERE p.pronamespace = n.oid)
FROM pg_namespace n WHERE n.nspname = %s
"""

# Every table's rows deleted and every identity's counter back at 1, in one round trip (the
# tables are few and small: DELETE is cheaper than TRUNCATE's new files).
_EMPTY = """DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = '@SCHEMA@' LOOP
    EXECUTE format('DELETE FROM %I.%I', '@SCHEMA@', r.tablename);
  END LOOP;
  FOR r IN SELECT sequencename FROM pg_sequences WHERE schemaname = '@SCHEMA@' LOOP
    PERFORM setval(format('%I.%I', '@SCHEMA@', r.sequencename)::regclass, 1, false);
  END LOOP;
END $$"""

# Head office installs these in a ledger's schema when a worker first watches it
# (headoffice/notify.py); dropping the functions drops the triggers that call them.
_NOTIFY_FUNCTIONS = ("tablectl_ledger_notify", "tablectl_held_hits_notify")


class PgLedgers:
    """One test process's PostgreSQL ledger schemas on the server at `base_url`."""

    def __init__(self, admin: Any, base_url: str) -> None:
        self.admin = admin  # a psycopg connection, autocommit
        self.base_url = base_url
        self.free: list[str] = []  # made and emptied, ready for a test
        self._reference: str | None = None  # the catalog of a freshly opened ledger
        # A test that left a connection holding a lock on its ledger: emptying waits this long,
        # then the schema is dropped instead (which waits as long again, then fails the test).
        admin.execute("SET lock_timeout = '20s'")

    def url(self, name: str) -> str:
        sep = "&" if "?" in self.base_url else "?"
        return f"{self.base_url}{sep}options=-csearch_path%3D{name}"

    def _catalog(self, name: str) -> str:
        row = self.admin.execute(_CATALOG, (name,)).fetchone()
        return repr(row).replace(name, "<schema>")

    def _create(self) -> str:
        name = f"ledger_test_{secrets.token_hex(6)}"
        self.admin.execute(f'CREATE SCHEMA "{name}"')
        return name

    def take(self) -> str:
        """The name of an empty current-version ledger schema, reused if one is free."""
        if self.free:
            return self.free.pop()
        from headoffice.db import open_database

        name = self._create()
        open_database(self.url(name)).close()
        if self._reference is None:
            self._reference = self._catalog(name)
        return name

    def bare(self) -> str:
        """A new schema with nothing in it (never reused: `give_back(..., reuse=False)`)."""
        return self._create()

    def give_back(self, name: str, reuse: bool = True) -> None:
        """After the test: empty `name` for the next one, or drop it."""
        if reuse and self._empty(name):
            self.free.append(name)
        else:
            self.admin.execute(f'DROP SCHEMA "{name}" CASCADE')

    def _empty(self, name: str) -> bool:
        """Every row deleted, identities restarted, head office's triggers dropped; False (and
        nothing promised) when the schema's catalog is then not a fresh ledger's."""
        try:
            with self.admin.transaction():
                catalog = self._catalog(name)
                if catalog != self._reference and any(f in catalog for f in _NOTIFY_FUNCTIONS):
                    for fn in _NOTIFY_FUNCTIONS:
                        self.admin.execute(f'DROP FUNCTION IF EXISTS "{name}".{fn}() CASCADE')
                    catalog = self._catalog(name)
                if catalog != self._reference:
                    return False
                self.admin.execute(_EMPTY.replace("@SCHEMA@", name))
        except Exception:  # a lock not granted, a broken connection: not reused
            return False
        return True

    def close(self) -> None:
        for name in self.free:
            self.admin.execute(f'DROP SCHEMA "{name}" CASCADE')
        self.free.clear()
        self.admin.close()


class NewUrl:
    """What the `new_url` fixture gives a test: `new_url()` is the URL of a new, empty ledger
    (a SQLite path, or a PostgreSQL schema holding the current ledger's tables, no rows);
    `new_url.bare()` one whose database or schema has no tables yet."""

    def __init__(self, make: Callable[[bool], str]) -> None:
        self._make = make

    def __call__(self) -> str:
        return self._make(False)

    def bare(self) -> str:
        return self._make(True)
