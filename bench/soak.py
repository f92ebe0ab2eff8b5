"""The money-safety soak, long form (issue 12): tests/soak_harness.py with many more kills.

    .venv/bin/python bench/soak.py [--kills 300] [--outages 6] [--seed 1] [--keep DIR]

Three linked UTH tables and a Pai Gow table as `tablectld` processes SIGKILLed at random
moments, `--kills` times per game (100 each UTH table, 300 the Pai Gow table), a real Mosquitto
and a real head office each killed and restarted `--outages` times in between. Fails (exit 1,
the failed check printed) unless every journal verifies and head office's ledger equals the
journals to the cent. Prints kills, rounds, money compared, wall time.
tests/test_soak.py runs the short form in CI.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.soak_harness import SoakPlan, run_soak


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=300, help="SIGKILLs per game")
    ap.add_argument("--outages", type=int, default=6, help="broker and head-office kills each")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pace", type=float, default=0.005, help="seconds between players' actions")
    ap.add_argument("--keep", type=Path, help="run in this directory and keep it (logs, journals)")
    args = ap.parse_args()
    plan = SoakPlan(kills=args.kills, outages=args.outages, seed=args.seed, pace_s=args.pace)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        try:
            figures = run_soak(root, plan)
        except AssertionError:
            traceback.print_exc()
            print(f"SOAK FAILED (state kept in {root})" if args.keep else "SOAK FAILED")
            return 1
    print("\n".join(figures.lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
