"""Atomicity under SIGKILL: a child appends in a loop and is killed at random moments.

After each kill the journal must open (it verifies the chain), its seqs must be contiguous, every
event the child reported committed must be there, and no event may be there twice: the child
derives each event from the journal's own position, as the daemon does after a restart.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from controller.journal import Journal, verify_dir

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import sys
from controller.journal import Journal
from controller.rounds.base import Effect, Event, Now

j = Journal.open(sys.argv[1], table_id="T01", game="uth")
while True:
    seq = j.last_seq + 1
    effects = []
    if seq % 3 == 0:
        effects.append(Effect("outbox", {"type": "increment", "payload": {"seq": seq}}))
    end = seq % 10 == 0
    if end:
        effects.append(Effect("round", {"number": j.last_round_number + 1,
                                        "status": "voided" if seq % 70 == 0 else "completed",
                                        "summary": {"seq": seq}}))
    got = j.append(Event("card.dispensed", {"n": seq, "pad": "x" * (seq % 50)}),
                   Now(f"t{seq}", seq), round=(seq - 1) // 10 + 1, effects=effects,
                   snapshot={"after": seq} if end else None)
    print(got, flush=True)
    if seq % 7 == 0:
        pending = j.pending_outbox(2)
        if pending:
            j.ack_outbox(pending[-1].id)
"""


def test_sigkill_mid_append_loses_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    rng = random.Random(20261125)
    err_path = tmp_path.parent / f"{tmp_path.name}-child.err"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    reported = 0
    for _ in range(10):
        # stderr to a file: with two pipes, communicate() reads the raw fds and would miss
        # what readline() already buffered.
        with open(err_path, "w") as err:
            child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], env=env,
                                     stdout=subprocess.PIPE, stderr=err, text=True)
        assert child.stdout is not None
        first = child.stdout.readline()  # appending has begun
        assert first.endswith("\n"), err_path.read_text()
        time.sleep(rng.uniform(0.0, 0.25))
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate()
        assert child.returncode == -signal.SIGKILL
        lines = (first + out).split("\n")[:-1]  # a cut-off last line has no newline
        seqs = [int(s) for s in lines]
        assert seqs == list(range(reported + 1, reported + 1 + len(seqs)))
        reported = max(reported, *seqs)

        crashed = verify_dir(tmp_path)  # read-only, beside the killed writer's -wal/-shm
        assert crashed.ok, crashed.errors
        assert crashed.records >= reported
        with Journal.open(tmp_path, table_id="T01", game="uth") as j:  # verifies the chain
            last = j.last_seq
            assert last >= reported, "an event reported committed was lost"
            assert last <= reported + 1  # at most the one in flight when killed
            events = list(j.iter_events())
            assert [e.seq for e in events] == list(range(1, last + 1))
            assert [e.data["n"] for e in events] == list(range(1, last + 1))
            assert j.last_round_number == last // 10
            snap, tail = j.replay_point()
            assert (snap or {}).get("after", 0) == last // 10 * 10
            assert [e.seq for e in tail] == list(range(last // 10 * 10 + 1, last + 1))
        reported = last
    rep = verify_dir(tmp_path)
    assert rep.ok, rep.errors
    assert rep.records == reported
    assert rep.rounds_completed + rep.rounds_voided == reported // 10
