"""Daemon benchmarks (issue 4), each beside a baseline measured in the same run.

    .venv/bin/python bench/bench_daemon.py [--rounds 200] [--game paigow --rules nsw] [--pace S]
    .venv/bin/python bench/bench_daemon.py --game uth --rounds 1000 --compare-with /tmp/base

(--compare-with TREE: only bytes per round, TREE's daemon (`git archive BASE | tar -x -C
/tmp/base`) and this tree's alternately, --runs times each, each on a new journal.)

1. Event-to-effect latency: from the event leaving the queue, through machine.step and the
   journal commit (fsync), to the display/device command carried out; p50 and p99 over every
   event of the simulated rounds, in-process. Baseline: a bare fsync'd SQLite insert of the same
   event in the same directory.
2. Time to READY=1 (sd_notify) of `tablectld --simulate` from spawn, beside a bare
   `python -c "import asyncio"` process start.
3. RSS after the rounds, beside the bare asyncio interpreter's RSS.
4. Bytes written to disk per round, from /proc/PID/io (write_bytes: what reached the block layer)
   of the daemon process.
Targets on this machine: p99 <= 20 ms; RSS <= 45 MB; <= 32 KB written per round.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import random
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller import logs
from controller.config.machine import build_machine
from controller.daemon.build import build_devices, build_policy, simulation_config
from controller.daemon.service import TableService
from controller.rounds.base import Event


class TimedService(TableService):
    latencies: list[float]

    async def process_batch(self, events: list[Event]) -> list[int | None]:
        # Every event of a batch waits for the whole batch: each gets the batch's latency.
        start = time.perf_counter()
        seqs = await super().process_batch(events)
        self.latencies.extend([time.perf_counter() - start] * len(events))
        return seqs


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency(game: str, rules: str, rounds: int) -> tuple[list[float], list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = simulation_config(game, rules, Path(tmp) / "state", Path(tmp) / "run")
        rng = random.Random(1)
        svc = TimedService(
            cfg,
            build_machine(cfg),
            build_devices(cfg, rng),
            logs.setup(journald=False),
            policy=build_policy(cfg, rng),
            autoplay=rounds,
        )
        svc.latencies = []
        svc.log.setLevel("ERROR")
        asyncio.run(svc.run())
        # Baseline: the same number of bare fsync'd inserts (WAL, synchronous=FULL).
        conn = sqlite3.connect(Path(tmp) / "bare.sqlite3", isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE t(seq INTEGER PRIMARY KEY, data TEXT)")
        bare = []
        payload = json.dumps({"kind": "dealer.wager", "data": {"box": 3, "amount": 2000}})
        for _ in range(len(svc.latencies)):
            start = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO t(data) VALUES (?)", (payload,))
            conn.execute("COMMIT")
            bare.append(time.perf_counter() - start)
        conn.close()
        return svc.latencies, bare


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def write_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def baseline_process() -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio, sys; sys.stdout.write('x\\n');sys.stdout.flush(); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    elapsed = time.perf_counter() - start
    rss = rss_kb(proc.pid)
    proc.communicate("")
    return elapsed, rss


def daemon_process(game: str, rules: str, rounds: int, pace: float | None = None
                   ) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        addr = str(Path(tmp) / "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(addr)
        sock.settimeout(30)
        state = Path(tmp) / "state"
        start = time.perf_counter()
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "controller.daemon",
                "--simulate",
                "--game",
                game,
                "--rules",
                rules,
                "--autoplay",
                "0",
                "--quiet",
                "--state-dir",
                str(state),
                *([] if pace is None else ["--pace", str(pace)]),
            ],
            env={**os.environ, "NOTIFY_SOCKET": addr},
            cwd=Path(__file__).resolve().parent.parent,
        )
        while "READY=1" not in sock.recv(4096).decode():
            pass
        ready = time.perf_counter() - start
        # Keep reading the notifications (WATCHDOG=1 every 2 s), as systemd does: the daemon's
        # sendto blocks once ~10 datagrams wait unread, which hung runs longer than ~30 s.
        done = threading.Event()
        threading.Thread(target=drain, args=(sock, done), daemon=True).start()
        from controller.control import request

        path = state / "run" / "control.sock"
        first = request(path, "status")["round"]
        written0 = write_bytes(proc.pid)
        while request(path, "status")["round"] < first + rounds:
            time.sleep(0.05)
        written = write_bytes(proc.pid) - written0
        rss = rss_kb(proc.pid)
        proc.terminate()
        proc.wait(timeout=10)
        done.set()
        sock.close()
        return {"ready_s": ready, "rss_kb": rss, "bytes_per_round": written / rounds}


def drain(sock: socket.socket, done: threading.Event) -> None:
    sock.settimeout(0.5)
    while not done.is_set():
        try:
            sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:
            return


def compare(tree: Path, game: str, rules: str, rounds: int, runs: int,
            pace: float | None) -> None:
    """Bytes per round of TREE's daemon and this one's, alternately (the load moves both)."""
    spec = importlib.util.spec_from_file_location("base_bench", tree / "bench" / "bench_daemon.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"{tree}/bench/bench_daemon.py not found")
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)  # its daemon_process runs TREE's daemon (cwd TREE)
    for run in range(runs):
        for name, process in (("base", base.daemon_process), ("this", daemon_process)):
            # The base tree's daemon_process may predate --pace.
            d = process(game, rules, rounds) if pace is None else process(game, rules, rounds,
                                                                          pace)
            print(f"run {run + 1} {name}: {d['bytes_per_round'] / 1024:.2f} KB per round "
                  f"({rounds} {game} rounds, load {os.getloadavg()[0]:.1f})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--game", default="paigow")
    ap.add_argument("--rules", default="nsw")
    ap.add_argument("--rounds", type=int, default=600, help="enough to span WAL checkpoints")
    ap.add_argument("--pace", type=float, default=None, help="seconds between simulated "
                    "actions (default: the simulation's); ~1 makes a UTH round last ~30 s, so "
                    "pages never fsync'd (the mark, SQLite's -shm) are written back within it")
    ap.add_argument("--compare-with", type=Path, default=None, metavar="TREE")
    ap.add_argument("--runs", type=int, default=2, help="with --compare-with")
    args = ap.parse_args()
    if args.compare_with is not None:
        compare(args.compare_with, args.game, args.rules, args.rounds, args.runs, args.pace)
        return
    lat, bare = latency(args.game, args.rules, args.rounds)
    print(f"event-to-effect latency over {len(lat)} events ({args.rounds} rounds, {args.game})")
    for name, xs in (("daemon", lat), ("bare fsync'd insert", bare)):
        print(
            f"  {name:<22} p50 {pct(xs, 0.5) * 1e3:6.2f} ms  p99 {pct(xs, 0.99) * 1e3:6.2f} ms"
            f"  mean {statistics.fmean(xs) * 1e3:6.2f} ms"
        )
    print(
        f"  ratio p99 daemon/bare: {pct(lat, 0.99) / pct(bare, 0.99):.1f}x   (target p99 <= 20 ms)"
    )
    base_start, base_rss = baseline_process()
    d = daemon_process(args.game, args.rules, args.rounds, args.pace)
    print(
        f"time to READY   daemon {d['ready_s']:.2f} s   bare asyncio {base_start:.2f} s"
        f"   ratio {d['ready_s'] / base_start:.1f}x"
    )
    print(
        f"RSS             daemon {d['rss_kb'] / 1024:.1f} MB"
        f"   bare asyncio {base_rss / 1024:.1f} MB"
        f"   ratio {d['rss_kb'] / base_rss:.1f}x   (target <= 45 MB)"
    )
    print(f"disk written    {d['bytes_per_round'] / 1024:.1f} KB per round (target <= 32 KB)")


if __name__ == "__main__":
    main()
