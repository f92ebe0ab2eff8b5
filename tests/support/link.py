"""In-process linked UTH tables and head-office workers against a real Mosquitto
(tests/mqtt_broker.py), plus a TCP proxy that cuts one table's network.

Everything runs on the test's asyncio loop: each table is a `TableService` with simulated
devices and a `LinkExtension`; head office is one or more `Worker`s on a shared ledger, SQLite
or PostgreSQL (a path or a URL: the `ledger_url` fixture in tests/conftest.py gives both).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from controller.config import TableConfig, validate_text
from controller.config.machine import build_machine
from controller.daemon.service import TableService
from controller.journal import Journal
from controller.link.extension import LinkExtension, LinkOptions
from controller.random_source import RandomSource
from controller.rounds.base import Event
from controller.sim.uth import UthSim
from devices.sim import build_simulators
from headoffice.config import HeadOfficeConfig
from headoffice.ledger import Ledger
from headoffice.pools import Params
from headoffice.worker import Worker
from shared.link.transport import BrokerSettings
from tests.mqtt_broker import Broker

POOL = "p1"
# The tables the tests' head office knows (headoffice.toml [[tables]]); any other is refused.
ENROLLED = ("T1", "T2", "T3", "S0", "S1", "S2", "CUT", "OK", "A", "B")
SEED = 500_000  # $5,000: small enough that royal minimum top-ups show up


def table_toml(table_id: str, root: Path, broker: Broker, *, port: int | None = None,
               pool_timeout_s: float = 2.0, game: str = "uth",
               cards: str = "required = false") -> str:
    """A linked table's config file: UTH on the shared pool POOL, or Pai Gow (NZ rules) whose
    link carries round results only. `cards`: its [cards] section; these tables play uncarded
    unless a test says otherwise (carded play: tests/link/test_link_patron.py)."""
    tls = broker.pki.client(table_id)
    game_section = """[paigow]
rules = "nz"
[paigow.limits]
minimum = 2000
maximum = 1000000
chip_unit = 100
""" if game == "paigow" else f"""[uth]
[uth.limits]
ante_min = 500
ante_max = 500000
trips_min = 500
trips_max = 100000
chip_unit = 100
[uth.jackpot]
enabled = true
pool_id = "{POOL}"
wager = 100
increment_bp = 2500
hidden_bp = 500
seed = {SEED}
"""
    return f"""table_id = "{table_id}"
game = "{game}"
[service]
state_dir = "{root / 'state'}"
runtime_dir = "{root / 'run'}"
socket_group = "root"
watchdog = false
{game_section}[devices]
simulate = true
[link]
enabled = true
host = "127.0.0.1"
port = {port or broker.port}
pool_timeout_s = {pool_timeout_s}
client_id = "table-{table_id}"
[link.tls]
ca = "{tls.ca}"
cert = "{tls.cert}"
key = "{tls.key}"
[cards]
{cards}
"""


def table_config(table_id: str, root: Path, broker: Broker, *, port: int | None = None,
                 pool_timeout_s: float = 2.0) -> TableConfig:
    text = table_toml(table_id, root, broker, port=port, pool_timeout_s=pool_timeout_s)
    return validate_text(text, f"{table_id}.toml")


FAST = LinkOptions(resend_s=1.0, status_every_s=5.0, tick_every_s=0.2, backoff_base_s=0.05,
                   backoff_cap_s=0.5, pool_show_every_s=0.2, confirm_s=3.0)


@dataclass
class SimTable:
    id: str
    root: Path
    cfg: TableConfig
    service: TableService
    link: LinkExtension
    task: asyncio.Task[int] | None = None
    rounds: list[dict[str, Any]] = field(default_factory=list)

    @property
    def shuffler(self) -> Any:
        return self.service.devices["shuffler"]

    def status(self) -> dict[str, Any]:
        return self.service.machine.status(self.service.state)

    async def stop(self) -> None:
        self.service.stop()
        if self.task is not None:
            await asyncio.wait_for(self.task, 20)


def make_table(table_id: str, root: Path, broker: Broker, *, port: int | None = None,
               autoplay: bool = True, seed: int = 1, pace_s: float = 0.002,
               jackpot_rate: float = 0.9, options: LinkOptions = FAST,
               pool_timeout_s: float = 2.0) -> SimTable:
    cfg = table_config(table_id, root, broker, port=port, pool_timeout_s=pool_timeout_s)
    rng = random.Random(seed)
    devices = build_simulators(cfg, rng)
    devices["rng"] = RandomSource(rng=rng)
    link = LinkExtension(cfg, options=options)
    rounds: list[dict[str, Any]] = []
    log = logging.getLogger(f"tablectl.test.{table_id}")
    service = TableService(
        cfg, build_machine(cfg), devices, log,
        policy=UthSim(random.Random(seed + 1000), jackpot_rate=jackpot_rate, misdeal_rate=0.05)
        if autoplay else None,
        pace_s=pace_s, on_round=rounds.append, extensions=[link],
    )
    return SimTable(table_id, root, cfg, service, link, rounds=rounds)


async def start(table: SimTable) -> SimTable:
    """Start the table; return once its dealer's keys work (head office answered its birth, or
    the link's `confirm_s` passed) or it went out of service."""
    table.task = asyncio.create_task(table.service.run())
    await wait_for(lambda: table.service.journal is not None and table.service.state is not None,
                   10, "table start")
    await wait_for(lambda: table.service.ready and (table.service.ignored.held is None
                                                    or table.service.out_of_service is not None),
                   table.link.options.confirm_s + 10, "the dealer's keys released")
    return table


