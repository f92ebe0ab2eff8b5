"""The `new_url` fixture's PostgreSQL schemas (tests/support/ledger_urls.py) are reused from
test to test: a reused one must be as a fresh ledger, or not reused at all."""

from __future__ import annotations

import pytest

from headoffice.ledger import Ledger
from tests.conftest import PG_URL
from tests.support.ledger_urls import PgLedgers


@pytest.fixture
def ledgers() -> PgLedgers:
    psycopg = pytest.importorskip("psycopg", reason="psycopg 3 not installed (dev extra)")
    try:
        admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        pytest.skip(f"no PostgreSQL answers at {PG_URL}: {exc}")
    return PgLedgers(admin, PG_URL)


def test_a_reused_schema_has_no_rows_and_numbers_from_one(ledgers: PgLedgers) -> None:
    try:
        name = ledgers.take()
        for _ in range(2):
            led = Ledger.open(ledgers.url(name))
            assert led.db.one("SELECT count(*) AS n FROM alarms") == {"n": 0}
            assert led.alarm("x", None, "T1", kind="table_offline") == 1
            led.db.execute("INSERT INTO ho_workers VALUES ('w1', 0)")
            led.close()
            ledgers.give_back([name])
            assert ledgers.free == [name]
            name = ledgers.take()
        led = Ledger.open(ledgers.url(name))
        assert led.db.one("SELECT count(*) AS n FROM ho_workers") == {"n": 0}
        led.close()
        ledgers.give_back([name])
    finally:
        ledgers.close()


def test_a_schema_a_test_changed_is_dropped_not_reused(ledgers: PgLedgers) -> None:
    try:
        name = ledgers.take()
        led = Ledger.open(ledgers.url(name))
        led.db.execute("ALTER TABLE held_hits DROP COLUMN seq")
        led.close()
        ledgers.give_back([name])
        assert ledgers.free == []
        gone = ledgers.admin.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = %s", (name,)).fetchone()
        assert gone == (0,)
        bare = ledgers.bare()
        assert ledgers.admin.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = %s", (bare,)).fetchone() == (0,)
        ledgers.give_back([], drop=[bare])
    finally:
        ledgers.close()
