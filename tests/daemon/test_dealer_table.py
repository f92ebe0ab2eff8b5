"""`tablectl dealer` and `tablectl table` over the real control socket (issue 13, "Both games"):
an accepted action exits 0, a refused one nonzero with the machine's reason; an action the game
has not is refused before the journal (counted, logged); the supervisor opens and closes a table
that has no key switch, journaled with who."""

from __future__ import annotations

import getpass
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.journal import verify_dir
from tests.support.daemon import REPO, ask, start_daemon, wait_for_socket


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli.main", *args, "--runtime-dir",
         str(tmp_path / "run")],
        cwd=REPO, capture_output=True, text=True, timeout=30,
    )


@pytest.fixture
def uth(tmp_path: Path):
    # --pace 1000: the simulated dealer opens the table (its first action) and then waits, so
    # nobody but the test acts; the simulated key switch is never turned.
    proc = start_daemon(tmp_path, "--game", "uth", "--autoplay", "0", "--pace", "1000",
                        "--seed", "3", "--quiet")
    try:
        wait_for_socket(tmp_path, proc)
        deadline = time.monotonic() + 20
        while ask(tmp_path, "status")["state"] != "betting":
            assert time.monotonic() < deadline, "the simulated dealer did not open the table"
            time.sleep(0.05)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)


def _records(tmp_path: Path) -> list[tuple[str, dict]]:
    return [(e["kind"], e["data"]) for e in ask(tmp_path, "journal_tail", {"n": 1000})]


def test_supervisor_opens_and_closes_a_table_and_dealer_exit_codes(
    tmp_path: Path, uth: subprocess.Popen[str]
) -> None:
    for box in range(1, 8):  # the simulated players' wagers off the layout (may be refused)
        ask(tmp_path, "dealer", {"action": "withdraw", "data": {"box": box}})
    # The supervisor closes the table from the socket (no key switch is wired).
    res = _cli(tmp_path, "table", "close")
    assert res.returncode == 0, res.stderr
    assert ask(tmp_path, "status")["state"] == "closed"
    # Refused by the machine (the table is closed, 7.1 needs it open): exit 1 with the reason.
    res = _cli(tmp_path, "dealer", "deal")
    assert res.returncode == 1 and "dealer.deal refused:" in res.stderr, res
    # Issue 28 (second pass, 4): a refusal says one thing: refused, nothing changed; nothing
    # on stdout that reads as done (it printed `dealer.deal -> journal #N, state closed ...`).
    assert res.stdout == "", res.stdout
    assert "nothing changed (state closed round" in res.stderr, res.stderr
    assert "the refusal is journaled as #" in res.stderr and res.stderr.count("\n") == 1
    # The supervisor opens the table from the socket: journaled with who.
    res = _cli(tmp_path, "table", "open")
    assert res.returncode == 0, res.stderr
    assert "table.open done: journal #" in res.stdout and "state betting" in res.stdout
    assert ask(tmp_path, "status")["state"] == "betting"
    # Opening an open table is refused by the machine, with its words.
    res = _cli(tmp_path, "table", "open")
    assert res.returncode == 1 and "already open" in res.stderr
    # An accepted action exits 0 (it used to exit 1 whenever the machine logged anything).
    res = _cli(tmp_path, "dealer", "jackpot_off")
    assert res.returncode == 0, (res.stdout, res.stderr)
    res = _cli(tmp_path, "table", "close")
    assert res.returncode == 0, res.stderr
    assert ask(tmp_path, "status")["state"] == "closed"
    # The supervisor's close, open, refused open, close: each journaled with who.
    switch = [d for k, d in _records(tmp_path) if k in ("table.open", "table.close")]
    assert switch[-4:] == [{"operator": {"uid": os.getuid(), "user": getpass.getuser()}}] * 4


def test_an_action_the_game_has_not_is_refused_before_the_journal(
    tmp_path: Path, uth: subprocess.Popen[str]
) -> None:
    before = len(_records(tmp_path))
    for action in ("new_round", "confrim", "shake"):  # unknown, misspelt, Pai Gow's
        res = _cli(tmp_path, "dealer", action)
        assert res.returncode == 2, res
        assert f"'{action}' is not a uth keypad action" in res.stderr
        assert "misdeal" in res.stderr  # the known actions are named
    with pytest.raises(RuntimeError, match="open or close"):
        ask(tmp_path, "table", {"action": "unlock"})
    status = ask(tmp_path, "status")
    assert status["control"]["refused_by_reason"].get("unknown_action") == 4
    assert len(_records(tmp_path)) == before  # nothing journaled
    logs = ask(tmp_path, "logs", {"n": 200})["lines"]
    assert sum("refused before the journal (unknown_action)" in str(line)
               for line in logs) == 4
    uth.send_signal(signal.SIGTERM)
    uth.wait(timeout=10)
    assert verify_dir(tmp_path).ok