def run(main: Awaitable[None], timeout: float = 240) -> None:
    """asyncio.run with a ceiling: a stuck test fails instead of hanging CI."""
    asyncio.run(asyncio.wait_for(main, timeout))


async def wait_for(cond: Callable[[], bool | Awaitable[bool]], timeout: float, what: str,
                   every: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if asyncio.iscoroutine(got) or isinstance(got, asyncio.Future):
            got = await got
        if got:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(every)


# -- head office -------------------------------------------------------------------------------
def ho_config(db: str | Path, settings: BrokerSettings | None, **kw: Any) -> HeadOfficeConfig:
    from fractions import Fraction

    # pool_wager: the pool's qualifying jackpot wager (UTH 15.2.5.3); the tables' is 100
    params = Params(seed=SEED, increment=Fraction(1, 4), hidden=Fraction(1, 20),
                    wager=kw.pop("pool_wager", None))
    return HeadOfficeConfig(database=str(db), broker=settings, pools={POOL: params},
                            tables=kw.pop("tables", dict.fromkeys(ENROLLED, POOL)),
                            heartbeat_s=kw.pop("heartbeat_s", 0.3),
                            pool_expiry_s=kw.pop("pool_expiry_s", 3),
                            operators=kw.pop("operators", ("alice",)), **kw)


@contextlib.asynccontextmanager
async def head_office(db: str | Path, broker: Broker, workers: int = 1, **kw: Any):  # type: ignore[no-untyped-def]
    """`workers` head-office workers, each on its own connection to the ledger at `db` (a
    SQLite path or a `postgresql://` URL)."""
    started = []
    tasks = []
    for i in range(workers):
        settings = broker.settings(f"headoffice-{i + 1}", session_expiry_s=0)
        cfg = ho_config(db, settings, **kw)
        w = Worker(cfg, Ledger.open(str(db)))
        started.append(w)
        tasks.append(asyncio.create_task(w.run()))
    try:
        for w in started:
            await wait_for(w.connected.is_set, 10, "head office connected")
        yield started
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for w in started:
            w.ledger.close()


# -- journals vs ledger ------------------------------------------------------------------------
class JournalOwner(Protocol):
    """A table whose journal can be read: an in-process SimTable or a daemon process's config."""

    @property
    def id(self) -> str: ...

    @property
    def cfg(self) -> TableConfig: ...


def journal_totals(table: JournalOwner) -> dict[str, int]:
    """What a table's journal says it sent and received (journal_totals_at), and `paid`: the
    awards its round machine accepted (paid_by_replay)."""
    totals = journal_totals_at(table.cfg.service.state_dir, table.id, table.cfg.game)
    return {**totals, "paid": paid_by_replay(table.cfg)}


def journal_totals_at(state_dir: Path, table_id: str, game: str,
                      key_file: Path | None = None) -> dict[str, int]:
    """What the journal in `state_dir` says its table sent: jackpot wagers (increments net of
    cancellations), outbox messages written and still unacknowledged. Also used on a journal
    copied out of the VM (image/vm/test_vm.py)."""
    wagered = messages = 0
    with Journal.open(state_dir, table_id=table_id, game=game, create=False,
                      key_file=key_file) as j:
        for e in j.iter_events():
            for m in e.outbox:
                messages += 1
                if m.type == "jackpot_increment":
                    wagered += m.payload["amount"]
                elif m.type == "jackpot_cancel":
                    wagered -= m.payload["amount"]
        pending = len(j.pending_outbox(limit=1_000_000))
    return {"wagered": wagered, "messages": messages, "pending": pending}


def paid_by_replay(cfg: TableConfig) -> int:
    """Jackpot awards the table paid: every journaled event stepped through a fresh round
    machine from the start, summing what each `ho.award` added to the jackpot ledger. Counting
    the `ho.award` records instead overcounts: head office may send an award twice (the table
    resent its hit) and the journal keeps the second, refused by the machine (no pending hit)."""
    if cfg.game != "uth":
        return 0
    machine = build_machine(cfg)
    state = machine.initial()
    paid = 0
    with Journal.open(cfg.service.state_dir, table_id=cfg.table_id, game=cfg.game,
                      create=False) as j:
        for e in j.iter_events():
            before = state.ledger["paid"]
            state, _ = machine.step(state, e.event, e.now)
            if e.kind == "ho.award":
                paid += state.ledger["paid"] - before
    return paid


def assert_ledger_matches(ledger: Ledger, tables: Sequence[JournalOwner]) -> dict[str, Any]:
    total_in = total_paid = 0
    for t in tables:
        j = journal_totals(t)
        h = ledger.table_totals(t.id)
        assert j["pending"] == 0, f"{t.id}: {j['pending']} outbox messages not acknowledged"
        assert h["last_seq"] == j["messages"], (t.id, h, j)
        assert (h["wagered"], h["paid"]) == (j["wagered"], j["paid"]), (t.id, h, j)
        total_in += j["wagered"]
        total_paid += j["paid"]
    pool = ledger.pool(POOL)
    assert pool is not None and pool.stopped is None
    assert pool.imbalance() == 0
    assert pool.wagers_in == total_in and pool.wins == total_paid
    n = ledger.db.one("SELECT count(*) AS n FROM messages")
    assert n is not None and n["n"] == sum(journal_totals(t)["messages"] for t in tables)
    return {"in": total_in, "paid": total_paid, "pool": pool}


def headoffice_file(broker: Broker, path: Path, database: str,
                    tables: dict[str, str | None], client_id: str = "headoffice-1") -> Path:
    """A complete head-office config file for `tablectl-headoffice run` on this broker, with
    the pool POOL as the in-process head office has it (ho_config) and `tables` enrolled
    (id -> its pool, None for a table without a jackpot)."""
    enrolled = "".join(f'[[tables]]\nid = "{t}"\n' + (f'pool = "{pool}"\n' if pool else "")
                       for t, pool in tables.items())
    path.write_text(broker.headoffice_toml(database, client_id) + f"""[service]
operators = ["alice"]
[[pools]]
id = "{POOL}"
seed = {SEED}
increment_bp = 2500
hidden_bp = 500
{enrolled}""")
    return path


def report_json(ledger: Ledger) -> str:
    return json.dumps(ledger.report(), default=str)


async def drain(tables: list[SimTable], timeout: float = 30) -> None:
    """Stop play, then wait until every table's outbox is acknowledged and no hit is pending."""
    for t in tables:
        t.service.policy = Idle()  # the autoplay loop idles; the link keeps running
    def done() -> bool:
        for t in tables:
            if t.service.journal is None or t.service.journal.pending_outbox(limit=1):
                return False
            if t.status()["pool"]["pending"]:
                return False
        return True
    await wait_for(done, timeout, "outboxes acknowledged and hits answered", every=0.05)


class Idle:
    """Players who have left: the table stays up, nobody plays."""

    def next_events(self, status: dict[str, Any]) -> list[Event]:
        return []


def play_until(tables: list[SimTable], rounds: int) -> Callable[[], bool]:
    return lambda: all(len(t.rounds) >= rounds for t in tables)


async def emit_and_wait(table: SimTable, kind: str, **data: Any) -> None:
    table.service.emit(Event(kind, data))
    await table.service.idle()


async def to_the_river(table: SimTable) -> None:
    """A UTH table with two boxes played to the river, its jackpot online."""
    await wait_for(lambda: table.status()["jackpot"] == "online" and table.status()["deck_ready"],
                   10, f"{table.id}: jackpot online, deck shuffled")
    if table.status()["state"] == "closed":
        await emit_and_wait(table, "table.open")
    await emit_and_wait(table, "dealer.wager", box=2, ante=1000)
    await emit_and_wait(table, "bet.on", box=2)
    await emit_and_wait(table, "dealer.wager", box=5, ante=1000)
    await emit_and_wait(table, "bet.on", box=5)
    await emit_and_wait(table, "dealer.deal")
    await wait_for(lambda: table.status()["state"] == "preflop", 5, "the deal")
    for box in (2, 5):
        await emit_and_wait(table, "dealer.decision", box=box, action="play4")
    await emit_and_wait(table, "dealer.flop")
    await emit_and_wait(table, "dealer.turn_river")
    assert table.status()["state"] == "river"


def event(kind: str, **data: Any) -> Event:
    return Event(kind, data)
