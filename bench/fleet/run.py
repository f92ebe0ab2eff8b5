"""Fleet benchmark: K linked tables against one Mosquitto (TLS, ACL) and one head-office worker.

    .venv/bin/python -m bench.fleet.run --tables 100 [--samples 40] [--increments 20000]
                                        [--procs 4]

Measures, in the same run:
- Mosquitto's own raw rate (the baseline): Mosquitto's C clients, `mosquitto_pub -l` to
  `mosquitto_sub`, QoS 1 over TLS, the same message body; beside it one Python (aiomqtt)
  client to another, the client library head office is built on;
- increments per second through the durable ledger: every table publishes a burst of
  `jackpot_increment` messages (QoS 1, at most 32 in flight, as a relay does), timed until
  head office has acknowledged all of them (one fsync'd transaction per batch);
- lock-to-meters latency: one table publishes an increment (what its relay does after the lock
  is journaled), timed until every table's meter client has received the new pool version
  (p50, p99 over `--samples`).
Head office runs as its own process (`tablectl-headoffice run`), as it would in production.
The K meter clients are spread over `--procs` processes; the tables' burst publishers are
`mosquitto_pub` processes (C, connected before the burst), because on a small machine a
Python load generator takes the CPU head office needs: in production each table is its own
computer. The CPU each process used per phase is printed (where the time goes), and the time
each waited for a CPU; `--profile-worker FILE` runs each worker under cProfile
(bench/fleet/profiled.py); `--worker-cpu F` holds each worker to F of a core in a cgroup of its
own (bench/fleet/cpuquota.py), so that the workers' rates can be seen to add up on a machine
whose cores the rest of the fleet fills; `--pg-waits` samples what the PostgreSQL backends
wait on (bench/fleet/pgwaits.py); `--pack N` sends the tables' bursts N increments to a message
(a relay's packed outbox messages, issue 31), `--compare-pack N` one a message, then N, in one
run.

~800 lines because one run measures the baselines, the fleet, the worker matrix and the p99
sweep with the same broker, PKI and process meters, and its figures are read as ratios to each
other (the profiler, the quotas and the database sampler are modules of their own).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import itertools
import json
import logging
import multiprocessing as mp
import os
import queue
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.fleet.cpuquota import CpuGroup, CpuQuotas, unavailable_reason, verdict  # noqa: E402
from bench.fleet.nagle import allow_nagle  # noqa: E402
from bench.fleet.pgwaits import WaitSampler  # noqa: E402
from shared.link import contract  # noqa: E402
from shared.link.transport import (  # noqa: E402
    Connection,
    LinkError,
    connect,
    share_paho_properties,
)
from tests.mqtt_broker import ACL, Broker, Pki  # noqa: E402

POOL = "bench"


def _increment(table: str, seq: int) -> bytes:
    payload = {"round": seq, "pool_id": POOL, "boxes": [1], "wager": 100, "wagers": 1,
               "amount": 100}
    return contract.dumps(contract.outbox_message(table, seq, seq, "jackpot_increment",
                                                  "2026-01-01T00:00:00.000Z", payload))


def _burst(table: str, first: int, n: int, pack: int) -> bytes:
    """A table's burst of `n` increments from seq `first`, one line per MQTT message: each
    alone (pack 1: a table before issue 31, or a relay with one row due), or `pack` rows to a
    message, as a relay with a backlog sends them to a head office that reads packs."""
    seqs = range(first, first + n)
    if pack == 1:
        return b"".join(_increment(table, s) + b"\n" for s in seqs)
    rows = [contract.outbox_message(table, s, s, "jackpot_increment", "2026-01-01T00:00:00.000Z",
                                    {"round": s, "pool_id": POOL, "boxes": [1], "wager": 100,
                                     "wagers": 1, "amount": 100}) for s in seqs]
    return b"".join(contract.dumps(contract.outbox_pack(table, rows[lo:lo + pack])) + b"\n"
                    for lo in range(0, n, pack))


async def raw_rate(broker: Broker, n: int) -> float:
    """One Python (aiomqtt) client publishing QoS 1 to another, per second: the rate of the
    client library head office reads with (its worker's speed-up of paho included)."""
    share_paho_properties()
    got = asyncio.Event()
    count = 0
    topic = contract.outbox_topic("RAW")  # the table -> head office path, no ledger behind it
    async with connect(broker.settings("headoffice-8", "raw-sub", session_expiry_s=0)) as sub, \
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


def _mosquitto_tls(broker: Broker, cn: str) -> list[str]:
    tls = broker.pki.client(cn)
    return ["-h", "127.0.0.1", "-p", str(broker.port), "-V", "5", "--cafile", str(tls.ca),
            "--cert", str(tls.cert), "--key", str(tls.key),
            *(["--nodelay"] if broker.nodelay else [])]


def wait_in_log(broker: Broker, text: str, count: int = 1, timeout: float = 60) -> None:
    """Until the broker's log says `text` `count` times: it logs each connection ("New client
    connected ... as ID") and each subscription, so this is the broker's own word that the
    C clients are connected and subscribed."""
    deadline = time.monotonic() + timeout
    while broker.log().count(text) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"the broker's log shows {text!r} fewer than {count} times"
                             f" after {timeout} s")
        time.sleep(0.1)


