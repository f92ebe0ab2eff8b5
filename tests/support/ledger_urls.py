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
from collections.abc import Callable, Sequence
from typing import Any

# What the catalog holds in one schema, with the schema's own name taken out: every relation
# (table, index, sequence, view) and its kind, every column, every trigger and function.
_CATALOG = """
SELECT n.nspname,
  (SELECT string_agg(c.relname || ':' || c.relkind::text, ',' ORDER BY c.relname)
     FROM pg_class c WHERE c.relnamespace = n.oid),
  (SELECT string_agg(concat_ws(' ', c.relname, a.attnum, a.attname,
                               format_type(a.atttypid, a.atttypmod), a.attnotnull,
                               a.attidentity, pg_get_expr(d.adbin, d.adrelid)), ','
                     ORDER BY c.relname, a.attnum)
     FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
     LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
     WHERE c.relnamespace = n.oid AND a.attnum > 0 AND NOT a.attisdropped),
  (SELECT string_agg(pg_get_indexdef(i.indexrelid), ',' ORDER BY i.indexrelid::regclass::text)
     FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relnamespace = n.oid),
  (SELECT string_agg(t.tgname, ',' ORDER BY t.tgname) FROM pg_trigger t
     JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = n.oid),
  (SELECT string_agg(p.proname, ',' ORDER BY p.proname) FROM pg_proc p
     WHERE p.pronamespace = n.oid)
FROM pg_namespace n WHERE n.nspname = ANY(%s)
"""

# Every table's rows deleted and every identity's counter back at 1, in one round trip (the
# tables are few and small: DELETE is cheaper than TRUNCATE's new files).
_EMPTY = """DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT schemaname, tablename FROM pg_tables WHERE schemaname = ANY(@SCHEMAS@) LOOP
    EXECUTE format('DELETE FROM %I.%I', r.schemaname, r.tablename);
  END LOOP;
  FOR r IN SELECT schemaname, sequencename FROM pg_sequences WHERE schemaname = ANY(@SCHEMAS@) LOOP
    PERFORM setval(format('%I.%I', r.schemaname, r.sequencename)::regclass, 1, false);
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

    def _catalogs(self, names: list[str]) -> dict[str, str]:
        rows = self.admin.execute(_CATALOG, (names,)).fetchall()
        return {row[0]: repr(row[1:]).replace(row[0], "<schema>") for row in rows}

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
            self._reference = self._catalogs([name])[name]
        return name

    def bare(self) -> str:
        """A new schema with nothing in it (never reused: `give_back(..., drop=[name])`)."""
        return self._create()

    def give_back(self, names: list[str], drop: Sequence[str] = ()) -> None:
        """After the test: empty each of `names` for the next one, or drop it; drop `drop`."""
        emptied = self._empty(names) if names else []
        self.free.extend(emptied)
        for name in [*names, *drop]:
            if name not in emptied:
                self.admin.execute(f'DROP SCHEMA "{name}" CASCADE')

    def _empty(self, names: list[str]) -> list[str]:
        """Those of `names` emptied: every row deleted, identities restarted, head office's
        triggers dropped; a schema whose catalog is then not a fresh ledger's is left out (and
        all of them if anything failed)."""
        try:
            with self.admin.transaction():
                catalogs = self._catalogs(names)
                notified = [n for n, c in catalogs.items()
                            if c != self._reference and any(f in c for f in _NOTIFY_FUNCTIONS)]
                for name in notified:
                    for fn in _NOTIFY_FUNCTIONS:
                        self.admin.execute(f'DROP FUNCTION IF EXISTS "{name}".{fn}() CASCADE')
                if notified:
                    catalogs.update(self._catalogs(notified))
                same = [n for n, c in catalogs.items() if c == self._reference]
                if same:  # a DO block takes no parameters: the names are ours, hex
                    listed = ", ".join(f"'{n}'" for n in same)
                    self.admin.execute(_EMPTY.replace("@SCHEMAS@", f"ARRAY[{listed}]"))
        except Exception:  # a lock not granted, a broken connection: not reused
            return []
        return same

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
