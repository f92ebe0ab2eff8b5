"""A round whose outcome a supervisor invalidates (UTH 13.9-13.10; Pai Gow NSW 16.5-16.6,
ACT 15.3-15.4) goes the way every void goes, `tablectl dealer void` over the control socket,
with its own kind: the daemon adds who asked and the round record names them (issue 30)."""

from __future__ import annotations

import getpass
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.daemon.test_dealer_table import _cli, uth  # noqa: F401 (the fixture)
from tests.support.daemon import ask


def _wait_for(tmp_path: Path, state: str) -> None:
    deadline = time.monotonic() + 30
    while ask(tmp_path, "status")["state"] != state:
        assert time.monotonic() < deadline, f"the table did not reach {state}"
        time.sleep(0.05)


def test_the_supervisor_who_invalidates_a_round_is_in_its_record(
    tmp_path: Path, uth: subprocess.Popen[str]  # noqa: F811
) -> None:
    ask(tmp_path, "dealer", {"action": "wager", "data": {"box": 1, "ante": 1000}})
    ask(tmp_path, "dealer", {"action": "deal"})
    _wait_for(tmp_path, "preflop")  # the simulated shuffler dealt: round 1 is in progress
    number = ask(tmp_path, "status")["round"]
    res = _cli(tmp_path, "dealer", "void", "kind=invalidated", "cause=fraud",
               "reason=past-posting", "forfeit=[1]")
    assert res.returncode == 0, (res.stdout, res.stderr)
    record = ask(tmp_path, "round_show", {"number": number})["record"]
    summary = record["summary"]
    me = {"uid": os.getuid(), "user": getpass.getuser()}
    assert (record["status"], summary["kind"], summary["rule"]) == (
        "voided", "invalidated", "13.9.2, 13.10")
    assert summary["voided_by"] == me and [w["box"] for w in summary["forfeited"]] == [1]
    uth.send_signal(signal.SIGTERM)
    uth.wait(timeout=10)
