"""Fixtures shared by several test modules."""

from __future__ import annotations

import compileall
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests import mqtt_broker
from tests.support.ledger_urls import NewUrl, PgLedgers

# PYTHONDONTWRITEBYTECODE (set on CI-like shells) also stops pytest caching the test modules it
# rewrites for its assertions, so every xdist worker rewrote all ~300 of them at collection: 14 s
# of CPU per worker here against 6 s with the cache (`pytest tests --collect-only -q`). The cache
# goes to __pycache__ beside each test module (ignored by git), as Python's own would.
sys.dont_write_bytecode = False
REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("controller", "devices", "headoffice", "demo", "shared")


def pytest_configure(config: pytest.Config) -> None:
    """Compile the packages once, in the controlling process: the suite starts hundreds of
    daemons and CLIs as subprocesses, which load .pyc rather than each compiling ~300 modules
    when PYTHONDONTWRITEBYTECODE is set (an up-to-date tree costs a stat per module)."""
    if hasattr(config, "workerinput"):  # an xdist worker: its controller has done it
        return
    for package in PACKAGES:
        compileall.compile_dir(REPO / package, quiet=1, workers=0)


# Hypothesis' deadline (200 ms per example) and its too_slow health check time examples by the
# wall clock: on a shared 2-core machine at load 7-10 an example that does real work (a decoder
# fed a stream, a journal written) waits for a core as long as it runs, so they fail by
# construction. Examples are bounded by max_examples instead; this profile is every test's default
# (an explicit @settings inherits what it does not set).
settings.register_profile(
    "shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("shared-machine")

# Trust auth as root on the local server (CI and dev machines); overridable for other setups.
PG_URL = os.environ.get("TABLECTL_TEST_PG", "postgresql://root@127.0.0.1:5432/test")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[mqtt_broker.Broker]:
    """A Mosquitto of our own on a free port, with TLS, the ACL and persistence."""
    pki = mqtt_broker.Pki(tmp_path / "pki")
    b = mqtt_broker.Broker(tmp_path / "broker", pki)
    b.start()
    yield b
    b.stop()


@pytest.fixture(scope="session")
def _pg_ledgers() -> Iterator[PgLedgers | str]:
    """This test process's PostgreSQL ledger schemas (tests/support/ledger_urls.py), or why
    there are none: psycopg missing or no server answering at PG_URL."""
    try:
        import psycopg
    except ImportError:
        yield "psycopg 3 not installed (dev extra)"
        return
    try:
        admin = psycopg.connect(PG_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        yield f"no PostgreSQL answers at {PG_URL}: {exc}"
        return
    ledgers = PgLedgers(admin, PG_URL)
    yield ledgers
    ledgers.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def new_url(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[NewUrl]:
    """Makes URLs of new, empty head-office ledgers, one per call (hypothesis examples share
    the fixture): a SQLite path, or a PostgreSQL schema of its own, emptied for a later test
    afterwards (tests/support/ledger_urls.py; `new_url.bare()`: a schema without the ledger's
    tables, dropped afterwards). A test that takes it runs on both backends; the PostgreSQL
    half is skipped only if no server answers at PG_URL ($TABLECTL_TEST_PG)."""
    if request.param == "sqlite":
        yield NewUrl(lambda bare: str(tmp_path_factory.mktemp("ledger") / "ho.db"))
        return
    ledgers = request.getfixturevalue("_pg_ledgers")
    if isinstance(ledgers, str):
        pytest.skip(ledgers)
    reused: list[str] = []
    bares: list[str] = []

    def new(bare: bool) -> str:
        name = ledgers.bare() if bare else ledgers.take()
        (bares if bare else reused).append(name)
        # The schema is the connection's search_path, so the ledger's unqualified SQL lands there.
        return ledgers.url(name)

    yield NewUrl(new)
    ledgers.give_back(reused, drop=bares)


@pytest.fixture
def ledger_url(new_url: NewUrl) -> str:
    """One fresh ledger URL, on SQLite and on PostgreSQL (the test runs twice)."""
    return new_url()
