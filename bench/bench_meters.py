"""What the accounting meters cost at start: a full replay of the journal against the checkpoint
(controller/daemon/accounting.py), measured in the same run on the same journal.

    .venv/bin/python bench/bench_meters.py [--rounds 1500] [--game uth]

Plays the rounds with the simulated daemon into a fresh state directory, then times
`Journal.open` (the chain verification every start does anyway), `meters_of` (a full replay)
and `load_meters` from the checkpoint the daemon wrote, and checks both give the same figures.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from controller.daemon.accounting import load_meters, meters_of, save_checkpoint
from controller.journal import Journal

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=1500)
    ap.add_argument("--game", choices=["uth", "paigow"], default="uth")
    args = ap.parse_args()
    table = f"SIM-{args.game.upper()}-NSW"
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        subprocess.run([sys.executable, "-m", "controller.daemon", "--simulate", "--game",
                        args.game, "--autoplay", str(args.rounds), "--seed", "7", "--quiet",
                        "--state-dir", str(state), "--runtime-dir", str(state / "run")],
                       check=True, cwd=REPO, stderr=subprocess.DEVNULL)
        began = time.perf_counter()
        with Journal.open(state, table_id=table, game=args.game) as journal:
            opened = time.perf_counter()
            full = meters_of(journal)
            replayed = time.perf_counter()
            save_checkpoint(journal, full, state)  # as of the last record: the best case
            saved = time.perf_counter()
            meters, how = load_meters(journal, state)
            loaded = time.perf_counter()
            records = journal.last_seq
        assert meters.as_json() == full.as_json(), "the checkpoint disagrees with the replay"
    print(f"{args.rounds} {args.game} rounds, {records} journal records")
    print(f"journal open + verify   {opened - began:8.3f} s")
    print(f"meters full replay      {replayed - opened:8.3f} s")
    print(f"checkpoint write        {1000 * (saved - replayed):8.2f} ms")
    print(f"meters from checkpoint  {1000 * (loaded - saved):8.2f} ms ({how})")
    print(f"replay / checkpoint     {(replayed - opened) / (loaded - saved):8.0f} x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
