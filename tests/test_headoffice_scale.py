"""Head office scaled out, against a real Mosquitto: three workers on one ledger share ten
tables, each table read by the worker holding its partition (headoffice/routing.py), with
duplicates and reorderings, and one worker killed mid-run. Every (table, seq) is applied
once, every table's ack reaches the end, the pool's books balance to the exact fraction and
its hits are numbered in order; on SQLite and on PostgreSQL (docs/headoffice.md "Scale")."""

from __future__ import annotations

import asyncio
import random

import pytest

from headoffice.ledger import Ledger
from headoffice.routing import PARTITIONS
from headoffice.worker import Worker
from shared.link import contract
from shared.link.transport import connect
from tests import mqtt_broker
from tests.support.link import ENROLLED, POOL, head_office, run, wait_for
from tests.test_headoffice_ledger import script

pytestmark = [
    pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed"),
    pytest.mark.slow,
]


def routed(workers: list[Worker]) -> bool:
    """Every partition held, by the live workers, each of them reading some tables and no
    table read by two of them (headoffice/routing.py)."""
    reading = [w._reading for w in workers]
    return (sum(len(w.partitions) for w in workers) == PARTITIONS
            and all(reading) and sum(map(len, reading)) == len(set().union(*reading)))


def scale_run(broker: mqtt_broker.Broker, ledger_url: str, kill: bool) -> None:
    """Three workers, ten tables publishing with duplicates and swaps, resending what is not
    acknowledged as the relay does (resend_s); with `kill`, the worker reading the most
    tables dies mid-run (its task cancelled: no release of its leases)."""
    rng = random.Random(5)
    tables = list(ENROLLED)
    rounds = {t: [(rng.randint(1, 4), rng.choice(["ok"] * 6 + ["void", "flush", "royal"]))
                  for _ in range(15)] for t in tables}
    msgs = {t: script(t, rounds[t]) for t in tables}
    for t in tables:
        assert all(m["payload"].get("pool_id", POOL) == POOL for m in msgs[t])
    halfway = asyncio.Event()
    # The tables' client certificates, issued before the workers run. Issuing used to run two
    # `openssl` processes each on the event loop the three workers share: under load (6-7, two
    # runs at once) that held the loop 1.4-2.2 s at a time, past the 2 s lease, and a third
    # worker took all the partitions. tests/mqtt_broker.py now issues them in-process, once
    # per CN per session (tests/test_mqtt_broker.py); issuing them here still keeps even that
    # off the loop.
    links = {t: broker.settings(t, f"pub-{t}", session_expiry_s=0) for t in tables}

    async def table(t: str) -> int:
        """Publish the table's outbox (each message once, some twice, neighbours swapped
        now and then, as a relay resending after a reconnect does); -> its last ack."""
        order = list(msgs[t])
        for i in range(0, len(order) - 1, 7):
            order[i], order[i + 1] = order[i + 1], order[i]
        order += rng.sample(msgs[t], len(msgs[t]) // 5)
        last = [0]
        async with connect(links[t]) as conn:
            await conn.subscribe([contract.ack_topic(t)])

            async def acks() -> None:
                async for m in conn.messages():
                    last[0] = max(last[0], contract.parse_ack(m.payload, t))

            reader = asyncio.create_task(acks())
            for n, m in enumerate(order):
                if kill and n == len(order) // 2:
                    await halfway.wait()  # the worker dies with every table mid-outbox
                await conn.publish(contract.outbox_topic(t), contract.dumps(m))
            deadline = asyncio.get_running_loop().time() + 60
            while last[0] < len(msgs[t]):  # the relay: what is not acknowledged, again
                assert asyncio.get_running_loop().time() < deadline, f"{t} stuck at {last[0]}"
                await asyncio.sleep(1.0)
                for m in msgs[t][last[0]:]:
                    await conn.publish(contract.outbox_topic(t), contract.dumps(m))
            reader.cancel()
        return last[0]

    async def main() -> None:
        async with head_office(ledger_url, broker, workers=3, verify_from=None,
                               dual_control_from=None) as workers:
            await wait_for(lambda: routed(workers), 20, "partitions spread over the workers")
            runs = asyncio.gather(*(table(t) for t in tables))
            survivors = workers
            if kill:
                victim = max(workers, key=lambda w: len(w._reading))
                await wait_for(lambda: victim.counters["applied"] > 0, 20, "the victim at work")
                task = next(t for t in asyncio.all_tasks()
                            if t.get_coro().__qualname__ == "Worker.run"  # type: ignore[union-attr]
                            and t.get_coro().cr_frame.f_locals.get("self") is victim)  # type: ignore[union-attr]
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                halfway.set()
                survivors = [w for w in workers if w is not victim]
                await wait_for(lambda: routed(survivors), 20, "the dead worker's partitions taken")
            assert await runs == [len(msgs[t]) for t in tables]
            applied = [w.counters["applied"] for w in workers]
            total = sum(len(m) for m in msgs.values())
            # Each once. A killed worker's last batch may commit after its counters stopped
            # (its thread finishes the transaction): the ledger below is the proof then.
            assert sum(applied) == total if not kill else sum(applied) <= total
            assert all(n > 0 for n in applied), applied  # all three took a share
            if kill:
                assert all(w.counters["partition_changes"] >= 2 for w in survivors)
        led = Ledger.open(ledger_url)
        try:
            rows = led.db.execute("SELECT table_id, seq FROM messages ORDER BY table_id, seq")
            assert [(r["table_id"], r["seq"]) for r in rows] == sorted(
                (t, s) for t in tables for s in range(1, len(msgs[t]) + 1))
            pool = led.pool(POOL)
            assert pool is not None and pool.stopped is None and pool.imbalance() == 0
            wagered = sum(led.table_totals(t)["wagered"] for t in tables)
            assert pool.wagers_in == wagered
            assert pool.contributions == wagered * (pool.params.increment + pool.params.hidden)
            hits = led.db.execute("SELECT hit_no FROM hits WHERE pool_id = ? ORDER BY hit_no",
                                  (POOL,))
            assert [h["hit_no"] for h in hits] == list(range(1, pool.hits + 1))
            assert pool.hits == sum(o in ("flush", "royal") for t in tables
                                    for _, o in rounds[t])
            refused = led.db.execute("SELECT type, reason FROM messages"
                                     " WHERE status <> 'applied'")
            assert all(r["type"] == "jackpot_cancel" and "below 0" in r["reason"]
                       for r in refused)  # a void round's cancel after a Royal took the reserve
        finally:
            led.close()

    run(main())


def test_three_workers_apply_every_message_once_and_keep_the_books(
        broker: mqtt_broker.Broker, ledger_url: str) -> None:
    scale_run(broker, ledger_url, kill=False)


def test_a_worker_killed_mid_run_loses_and_doubles_nothing(
        broker: mqtt_broker.Broker, ledger_url: str) -> None:
    """Its leases run out (lease_s), the others take its partitions and read its tables; what
    it had not acknowledged the tables send again, and the ledger applies each (table, seq)
    once whoever reads it."""
    scale_run(broker, ledger_url, kill=True)


def test_tcp_nodelay_on_the_broker_and_on_the_links_sockets(broker: mqtt_broker.Broker) -> None:
    """Nagle's algorithm held each small packet (a PUBACK, an ack, a pool value) until the
    peer's delayed ACK: ~89 ms from a table's lock to every meter (issue 17). The broker's
    config (rendered from headoffice/mosquitto/mosquitto.conf) turns it off, and so does the
    link for every socket it opens, before CONNECT."""
    import socket

    assert "\nset_tcp_nodelay true\n" in broker.conf.read_text()
    assert "set_tcp_nodelay true" in mqtt_broker.TEMPLATE.read_text()

    async def main() -> None:
        async with connect(broker.settings("T1", "nodelay-check", session_expiry_s=0)) as conn:
            sock = conn._client._client.socket()  # aiomqtt's paho client's socket
            assert sock is not None
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0

    run(main())
