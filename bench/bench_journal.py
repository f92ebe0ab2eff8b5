"""Benchmark: journal appends with synchronous=FULL against synchronous=OFF in the same run.

A UTH-like workload: rounds of --per-round events (cards, sensor edges, dealer keys), two outbox
messages and a round record per round, a ~1.5 KB state snapshot at each round end, and head
office's ack after each round. Both journals live in fresh directories under --dir (default: a
temp dir on the filesystem of /var/tmp; point it at the real state dir's filesystem).

    .venv/bin/python bench/bench_journal.py [--appends 2000] [--per-round 40] [--dir DIR]
                                            [--verify-events 200000]

Prints, for each mode: appends/s, p50/p99 append latency, bytes per 1000 appends as the kernel
accounts them (/proc/self/io write_bytes: whole 4 KiB pages dirtied, the figure the daemon's
per-round target is measured with) and as written by SQLite (wchar), bytes per round; the
FULL/OFF throughput ratio; and the time to open (= verify) the FULL journal.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from controller import journal as jmod
from controller.journal import Journal, verify_dir
from controller.rounds.base import Effect, Event, Now

CARDS = [r + s for s in "cdhs" for r in "23456789TJQKA"]


def proc_io() -> dict[str, int]:
    with open("/proc/self/io") as f:
        return {k: int(v) for k, v in (line.split(": ") for line in f)}


def workload(i: int, per_round: int) -> tuple[Event, list[Effect], dict | None, int]:
    """The i-th event (from 0): event, effects, snapshot, round number."""
    rnd, k = divmod(i, per_round)
    rnd += 1
    if k == 0:
        ev = Event("dealer.new_round", {})
    elif k < 8:
        ev = Event("bet.on", {"box": k})
    elif k < per_round - 3:
        ev = Event("card.dispensed", {"card": CARDS[(i * 7) % 52], "index": k - 8})
    else:
        ev = Event("dealer.decision", {"box": k % 7 + 1, "action": "bet", "mult": 4})
    effects = [Effect("display", {"mode": "text", "text": f"ROUND {rnd}"})]
    snapshot = None
    if k == 8:  # the first card locks the jackpot wagers
        effects.append(Effect("outbox", {"type": "jackpot.increment", "payload": {
            "pool": "uth-linked-1", "round": rnd, "wagers": 5, "contribution_cents": 275}}))
    if k == per_round - 1:
        seats = {str(b): {"ante": 1000, "blind": 1000, "play": 4000, "trips": 500,
                          "result": "win", "paid_cents": 6500} for b in range(1, 8)}
        effects.append(Effect("outbox", {"type": "round.result", "payload": {
            "round": rnd, "seats": seats}}))
        effects.append(Effect("round", {"number": rnd, "status": "completed",
                                        "summary": {"seats": 7, "dealer": "flush"}}))
        snapshot = {"state": "between_rounds", "round": rnd, "seats": seats,
                    "shoe": CARDS, "jackpot": {"pool_cents": 12345678, "version": rnd},
                    "pending": [], "bank": None}
    return ev, effects, snapshot, rnd


def run(mode: str, base: Path, n: int, per_round: int) -> dict[str, float]:
    d = Path(tempfile.mkdtemp(prefix=f"journal-{mode}-", dir=base))
    j = Journal.open(d, table_id="BENCH", game="uth")
    sync_off = mode == "OFF"
    if sync_off:
        j._conn.execute("PRAGMA synchronous=OFF")  # the baseline: no fsync at all
    lat = []
    io0 = proc_io()
    t0 = time.perf_counter()
    for i in range(n):
        ev, effects, snap, rnd = workload(i, per_round)
        t = time.perf_counter()
        j.append(ev, Now("2026-11-25T21:40:00.123Z", 1000 * i), round=rnd, effects=effects,
                 snapshot=snap)
        lat.append(time.perf_counter() - t)
        if snap is not None:  # head office acknowledges the round's messages
            pending = j.pending_outbox(1000)
            if pending:
                j.ack_outbox(pending[-1].id)
            if sync_off:
                j._conn.execute("PRAGMA synchronous=OFF")
    elapsed = time.perf_counter() - t0
    io1 = proc_io()
    j.close()
    lat.sort()
    res = {
        "appends_s": n / elapsed,
        "p50_ms": lat[len(lat) // 2] * 1e3,
        "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1e3,
        "write_bytes_per_1000": (io1["write_bytes"] - io0["write_bytes"]) * 1000 / n,
        "wchar_per_1000": (io1["wchar"] - io0["wchar"]) * 1000 / n,
        "file_bytes": (d / jmod.JOURNAL_FILE).stat().st_size,
    }
    if mode == "FULL":
        t = time.perf_counter()
        Journal.open(d, table_id="BENCH", game="uth").close()
        res["open_verify_s"] = time.perf_counter() - t
        t = time.perf_counter()
        assert verify_dir(d).ok
        res["verify_dir_s"] = time.perf_counter() - t
    shutil.rmtree(d)
    return res


def verify_scale(base: Path, n: int, per_round: int) -> None:
    """Open (= full verify) time of a journal of n events, built without fsync to save time."""
    d = Path(tempfile.mkdtemp(prefix="journal-verify-", dir=base))
    with Journal.open(d, table_id="BENCH", game="uth") as j:
        j._conn.execute("PRAGMA synchronous=OFF")
        for i in range(n):
            ev, effects, snap, rnd = workload(i, per_round)
            j.append(ev, Now("2026-11-25T21:40:00.123Z", 1000 * i), round=rnd, effects=effects,
                     snapshot=snap)
    size = (d / jmod.JOURNAL_FILE).stat().st_size
    t = time.perf_counter()
    Journal.open(d, table_id="BENCH", game="uth").close()
    dt = time.perf_counter() - t
    print(f"  open+verify of {n} events ({size / 1e6:.1f} MB): {dt:.2f} s "
          f"({dt / n * 1e6:.1f} µs/event)")
    shutil.rmtree(d)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--appends", type=int, default=2000)
    ap.add_argument("--per-round", type=int, default=40)
    ap.add_argument("--dir", type=Path, default=Path("/var/tmp"))
    ap.add_argument("--verify-events", type=int, default=0,
                    help="also time opening (full verify) a journal of this many events")
    args = ap.parse_args()
    n, pr = args.appends, args.per_round
    results = {mode: run(mode, args.dir, n, pr) for mode in ("OFF", "FULL")}
    print(f"journal bench: {n} appends, {pr} events/round, page_size {jmod.PAGE_SIZE}, "
          f"dir {args.dir}")
    for mode, r in results.items():
        print(f"  synchronous={mode:4s} {r['appends_s']:8.0f} appends/s   "
              f"p50 {r['p50_ms']:6.2f} ms   p99 {r['p99_ms']:6.2f} ms   "
              f"written/1000 appends: {r['write_bytes_per_1000'] / 1e6:6.2f} MB (write_bytes) "
              f"{r['wchar_per_1000'] / 1e6:6.2f} MB (wchar)   "
              f"per round: {r['write_bytes_per_1000'] * pr / 1000 / 1024:5.1f} KiB "
              f"(write_bytes) {r['wchar_per_1000'] * pr / 1000 / 1024:5.1f} KiB (wchar)")
    full, off = results["FULL"], results["OFF"]
    print(f"  FULL/OFF throughput ratio: {full['appends_s'] / off['appends_s']:.3f} "
          f"(OFF is {off['appends_s'] / full['appends_s']:.1f}x faster, without durability)")
    print(f"  journal file {full['file_bytes'] / n:.0f} bytes/event; open+verify "
          f"{full['open_verify_s'] * 1e3:.0f} ms, verify_dir {full['verify_dir_s'] * 1e3:.0f} ms "
          f"for {n} events ({full['verify_dir_s'] / n * 1e6:.1f} µs/event)")
    if args.verify_events:
        verify_scale(args.dir, args.verify_events, pr)


if __name__ == "__main__":
    main()
