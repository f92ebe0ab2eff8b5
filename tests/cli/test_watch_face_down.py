"""`tablectl watch` on a UTH table shows no dealt card (issue 28, second pass, 3): status shows
no hole card on a terminal (controller/rounds/uth/status.py), so watch must not print each card
as it leaves the shuffler either. A real tablectld --simulate with its simulated players."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.events import HIDDEN, face_down
from tests.support.daemon import REPO, ask, start_daemon, wait_ready
from tests.support.devices import wait_until

# A playing card shown (`As`, `Td`): a wager's Player Card id (`card=SIM-0002`, issue 29) is no
# playing card and is not hidden.
CARD = re.compile(r"\bcard=[2-9TJQKA][cdhs]\b")


def test_a_dealt_cards_value_is_hidden_and_nothing_else_changes() -> None:
    item = {"seq": 9, "event": {"kind": "card.dispensed", "data": {"card": "2d", "index": 4}},
            "effects": []}
    shown = face_down(item)
    assert shown["event"]["data"] == {"card": HIDDEN, "index": 4}
    assert item["event"]["data"]["card"] == "2d"  # the journal's item is not changed
    manual = {"event": {"kind": "dealer.card", "data": {"card": "As"}}}
    assert face_down(manual)["event"]["data"]["card"] == HIDDEN
    other = {"event": {"kind": "dealer.wager", "data": {"box": 1, "amount": 1000}}}
    assert face_down(other) is other


@pytest.mark.slow
def test_watch_on_a_uth_table_prints_no_dealt_card(tmp_path: Path) -> None:
    proc = start_daemon(tmp_path, "--game", "uth", "--autoplay", "0", "--pace", "0.02",
                        "--quiet")  # fmt: skip
    watch = None
    try:
        wait_ready(tmp_path, proc)
        for args in ([], ["--json"]):
            watch = subprocess.Popen(
                [sys.executable, "-m", "controller.cli.main", "watch", *args, "--runtime-dir",
                 str(tmp_path / "run")], cwd=REPO, stdout=subprocess.PIPE, text=True)
            assert watch.stdout is not None
            dealt: list[str] = []
            deadline = time.monotonic() + 60
            while len(dealt) < 9 and time.monotonic() < deadline:
                line = watch.stdout.readline()
                if '"kind": "card.dispensed"' in line or " card.dispensed " in line:
                    dealt.append(line)
            watch.terminate()
            watch.communicate(timeout=10)
            assert len(dealt) == 9, dealt
            for line in dealt:
                assert not CARD.search(line), line
                assert not re.search(r'"card": "(?!hidden")', line), line
                assert ('"card": "hidden"' if args else "card=hidden") in line, line
    finally:
        if watch is not None and watch.poll() is None:
            watch.kill()
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.mark.slow
def test_journal_tail_and_round_show_hide_the_cards_of_a_round_in_play(tmp_path: Path) -> None:
    """A technician's `journal tail` or `round show` of the round being dealt would show the
    cards watch hides; once the round is closed its events are the audit record, every card."""
    proc = start_daemon(tmp_path, "--simulate=pty", "--game", "uth", "--no-players", "--quiet")

    def cli(*args: str) -> str:
        run = subprocess.run([sys.executable, "-m", "controller.cli.main", *args,
                              "--runtime-dir", str(tmp_path / "run")], cwd=REPO,
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, (args, run.stdout, run.stderr)
        return run.stdout

    try:
        wait_ready(tmp_path, proc)
        wait_until(lambda: ask(tmp_path, "status")["machine"]["deck_ready"], 30)
        # Each wager on its Player Card (UTH 13.1): the simulated patron service's demo cards.
        ask(tmp_path, "dealer", {"action": "wager", "data": {"box": 1, "ante": 1000,
                                                             "card": "SIM-0001"}})
        # The dealer's answer in dollars (it said `box 2: ante 2500 blind 2500 trips 0`).
        said = cli("dealer", "wager", "box=2", "ante=2500", "card=SIM-0002")
        assert "box 2: ante $25.00, blind $25.00, trips $0.00" in said, said
        assert not ask(tmp_path, "dealer", {"action": "deal"})["refused"]
        wait_until(lambda: ask(tmp_path, "status")["machine"]["cards_dealt"] >= 4, 30)
        number = ask(tmp_path, "status")["round"]
        tail = cli("journal", "tail", "-n", "50")
        shown = cli("round", "show", str(number))
        for text in (tail, shown):
            assert "card.dispensed card=hidden" in text and not CARD.search(text), text
        ask(tmp_path, "dealer", {"action": "void", "data": {"reason": "test"}})
        wait_until(lambda: ask(tmp_path, "round_show", {"number": number})["record"], 30)
        closed = cli("round", "show", str(number))
        assert CARD.search(closed) and "card=hidden" not in closed, closed
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
