"""Fleet benchmark: K linked tables against one Mosquitto (TLS, ACL) and one head-office worker.

    .venv/bin/python -m bench.fleet.run --tables 100 [--samples 40] [--increments 20000]

Measures, in the same run:
- Mosquitto's raw rate: one client publishing QoS 1 to one subscriber (the baseline);
- increments per second through the durable ledger: every table publishes a burst of
  `jackpot_increment` messages, timed until head office has acknowledged all of them (one
  fsync'd transaction per batch);
- lock-to-meters latency: one table publishes an increment (what its relay does after the lock
  is journaled), timed until every table's meter client has received the new pool version
  (p50, p99 over `--samples`).
Head office runs as its own process (`tablectl-headoffice run`), as it would in production;
the K meter clients and the publishers share this process.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from controller.link import contract  # noqa: E402
from controller.link.transport import Connection, connect  # noqa: E402
from tests.mqtt_broker import Broker, Pki  # noqa: E402

POOL = "bench"


def _increment(table: str, seq: int) -> bytes:
    payload = {"round": seq, "pool_id": POOL, "boxes": [1], "wager": 100, "wagers": 1,
               "amount": 100}
    return contract.dumps(contract.outbox_message(table, seq, seq, "jackpot_increment",
                                                  "2026-01-01T00:00:00.000Z", payload))


async def raw_rate(broker: Broker, n: int) -> float:
    """Mosquitto alone: QoS 1 publishes from one client to one subscriber, per second."""
    got = asyncio.Event()
    count = 0
    topic = contract.outbox_topic("RAW")  # the table -> head office path, no ledger behind it
    async with connect(broker.settings("headoffice", "raw-sub", session_expiry_s=0)) as sub, \
            connect(broker.settings("RAW", "raw-pub", session_expiry_s=0)) as pub:
        await sub.subscribe([topic])

        async def read() -> None:
            nonlocal count
            async for _ in sub.messages():
                count += 1
                if count == n:
                    got.set()

        reader = asyncio.create_task(read())
        body = _increment("T0", 1)
        t0 = time.perf_counter()
        window = asyncio.Semaphore(256)  # as many in flight as the relays of many tables

        async def one() -> None:
            async with window:
                await pub.publish(topic, body)

        await asyncio.gather(*(one() for _ in range(n)))
        await got.wait()
        elapsed = time.perf_counter() - t0
        reader.cancel()
    return n / elapsed


def ledger_alone(root: Path, n: int, batch: int) -> float:
    """The durable ledger without MQTT: increments applied per second in fsync'd batches."""
    import json

    from headoffice.ledger import Incoming, Ledger
    from headoffice.pools import Params

    ledger = Ledger.open(str(root / "alone.db"))
    ledger.ensure_pool(POOL, Params(seed=5_000_000, increment=Fraction(1, 4),
                                    hidden=Fraction(1, 20)))
    items = [Incoming("outbox", f"T{i % 100}", json.loads(_increment(f"T{i % 100}",
                                                                     i // 100 + 1)))
             for i in range(n)]
    t0 = time.perf_counter()
    for lo in range(0, n, batch):
        ledger.apply_batch(items[lo:lo + batch])
    elapsed = time.perf_counter() - t0
    ledger.close()
    return n / elapsed


class Meter:
    """One table's meter: the last pool version it has shown, and when."""

    def __init__(self) -> None:
        self.version = 0
        self.event = asyncio.Event()


async def run_meter(conn: Connection, meter: Meter, watchers: dict[int, list[float]]) -> None:
    async for m in conn.messages():
        data = contract.parse_pool(m.payload)
        if data["version"] > meter.version:
            meter.version = data["version"]
            watchers.setdefault(data["version"], []).append(time.perf_counter())


async def fleet(args: argparse.Namespace, broker: Broker, ho: subprocess.Popen[bytes]) -> dict:
    k = args.tables
    meters = [Meter() for _ in range(k)]
    arrivals: dict[int, list[float]] = {}
    stack = []
    conns: list[Connection] = []
    sem = asyncio.Semaphore(32)

    async def open_table(i: int) -> Connection:
        async with sem:
            cm = connect(broker.settings(f"T{i}", f"bench-T{i}", session_expiry_s=0))
            conn = await cm.__aenter__()
            stack.append(cm)
            await conn.subscribe([contract.pool_topic(POOL), contract.ack_topic(f"T{i}")])
            return conn

    t_connect = time.perf_counter()
    conns = list(await asyncio.gather(*(open_table(i) for i in range(k))))
    t_connect = time.perf_counter() - t_connect
    acks = [0] * k
    done_acks = asyncio.Event()
    target = [0] * k

    async def reader(i: int, conn: Connection) -> None:
        async for m in conn.messages():
            if m.topic.endswith("/ack"):
                acks[i] = contract.parse_ack(m.payload, f"T{i}")
                if all(a >= t for a, t in zip(acks, target, strict=True)):
                    done_acks.set()
                continue
            data = contract.parse_pool(m.payload)
            if data["version"] > meters[i].version:
                meters[i].version = data["version"]
                arrivals.setdefault(data["version"], []).append(time.perf_counter())

    readers = [asyncio.create_task(reader(i, c)) for i, c in enumerate(conns)]
    await asyncio.sleep(1.5)  # retained value and a heartbeat reach everyone
    seq = [0] * k

    # Latency: table 0 locks a wager; how long until every meter shows the new version.
    latencies = []
    for _ in range(args.samples):
        version = max(m.version for m in meters)
        seq[0] += 1
        target[0] = seq[0]
        t0 = time.perf_counter()
        await conns[0].publish(contract.outbox_topic("T0"), _increment("T0", seq[0]))
        deadline = t0 + 5
        want = version + 1
        while time.perf_counter() < deadline:
            if len(arrivals.get(want, ())) >= k:
                break
            await asyncio.sleep(0.001)
        got = arrivals.get(want, [])
        if len(got) < k:
            raise SystemExit(f"only {len(got)} of {k} meters showed version {want} within 5 s")
        latencies.append(max(got) - t0)
        await asyncio.sleep(0.05)

    # Throughput: every table sends a burst; timed to the last ack.
    per_table = max(1, args.increments // k)
    done_acks.clear()
    for i in range(k):
        target[i] = seq[i] + per_table
    t0 = time.perf_counter()

    async def burst(i: int) -> None:
        for _ in range(per_table):
            seq[i] += 1
            await conns[i].publish(contract.outbox_topic(f"T{i}"), _increment(f"T{i}", seq[i]))

    await asyncio.gather(*(burst(i) for i in range(k)))
    await asyncio.wait_for(done_acks.wait(), 600)
    elapsed = time.perf_counter() - t0
    for r in readers:
        r.cancel()
    for cm in stack:
        await cm.__aexit__(None, None, None)
    latencies.sort()
    return {
        "tables": k,
        "connect_s": round(t_connect, 2),
        "latency_p50_ms": round(statistics.median(latencies) * 1000, 1),
        "latency_p99_ms": round(latencies[min(len(latencies) - 1,
                                              int(len(latencies) * 0.99))] * 1000, 1),
        "increments": per_table * k,
        "increments_per_s": round(per_table * k / elapsed),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", type=int, default=100)
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--increments", type=int, default=20000)
    ap.add_argument("--raw", type=int, default=20000, help="messages for Mosquitto's own rate")
    args = ap.parse_args()
    logging.getLogger("mqtt").disabled = True  # aiomqtt warns about every queued publish
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, 4 * args.tables + 256))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))  # the broker inherits it
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pki = Pki(root / "pki")
        for i in range(args.tables):
            pki.client(f"T{i}")
        broker = Broker(root / "broker", pki)
        text = broker.conf.read_text().replace("log_type subscribe\n", "")
        quiet = text.replace("connection_messages true", "connection_messages false")
        broker.conf.write_text(quiet)
        broker.start()
        raw = asyncio.run(raw_rate(broker, args.raw))  # before head office takes its share
        alone = ledger_alone(root, args.increments, 500)
        tls = pki.client("headoffice")
        (root / "ho.toml").write_text(f"""
[database]
url = "{root / 'ledger.db'}"
[broker]
host = "127.0.0.1"
port = {broker.port}
client_id = "bench-ho"
[broker.tls]
ca = "{tls.ca}"
cert = "{tls.cert}"
key = "{tls.key}"
[service]
heartbeat_s = 1.0
batch_max = 2000
[[pools]]
id = "{POOL}"
seed = 5000000
increment_bp = 2500
hidden_bp = 500
""")
        ho = subprocess.Popen(
            [sys.executable, "-m", "headoffice.cli", "--config", str(root / "ho.toml"), "run"],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=open(root / "ho.log", "wb"),  # noqa: SIM115
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        try:
            result = asyncio.run(fleet(args, broker, ho))
        finally:
            ho.terminate()
            ho.wait(10)
            broker.stop()
    result["mosquitto_raw_publish_per_s"] = round(raw)
    result["ledger_vs_raw"] = round(result["increments_per_s"] / raw, 3)
    result["ledger_alone_increments_per_s"] = round(alone)
    result["ledger_alone_vs_raw"] = round(alone / raw, 2)
    for key, value in result.items():
        print(f"{key:>28}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
