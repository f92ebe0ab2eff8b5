"""Crash-safety soak: SIGKILL the simulated daemon many more times than CI does.

    .venv/bin/python bench/bench_crash.py [--kills 200] [--game uth]

Same checks as tests/daemon/test_daemon_crash.py: the journal verifies, round numbers are
contiguous, every round is reported once, and (UTH) the jackpot ledger is exact. Prints kills,
rounds played, wall time and the restart time (kill -> next READY) against a bare interpreter
start.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.journal import verify_dir
from tests.support.daemon import crash_loop
from tests.support.journal_check import check_journal


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--game", choices=["paigow", "uth"], default="paigow")
    ap.add_argument("--rules", default="nz")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rules = "nsw" if args.game == "uth" else args.rules
    table = f"SIM-{args.game.upper()}-{rules.upper()}"
    start = time.perf_counter()
    bare = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import asyncio"], check=True)
    bare = time.perf_counter() - bare
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        crash_loop(state, ["--game", args.game, "--rules", rules], args.kills, args.seed)
        check_journal(state, table, args.game)
        report = verify_dir(state)
    elapsed = time.perf_counter() - start
    print(f"{args.kills} SIGKILLs, {args.game} ({rules}): journal ok={report.ok},"
          f" {report.records} records, {report.rounds_completed} rounds completed,"
          f" {report.rounds_voided} voided, in {elapsed:.0f} s")
    print(f"bare interpreter start {bare:.2f} s (each restart pays at least this)")


if __name__ == "__main__":
    main()