def spawn_publisher(broker: Broker, table: str, client_id: str,
                    inflight: int = 32) -> subprocess.Popen[bytes]:
    """A `mosquitto_pub -l` for one table: connects now, then publishes each line written to
    its stdin (QoS 1, at most `inflight` unacknowledged)."""
    return subprocess.Popen(
        ["mosquitto_pub", *_mosquitto_tls(broker, table), "-i", client_id, "-q", "1",
         "-M", str(inflight), "-t", contract.outbox_topic(table), "-l"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def mosquitto_rate(broker: Broker, n: int) -> float:
    """Mosquitto with its own C clients: `mosquitto_pub -l` (QoS 1, 256 in flight) to
    `mosquitto_sub` over TLS, per second, timed from the first line written to the
    subscriber's exit after the n-th message."""
    topic = contract.outbox_topic("RAW")
    sub = subprocess.Popen(
        ["mosquitto_sub", *_mosquitto_tls(broker, "headoffice-7"), "-i", "raw-c-sub", "-q", "1",
         "-t", topic, "-C", str(n)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    pub = spawn_publisher(broker, "RAW", "raw-c-pub", inflight=256)
    try:
        # The broker names clients by their certificate (use_username_as_clientid).
        wait_in_log(broker, f"headoffice-7 1 {topic}")
        wait_in_log(broker, " as RAW ")
        assert pub.stdin is not None
        t0 = time.perf_counter()
        pub.stdin.write((_increment("T0", 1) + b"\n") * n)
        pub.stdin.close()
        sub.wait(120)
        return n / (time.perf_counter() - t0)
    finally:
        for p in (pub, sub):
            if p.poll() is None:
                p.kill()
            p.wait()


@contextlib.contextmanager
def ledger_urls(root: Path, pg: str | None) -> Iterator[Callable[[str], str]]:
    """name -> a fresh ledger URL: a SQLite file under `root`, or with `pg` a PostgreSQL schema
    of its own on that server (its search_path), dropped afterwards."""
    if pg is None:
        yield lambda name: str(root / f"{name}.db")
        return
    import psycopg

    admin = psycopg.connect(pg, autocommit=True)
    schemas: list[str] = []

    def new(name: str) -> str:
        schema = f"bench_fleet_{name}_{os.getpid()}"
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.execute(f'CREATE SCHEMA "{schema}"')
        schemas.append(schema)
        # application_name: --pg-waits finds this run's backends by it
        return (f"{pg}{'&' if '?' in pg else '?'}options=-csearch_path%3D{schema}"
                f"&application_name={schema}")

    try:
        yield new
    finally:
        for schema in schemas:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        admin.close()


def ledger_alone(url: str, n: int, batch: int) -> tuple[float, float]:
    """The durable ledger without MQTT: increments applied per second in fsync'd batches, and
    the CPU microseconds this process spent per increment (less noisy on a shared machine)."""
    from headoffice.ledger import Incoming, Ledger
    from headoffice.pools import Params

    ledger = Ledger.open(url)
    ledger.ensure_pool(POOL, Params(seed=5_000_000, increment=Fraction(1, 4),
                                    hidden=Fraction(1, 20)))
    ledger.enrol({f"T{i}": POOL for i in range(100)})
    raws = [_increment(f"T{i % 100}", i // 100 + 1) for i in range(n)]
    items = [Incoming("outbox", f"T{i % 100}", json.loads(raw), raw.decode())
             for i, raw in enumerate(raws)]
    t0, c0 = time.perf_counter(), time.process_time()
    for lo in range(0, n, batch):
        ledger.apply_batch(items[lo:lo + batch])
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    ledger.close()
    return n / elapsed, cpu / n * 1e6


def messages_per_transaction(url: str, samples: int) -> float:
    """The ledger's mean batch in the burst: a transaction stamps its messages with one `utc`
    (to the millisecond; a transaction takes longer), so messages ÷ distinct stamps, without
    the latency phase's `samples` one-message transactions (T0's first seqs), which dragged
    the mean down (a burst of ~13 transactions of 1,500 read as 607). What one hand-off to the
    ledger's thread, and a transaction's own costs, are spread over."""
    from headoffice.db import open_database

    db = open_database(url)
    try:
        row = db.one("SELECT COUNT(*) AS n, COUNT(DISTINCT utc) AS tx FROM messages"
                     " WHERE NOT (table_id = 'T0' AND seq <= ?)", (samples,))
    finally:
        db.close()
    assert row is not None
    return round(int(row["n"]) / max(1, int(row["tx"])), 1)


def cpu_s(pid: int, field: int = 0) -> float | None:
    """CPU seconds a process (all its threads) has run so far, to the nanosecond: the
    scheduler's own count (/proc/PID/schedstat), where /proc/PID/stat counts 10 ms ticks and
    500 publishers of a few ms each would read as zero. None: the process is gone.
    `field` 1: the seconds its threads were runnable but waited for a CPU instead (for a
    process in a CPU-quota cgroup this includes the time it was throttled)."""
    total = 0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    for task in tasks:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            total += int((task / "schedstat").read_text().split()[field])
    return total / 1e9


def loop_thread_s(pid: int) -> float:
    """CPU seconds of a process's main thread alone (/proc/PID/task/PID): head office's event
    loop (receive, parse, acks, pool values); its other threads are the ledger's (the
    transactions, asyncio.to_thread) and the database driver's."""
    with contextlib.suppress(OSError):
        return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[0]) / 1e9
    return 0.0


def postgres_pids() -> list[int]:
    """Every process of the machine's PostgreSQL server (the postmaster and its backends)."""
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if proc.name.isdigit() and (proc / "comm").read_text().strip() in (
                    "postgres", "postmaster"):
                found.append(int(proc.name))
    return found


class CpuMeter:
    """CPU used per process (bench, head office, Mosquitto) and per group of processes (the
    tables' publishers) during one phase: where the time goes on a shared machine. A process
    that ends meanwhile (a PostgreSQL backend of someone else's) counts for nothing."""

    def __init__(self, pids: dict[str, int], groups: dict[str, list[int]] | None = None) -> None:
        self.pids = {**{name: [pid] for name, pid in pids.items()}, **(groups or {})}
        self.start = [{pid: cpu_s(pid, f) for pids in self.pids.values() for pid in pids}
                      for f in (0, 1)]
        self.t0 = time.perf_counter()

    def shares(self, field: int = 0) -> dict[str, float]:
        """Cores used (field 0), or cores' worth of waiting for a CPU while runnable (field 1:
        a process starved by the machine's load shows it)."""
        wall = time.perf_counter() - self.t0
        used = {}
        for name, pids in self.pids.items():
            total = 0.0
            for pid in pids:
                start, end = self.start[field][pid], cpu_s(pid, field)
                if start is not None and end is not None:
                    total += end - start
            used[name] = round(total / wall, 2)
        return used


async def meters_process(idx: int, tables: list[int], broker: Broker,
                         cmds: Any, results: Any) -> None:
    """One process of meter clients, for `tables`. Reports ("seen", idx, version, t) once all
    its meters show a version (while watching); on ("burst", targets) it stops watching,
    answers ("armed", idx), and reports ("burst", idx, t, deliveries) once head office has
    acknowledged every one of its tables up to its target."""
    loop = asyncio.get_running_loop()
    sem = asyncio.Semaphore(8)  # TLS handshakes at once: more time out on a loaded machine
    stack = []
    where = {t: n for n, t in enumerate(tables)}
    shown = [0] * len(tables)
    seen: dict[int, int] = {}
    acks = [0] * len(tables)
    target = [0] * len(tables)
    pending = [0]  # local tables whose acks are behind their target
    done = asyncio.Event()
    watch = [True]
    deliveries = [0]

    async def open_table(i: int) -> Connection:
        async with sem:
            # Its own certificate (M<i>, reading T<i>'s acks by the bench's ACL): the broker
            # binds client ids to certificates, and T<i>'s is the publisher's.
            for attempt in range(5):  # a TLS handshake can time out on a loaded machine
                cm = connect(dataclasses.replace(
                    broker.settings(f"M{i}", f"bench-T{i}", session_expiry_s=0), timeout_s=60))
                try:
                    conn = await cm.__aenter__()
                    break
                except LinkError:
                    if attempt == 4:
                        raise
                    await asyncio.sleep(1 + attempt)
            stack.append(cm)
            await conn.subscribe([contract.pool_topic(POOL), contract.ack_topic(f"T{i}")])
            return conn

    async def reader(i: int, conn: Connection) -> None:
        n = where[i]
        async for m in conn.messages():
            if m.topic.endswith("/ack"):
                before = acks[n] >= target[n]
                acks[n] = max(acks[n], contract.parse_ack(m.payload, f"T{i}"))
                if not before and acks[n] >= target[n]:
                    pending[0] -= 1
                    if pending[0] == 0:
                        done.set()
                continue
            deliveries[0] += 1
            version = contract.parse_pool(m.payload)["version"]
            if version > shown[n]:
                shown[n] = version
                seen[version] = seen.get(version, 0) + 1
                if seen[version] == len(tables) and watch[0]:
                    results.put(("seen", idx, version, time.perf_counter()))

    conns = list(await asyncio.gather(*(open_table(i) for i in tables)))
    readers = [asyncio.create_task(reader(i, c)) for i, c in zip(tables, conns, strict=True)]
    results.put(("ready", idx))
    while True:
        cmd = await loop.run_in_executor(None, cmds.get)
        if cmd[0] == "burst":
            watch[0] = False
            deliveries[0] = 0
            done.clear()
            for n, i in enumerate(tables):
                target[n] = cmd[1][i]
            pending[0] = sum(1 for n in range(len(tables)) if acks[n] < target[n])
            results.put(("armed", idx))
            if pending[0]:
                await done.wait()
            results.put(("burst", idx, time.perf_counter(), deliveries[0]))
        else:  # "stop"
            break
    for r in readers:
        r.cancel()
    for cm in stack:
        await cm.__aexit__(None, None, None)


def _meters_main(idx: int, tables: list[int], broker: Broker, cmds: Any, results: Any) -> None:
    logging.getLogger("mqtt").disabled = True
    asyncio.run(meters_process(idx, tables, broker, cmds, results))


async def fleet(args: argparse.Namespace, broker: Broker,
                hos: list[subprocess.Popen[bytes]]) -> dict:
    """The meters live in `--procs` processes (one Python process cannot read 500+ TLS
    connections fast enough); this process publishes table 0's locks and times everything.
    perf_counter is CLOCK_MONOTONIC, one clock for all processes on the machine."""
    k, nproc = args.tables, args.procs
    # T0's publisher connects after the latency phase: until then T0's certificate is the
    # lock publisher's (one connection per certificate: use_username_as_clientid).
    # A relay keeps at most 32 rows in flight (LinkOptions.max_inflight), packed or not.
    inflight = max(1, 32 // args.pack)
    publishers = [spawn_publisher(broker, f"T{i}", f"bench-pub-T{i}", inflight)
                  for i in range(1, k)]
    assert broker.proc is not None
    ctx = mp.get_context("fork")
    results = ctx.Queue()
    cmds = [ctx.Queue() for _ in range(nproc)]
    procs = [ctx.Process(target=_meters_main,
                         args=(j, list(range(j, k, nproc)), broker, cmds[j], results))
             for j in range(nproc)]
    for p in procs:
        p.start()
    pids = {"mosquitto": broker.proc.pid, "bench_main": os.getpid()}
    pids.update({f"headoffice{w}": ho.pid for w, ho in enumerate(hos)})
    pids.update({f"meters{j}": p.pid for j, p in enumerate(procs) if p.pid is not None})

    async def get(timeout: float) -> tuple[Any, ...]:
        return await asyncio.to_thread(results.get, True, timeout)

    try:
        t_connect = time.perf_counter()
        ready = 0
        while ready < nproc:
            ready += (await get(600))[0] == "ready"  # TLS handshakes on a loaded machine
        await asyncio.to_thread(wait_in_log, broker, "u'T", k - 1)
        # A lock published before head office reads its table is lost: wait for the workers
        # to share the partitions (headoffice/routing.py), and for the released ones to be
        # dropped by their former holders (a claim period later).
        tables_per_worker = await asyncio.to_thread(wait_routed, args.ledger_url, len(hos), k)
        t_connect = time.perf_counter() - t_connect
        current = [0]
        async with connect(broker.settings("T0", "bench-T0-lock", session_expiry_s=0)) as pub:
            await pub.subscribe([contract.pool_topic(POOL)])

            async def follow() -> None:
                async for m in pub.messages():
                    current[0] = max(current[0], contract.parse_pool(m.payload)["version"])

            follower = asyncio.create_task(follow())
            await asyncio.sleep(1.5)  # retained value and a heartbeat reach everyone
            # Latency: table 0 locks a wager; how long until every meter shows the new version.
            latencies = []
            cpu = CpuMeter(pids)
            for seq in range(1, args.samples + 1):
                want = current[0] + 1
                t0 = time.perf_counter()
                await pub.publish(contract.outbox_topic("T0"), _increment("T0", seq))
                times: dict[int, float] = {}
                deadline = t0 + 5
                while len(times) < nproc:
                    try:
                        msg = await get(max(0.0, deadline - time.perf_counter()))
                    except queue.Empty:
                        raise SystemExit(f"not every meter showed version {want} within 5 s"
                                         ) from None
                    if msg[0] == "seen" and msg[2] == want:
                        times[msg[1]] = msg[3]
                latencies.append(max(times.values()) - t0)
                current[0] = max(current[0], want)
                await asyncio.sleep(0.05)
            cpu_latency = cpu.shares()
            follower.cancel()
        await asyncio.sleep(0.2)
        publishers.insert(0, spawn_publisher(broker, "T0", "bench-pub-T0", inflight))
        await asyncio.to_thread(wait_in_log, broker, "u'T", k + 1)  # + the lock publisher
        while not results.empty():  # late "seen" reports of the last sample
            await get(1)
        # Throughput: every table sends a burst; timed to the last ack of every table.
        per_table = max(1, args.increments // k)
        base = {i: args.samples if i == 0 else 0 for i in range(k)}
        bursts = [_burst(f"T{i}", base[i] + 1, per_table, args.pack) for i in range(k)]
        for c in cmds:
            c.put(("burst", {i: base[i] + per_table for i in range(k)}))
        armed = 0
        while armed < nproc:
            armed += (await get(60))[0] == "armed"
        # Publishers are not waited for until the end, so their /proc entries stay readable.
        groups = {f"publishers({k})": [p.pid for p in publishers]}
        if args.pg_run:  # the server's processes (anyone else's queries on it count too)
            groups["postgres"] = postgres_pids()
        quota_groups: list[CpuGroup] = args.worker_groups
        throttled0 = [g.throttling() for g in quota_groups]
        waits = None
        if args.pg_run and args.pg_waits:
            app = urllib.parse.parse_qs(urllib.parse.urlsplit(args.ledger_url).query)
            waits = WaitSampler(args.pg, app["application_name"][0]).start()
        loop0 = [loop_thread_s(ho.pid) for ho in hos]
        cpu = CpuMeter(pids, groups)
        t0 = time.perf_counter()
        for p, lines in zip(publishers, bursts, strict=True):
            assert p.stdin is not None
            p.stdin.write(lines)  # within the pipe's buffer: returns at once
            p.stdin.close()
        ends, deliveries = [], 0
        while len(ends) < nproc:
            msg = await get(300)
            if msg[0] == "burst":
                ends.append(msg[2])
                deliveries += msg[3]
        elapsed = max(ends) - t0
        cpu_burst, cpu_wait_burst = cpu.shares(), cpu.shares(1)
        loop_cores = [round((loop_thread_s(ho.pid) - c0) / elapsed, 2)
                      for ho, c0 in zip(hos, loop0, strict=True)]
        pg_waits = waits.stop() if waits else None
        # the wrapper really put each worker, every thread of it, in its group
        in_groups = bool(quota_groups) and all(
            g.holds(ho.pid) for g, ho in zip(quota_groups, hos, strict=True))
        throttled = []
        for g, (periods0, hit0) in zip(quota_groups, throttled0, strict=True):
            periods, hit = g.throttling()
            throttled.append(round((hit - hit0) / max(1, periods - periods0), 2))
    finally:
        for c in cmds:
            c.put(("stop",))
        for p in procs:
            p.join(20)
            if p.is_alive():
                p.kill()
        for pub in publishers:
            if pub.poll() is None:
                pub.kill()
            pub.wait()
    latencies.sort()
    workers_cores = [cpu_burst[f"headoffice{w}"] for w in range(len(hos))]
    increments_per_s = per_table * k / elapsed
    quota = {}
    if quota_groups:
        quota = {"worker_cpu_quota": args.worker_cpu,
                 "worker_throttled_periods": throttled,
                 "workers_in_their_cgroups": in_groups,
                 "workers_at_quota": verdict(args.worker_cpu, workers_cores, throttled)}
    return {
        "tables": k,
        "meter_processes": nproc,
        "headoffice_workers": args.workers,
        "connect_s": round(t_connect, 2),
        "latency_p50_ms": round(statistics.median(latencies) * 1000, 1),
        "latency_p99_ms": round(latencies[min(len(latencies) - 1,
                                              int(len(latencies) * 0.99))] * 1000, 1),
        "increments": per_table * k,
        "increments_per_message": args.pack,
        "increments_per_s": round(increments_per_s),
        # T0's lock publisher counts for its worker too
        "tables_per_worker": tables_per_worker,
        "meter_deliveries_per_increment": round(deliveries / (per_table * k), 2),
        "cpu_cores_latency_phase": cpu_latency,
        "cpu_cores_burst_phase": cpu_burst,
        "cpu_cores_burst_all_measured": round(sum(cpu_burst.values()), 2),
        "cpu_wait_for_a_core_burst_phase": cpu_wait_burst,
        "workers_cores_burst": round(sum(workers_cores), 2),
        # of the workers' cores, their event loops' threads (the rest: the ledger's threads)
        "workers_loop_thread_cores_burst": loop_cores,
        # what a worker-core turns into: comparable across worker counts and quotas
        "increments_per_worker_core": round(increments_per_s / max(0.01, sum(workers_cores))),
        **quota,
        **({"pg_backends_per_sample": pg_waits} if pg_waits is not None else {}),
    }


def wait_routed(ledger_url: str, workers: int, tables: int,
                timeout_s: float = 120) -> list[int]:
    """Every partition held, by `workers` distinct workers; then one claim period more. The
    tables each worker then reads, most first: the slowest worker's share bounds how far the
    workers' rates can add up (a worker whose tables are done idles while the others work)."""
    from headoffice.db import open_database
    from headoffice.routing import PARTITIONS, partition_of

    db = open_database(ledger_url)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            rows = db.execute("SELECT part, owner, expires_epoch FROM ho_partitions")
            held = [r["owner"] for r in rows if r["owner"] and r["expires_epoch"] > time.time()]
            if len(held) == PARTITIONS and len(set(held)) == workers:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"partitions not shared by {workers} workers: {set(held)}")
            time.sleep(0.2)
        time.sleep(2.0)  # heartbeat_s 1.0: claims every second
        owner = {int(r["part"]): r["owner"]
                 for r in db.execute("SELECT part, owner FROM ho_partitions")}
    finally:
        db.close()
    count: dict[str, int] = {}
    for i in range(tables):
        who = owner[partition_of(f"T{i}")]
        count[who] = count.get(who, 0) + 1
    return sorted(count.values(), reverse=True)


def run_fleet(args: argparse.Namespace, root: Path, pki: Pki, tables: int, workers: int,
              pg: str | None, nagle: bool = False) -> dict[str, Any]:
    """One measurement: a broker of its own, the ledger (`pg` or SQLite), `workers` head-office
    processes, `tables` tables. `nagle`: TCP_NODELAY off everywhere (broker, C clients, the
    link's sockets in head office and in the meter processes): the "before" of issue 17."""
    run = argparse.Namespace(**{**vars(args), "tables": tables, "workers": workers,
                                "pg_run": pg is not None, "worker_groups": []})
    load_at_start = os.getloadavg()
    for i in range(tables):
        pki.client(f"T{i}")
        pki.client(f"M{i}")
    name = f"{'pg' if pg else 'sqlite'}-{tables}t-{workers}w{'-nagle' if nagle else ''}"
    here = root / name
    for again in itertools.count(2):  # the same run repeated (--repeat) gets a directory of its own
        if not here.exists():
            break
        here = root / f"{name}-{again}"
    here.mkdir()
    # The repo's ACL, and for the meter clients (certificates M<i>) T<i>'s acks to read.
    acl = here / "acl"
    acl.write_text(ACL.read_text() + "".join(
        f"\nuser M{i}\ntopic read {contract.ack_topic(f'T{i}')}\n" for i in range(tables)))
    broker = Broker(here / "broker", pki, acl=acl, nodelay=not nagle)
    broker.start()
    with contextlib.ExitStack() as stack:
        stack.callback(broker.stop)
        # Before head office takes its share of the machine.
        raw = mosquitto_rate(broker, args.raw)
        python_raw = asyncio.run(raw_rate(broker, args.raw))
        urls = stack.enter_context(ledger_urls(here, pg))
        alone, alone_cpu = ledger_alone(urls("alone"), args.increments, 500)
        ledger_url = run.ledger_url = urls("ledger")
        quotas = None
        if args.worker_cpu:
            # Removed after the workers have ended (ExitStack: last in, first out).
            quotas = stack.enter_context(CpuQuotas(args.worker_cpu, str(os.getpid())))
        hos: list[subprocess.Popen[bytes]] = []
        for w in range(workers):
            # Several workers share one ledger, each reading its partitions' tables.
            (here / f"ho{w}.toml").write_text(broker.headoffice_toml(ledger_url, f"bench-ho{w}",
                                                                     f"headoffice-{w + 1}")
                                              + f"""[service]
heartbeat_s = 1.0
batch_max = {args.batch_max}
[[pools]]
id = "{POOL}"
seed = 5000000
increment_bp = 2500
hidden_bp = 500
""" + "".join(f'[[tables]]\nid = "T{i}"\npool = "{POOL}"\n' for i in range(tables)))
            if args.profile_worker and not nagle:
                module = ["bench.fleet.profiled", f"{args.profile_worker}.{here.name}.{w}"]
            else:
                module = ["bench.fleet.nagle" if nagle else "headoffice.cli"]
            argv = [sys.executable, "-m", *module, "--config", str(here / f"ho{w}.toml"), "run"]
            if quotas is not None:
                group = quotas.new(f"{here.name}-w{w}")
                run.worker_groups.append(group)
                argv = group.wrap(argv)
            hos.append(subprocess.Popen(
                argv, cwd=REPO, stdout=subprocess.DEVNULL,
                stderr=open(here / f"ho{w}.log", "wb"),  # noqa: SIM115
                env={**os.environ, "PYTHONPATH": str(REPO)},
            ))
        try:
            result = asyncio.run(fleet(run, broker, hos))
            result["messages_per_transaction"] = messages_per_transaction(ledger_url, args.samples)
        except BaseException:
            for w in range(workers):  # what head office said, before the directory goes
                print(f"--- ho{w}.log (tail)\n{(here / f'ho{w}.log').read_text()[-3000:]}",
                      file=sys.stderr)
            raise
        finally:
            for ho in hos:
                ho.terminate()
            for ho in hos:
                try:
                    ho.wait(10)
                except subprocess.TimeoutExpired:
                    ho.kill()  # its cgroup cannot be removed while it lives
                    ho.wait()
    result["ledger"] = "postgresql" if pg else "sqlite"
    result["load_average_at_start"] = " ".join(f"{x:.2f}" for x in load_at_start)
    result["tcp_nodelay"] = not nagle
    result["mosquitto_raw_publish_per_s"] = round(raw)
    result["increments_vs_mosquitto_raw"] = round(result["increments_per_s"] / raw, 3)
    result["python_client_raw_per_s"] = round(python_raw)
    result["increments_vs_python_raw"] = round(result["increments_per_s"] / python_raw, 3)
    result["ledger_alone_increments_per_s"] = round(alone)
    result["ledger_alone_cpu_us_per_increment"] = round(alone_cpu, 1)
    result["ledger_alone_vs_mosquitto_raw"] = round(alone / raw, 2)
    return result


def crossing(points: list[tuple[int, float]], limit: float) -> str:
    """Where p99 crosses `limit` ms, from (tables, p99) measured: interpolated between the
    last count under it and the first over it."""
    points = sorted(points)
    for (k0, p0), (k1, p1) in itertools.pairwise(points):
        if p0 <= limit < p1:
            return f"~{round(k0 + (k1 - k0) * (limit - p0) / (p1 - p0))} tables"
    if points and points[0][1] > limit:
        return f"below {points[0][0]} tables"
    return f"above {points[-1][0]} tables" if points else "not measured"


def matrix_line(rep: int, workers: int, r: dict[str, Any], base: float) -> str:
    line = (f"[{rep}] {r['ledger']:>10} {workers} worker(s): {r['increments_per_s']:>6}/s"
            f" (x{r['increments_per_s'] / base:.2f}) p50 {r['latency_p50_ms']}"
            f" p99 {r['latency_p99_ms']}; per worker-core {r['increments_per_worker_core']}/s"
            f" (workers {r['workers_cores_burst']} cores); tables per worker"
            f" {r['tables_per_worker']}; messages per transaction"
            f" {r['messages_per_transaction']}; meter deliveries per increment"
            f" {r['meter_deliveries_per_increment']}; ledger alone"
            f" {r['ledger_alone_increments_per_s']}/s; load {r['load_average_at_start']};"
            f" cpu {r['cpu_cores_burst_phase']} (all measured"
            f" {r['cpu_cores_burst_all_measured']}); waited for a core"
            f" {r['cpu_wait_for_a_core_burst_phase']}")
    if "workers_at_quota" in r:
        line += f"; {r['workers_at_quota']}"
        if not r["workers_in_their_cgroups"]:
            line += "; A WORKER WAS NOT (WHOLLY) IN ITS CGROUP: the quota did not hold it"
    if "pg_backends_per_sample" in r:
        line += f"; pg backends per sample {r['pg_backends_per_sample']}"
    return line


def compare_pack(args: argparse.Namespace, root: Path, pki: Pki) -> None:
    """One increment a message (the baseline) against `--compare-pack` N to a message, each
    ledger, alternately, `--repeat` times: increments/s and increments per second of the
    workers' CPU, as ratios to the baseline of the same repetition."""
    ledgers = [None, *([args.pg] if args.pg else [])]
    print(f"# {args.tables} tables, {args.workers} worker(s), {args.increments} increments:"
          f" 1 increment a message (baseline) -> {args.compare_pack} a message, this run")
    for rep in range(1, args.repeat + 1):
        for pg in ledgers:
            got = {}
            for pack in (1, args.compare_pack):
                run = argparse.Namespace(**{**vars(args), "pack": pack})
                got[pack] = r = run_fleet(run, root, pki, args.tables, args.workers, pg)
                print(f"[{rep}] {r['ledger']:>10} pack {pack:>2}: {r['increments_per_s']:>6}"
                      f" increments/s, per worker-core {r['increments_per_worker_core']}/s"
                      f" (workers {r['workers_cores_burst']} cores), p50/p99"
                      f" {r['latency_p50_ms']}/{r['latency_p99_ms']} ms; messages per"
                      f" transaction {r['messages_per_transaction']}; baselines: Python client"
                      f" {r['python_client_raw_per_s']}/s, Mosquitto C"
                      f" {r['mosquitto_raw_publish_per_s']}/s, ledger alone"
                      f" {r['ledger_alone_increments_per_s']}/s; load"
                      f" {r['load_average_at_start']}; cpu {r['cpu_cores_burst_phase']}",
                      flush=True)
                if args.json_lines:
                    print("#json", json.dumps(r), flush=True)
            one, n = got[1], got[args.compare_pack]
            print(f"[{rep}] {one['ledger']:>10} pack {args.compare_pack} / pack 1: increments/s"
                  f" x{n['increments_per_s'] / one['increments_per_s']:.2f}, per worker-core"
                  f" x{n['increments_per_worker_core'] / one['increments_per_worker_core']:.2f},"
                  f" vs the Python client's raw rate"
                  f" x{n['increments_per_s'] / n['python_client_raw_per_s']:.2f}", flush=True)


def print_result(result: dict[str, Any]) -> None:
    for key, value in result.items():
        print(f"{key:>34}: {value}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", type=int, default=100)
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--increments", type=int, default=20000)
    ap.add_argument("--procs", type=int, default=4, help="processes holding the meter clients")
    ap.add_argument("--workers", type=int, default=1, help="head-office worker processes")
    ap.add_argument("--batch-max", type=int, default=10000,
                    help="head office's batch_max: messages per ledger transaction at most")
    ap.add_argument("--raw", type=int, default=20000, help="messages for Mosquitto's own rate")
    ap.add_argument("--pg", metavar="URL",
                    help="the ledger on this PostgreSQL server (a schema of its own, dropped"
                         " afterwards), e.g. postgresql://root@127.0.0.1:5432/test;"
                         " default SQLite")
    ap.add_argument("--pack", type=int, default=1,
                    help="the tables' bursts with this many increments to an MQTT message (a"
                         " relay's packed outbox messages, issue 31); default 1: one each")
    ap.add_argument("--compare-pack", metavar="N", type=int,
                    help="the same fleet with one increment a message (the baseline: a table"
                         " before issue 31), then with N to a message, in this run (--repeat"
                         " times, alternately); with --pg on that PostgreSQL too")
    ap.add_argument("--nagle", action="store_true",
                    help="TCP_NODELAY off everywhere: the fleet before issue 17")
    ap.add_argument("--compare-nagle", action="store_true",
                    help="measure with Nagle (before) then with TCP_NODELAY, in this run")
    ap.add_argument("--matrix", metavar="WORKERS", type=_ints,
                    help="e.g. 1,2,4: that many workers each on SQLite and (with --pg) on"
                         " PostgreSQL, at --tables; increments/s against 1 worker's")
    ap.add_argument("--sweep", metavar="TABLES", type=_ints,
                    help="e.g. 250,500,1000: lock -> every meter at each table count, and"
                         " where p99 crosses --limit-ms")
    ap.add_argument("--limit-ms", type=float, default=250.0)
    ap.add_argument("--worker-cpu", metavar="F", type=float,
                    help="each head-office worker in a cgroup of its own held to F of a core"
                         " (e.g. 0.2): whether workers' rates add up when each has CPU of its"
                         " own (bench/fleet/cpuquota.py; needs a writable cgroup cpu controller)")
    ap.add_argument("--pg-waits", action="store_true",
                    help="with --pg: sample pg_stat_activity during the burst (the run's"
                         " backends' states and wait events, bench/fleet/pgwaits.py)")
    ap.add_argument("--profile-worker", metavar="FILE",
                    help="run each head-office worker under cProfile, its stats written to"
                         " FILE.<run>.<worker> when stopped (python -m pstats to read)")
    ap.add_argument("--pki", metavar="DIR",
                    help="keep the throwaway CA and the tables' certificates (valid 2 days) in"
                         " DIR, to reuse in the next run; default: made afresh each run")
    ap.add_argument("--json-lines", action="store_true",
                    help="with --matrix: also each run's whole result, one JSON line each")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --matrix: run the whole matrix this many times, the ledgers"
                         " alternately")
    args = ap.parse_args()
    if args.worker_cpu is not None:
        if not 0.01 <= args.worker_cpu <= (os.cpu_count() or 1):
            ap.error(f"--worker-cpu {args.worker_cpu}: a fraction of a core, 0.01 to"
                     f" {os.cpu_count()}")
        why = unavailable_reason()
        if why:
            ap.error(why)
        # SIGTERM (a stopped run) unwinds like ^C: the workers end and their cgroups go.
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    logging.getLogger("mqtt").disabled = True  # aiomqtt warns about every queued publish
    most = max([args.tables, *(args.sweep or [])])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, 6 * most + 256))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))  # the broker inherits it
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # 2 certificates per table, made by openssl one by one: minutes at 500 tables
        pki = Pki(Path(args.pki) if args.pki else root / "pki")
        if args.compare_nagle:
            # TCP_NODELAY first: Nagle, once allowed, stays allowed in this process (and in
            # the meter processes it forks).
            after = run_fleet(args, root, pki, args.tables, args.workers, args.pg)
            allow_nagle()
            before = run_fleet(args, root, pki, args.tables, args.workers, args.pg, True)
            print(f"# {args.tables} tables, {args.workers} worker(s), {after['ledger']}:"
                  " Nagle (before) -> TCP_NODELAY (after), this run")
            for key in ("latency_p50_ms", "latency_p99_ms", "increments_per_s"):
                print(f"{key:>34}: {before[key]} -> {after[key]}"
                      f" (x{after[key] / before[key]:.2f})")
            return 0
        if args.compare_pack:
            compare_pack(args, root, pki)
            return 0
        if args.nagle:
            allow_nagle()  # this process's and the meter processes' link sockets
        if args.matrix:
            ledgers = [None, *([args.pg] if args.pg else [])]
            print(f"# {args.tables} tables: increments/s, lock -> every meter p50/p99 ms"
                  " (x: against the first worker count on the same ledger, this repetition)"
                  + (f"; each worker held to {args.worker_cpu:g} of a core"
                     if args.worker_cpu else ""))
            for rep in range(1, args.repeat + 1):
                for pg in ledgers:  # SQLite and PostgreSQL alternately, each repetition
                    base = None
                    for w in args.matrix:
                        r = run_fleet(args, root, pki, args.tables, w, pg, args.nagle)
                        base = base or r["increments_per_s"]
                        print(matrix_line(rep, w, r, base), flush=True)
                        if args.json_lines:
                            print("#json", json.dumps(r), flush=True)
            return 0
        if args.sweep:
            points = []
            for k in args.sweep:
                r = run_fleet(args, root, pki, k, args.workers, args.pg, args.nagle)
                points.append((k, r["latency_p99_ms"]))
                print(f"{k:>6} tables: p50 {r['latency_p50_ms']} ms p99 {r['latency_p99_ms']}"
                      f" ms; {r['increments_per_s']} increments/s", flush=True)
            print(f"p99 crosses {args.limit_ms:g} ms: {crossing(points, args.limit_ms)}")
            return 0
        print_result(run_fleet(args, root, pki, args.tables, args.workers, args.pg, args.nagle))
    return 0


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


if __name__ == "__main__":
    sys.exit(main())
