"""The ledger alone, for counting its instructions (or profiling it) apart from MQTT.

    .venv/bin/python -m bench.fleet.ledger_alone --increments 5000 [--batch 500] [--tables 500]
        [--pg URL] [--build-only] [--profile FILE]

Applies `--increments` jackpot increments of `--tables` tables in transactions of `--batch`
(as `bench.fleet.run`'s "ledger alone", which uses 100 tables), each message with its text as a
worker hands it over. Wall-clock rates on a shared machine are noise; instructions are not:

    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python \\
        -m bench.fleet.ledger_alone --increments N

at N = 1000 and 5000: (I(5000) - I(1000)) / 4000 is the instructions per increment, start-up
cancelled out; `--build-only` makes the messages without applying them, the part of that
figure that is the bench's own (subtract it). On PostgreSQL it counts this process only (the
worker's side), not the server."""

from __future__ import annotations

import argparse
import cProfile
import json
import tempfile
import time
from fractions import Fraction
from pathlib import Path

from bench.fleet.run import POOL, _increment, ledger_urls
from headoffice.ledger import Incoming, Ledger
from headoffice.pools import Params


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--increments", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--tables", type=int, default=500)
    ap.add_argument("--pg", metavar="URL")
    ap.add_argument("--build-only", action="store_true",
                    help="make the messages, apply none (the bench's own share)")
    ap.add_argument("--profile", metavar="FILE", help="cProfile the applying into FILE")
    args = ap.parse_args()
    n, tables = args.increments, args.tables
    with tempfile.TemporaryDirectory() as tmp, ledger_urls(Path(tmp), args.pg) as urls:
        ledger = Ledger.open(urls("alone"))
        ledger.ensure_pool(POOL, Params(seed=5_000_000, increment=Fraction(1, 4),
                                        hidden=Fraction(1, 20)))
        ledger.enrol({f"T{i}": POOL for i in range(tables)})
        raws = [_increment(f"T{i % tables}", i // tables + 1) for i in range(n)]
        items = [Incoming("outbox", f"T{i % tables}", json.loads(raw), raw.decode())
                 for i, raw in enumerate(raws)]
        profile = cProfile.Profile() if args.profile else None
        t0, c0 = time.perf_counter(), time.process_time()
        if profile is not None:
            profile.enable()
        for lo in range(0, 0 if args.build_only else n, args.batch):
            ledger.apply_batch(items[lo:lo + args.batch])
        if profile is not None:
            profile.disable()
            profile.dump_stats(args.profile)
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        pool = ledger.pool(POOL)
        applied = ledger.db.one("SELECT COUNT(*) AS n FROM messages")
        ledger.close()
    assert pool is not None and applied is not None
    print(f"increments_applied: {applied['n']}\npool_wagers_in: {pool.wagers_in}\n"
          f"increments_per_s: {n / elapsed:.0f}\ncpu_us_per_increment: {cpu / n * 1e6:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
