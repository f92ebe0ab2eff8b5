"""`./dev run --linked` (demo/linked.py), started as a person starts it, watched in a real
browser, stopped with Ctrl-C (issue 28 item 11).

The supervisor prints the console's URL and a throwaway login; Debian's chromium logs in and
opens the pool page; the tables' jackpot wagers reach it (the pool's current meter rises
without a reload, the live update); SIGINT then stops everything: no process whose command
line names the demo's directory is left (Mosquitto, the worker, the console, both tables), nor
any process the demo started or they started in turn.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests import mqtt_broker
from tests.test_headoffice_console_browser import CHROMIUM, DRIVER, chrome  # noqa: F401

REPO = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.skipif(CHROMIUM is None or DRIVER is None,
                       reason="Debian's chromium and chromium-driver are not installed"),
    pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto is not installed"),
]
CURRENT = '[data-live="pool:p1:current"]'


def processes_naming(text: str) -> list[tuple[int, str]]:
    """Every live process whose command line contains `text` (zombies excluded)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmd and state != "Z":
            found.append((int(d.name), cmd))
    return found


def descendants(root: int) -> set[int]:
    """Every live process started by `root`, its children's children too (by parent pid)."""
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, ppid in parent.items() if ppid in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting for its parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def dollars(text: str) -> int:
    """'$5,007.25' -> 500725 cents."""
    m = re.fullmatch(r"\$([\d,]+)\.(\d\d)", text.strip())
    assert m, f"not a dollar figure: {text!r}"
    return int(m[1].replace(",", "")) * 100 + int(m[2])


def test_the_linked_demo_reaches_the_console_and_stops_clean(tmp_path: Path,
                                                             chrome: Any) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    work = tmp_path / "linked"
    # The README's command itself (it execs the demo: the same process, Ctrl-C reaches it).
    proc = subprocess.Popen([str(REPO / "dev"), "run", "--linked", "--dir", str(work),
                             "--pace", "0.02"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        banner = []
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, f"the demo exited: {proc.stderr.read() if proc.stderr else ''}"
            banner.append(line)
            if line.lstrip().startswith("files"):
                break
        text = "".join(banner)
        m = re.search(r"console\s+(http://\S+)/\s+log in as (\w+), password (\S+)", text)
        assert m, text
        url, name, password = m[1], m[2], m[3]
        children = processes_naming(str(work))
        # Mosquitto, the worker, the console and two tables, each naming its file in `work`.
        assert len(children) >= 5, children
        tree = descendants(proc.pid)  # and whatever they started: every one must go
        assert {pid for pid, _ in children} - {proc.pid} <= tree, (children, tree)

        d = chrome
        wait = WebDriverWait(d, 60)
        d.get(f"{url}/pools")
        d.find_element(By.NAME, "name").send_keys(name)
        d.find_element(By.NAME, "password").send_keys(password)
        d.find_element(By.CSS_SELECTOR, "form.login button").click()
        wait.until(lambda d: "Log in" not in d.title)
        d.get(f"{url}/pools")
        first = dollars(d.find_element(By.CSS_SELECTOR, CURRENT).text)
        assert first >= 500_000  # the seed, $5,000.00, plus what came in before the page
        # The tables keep playing: an increment reaches the page in place (no reload).
        wait.until(lambda d: dollars(d.find_element(By.CSS_SELECTOR, CURRENT).text) > first)
        # Both tables are seen by head office.
        d.get(f"{url}/tables")
        for table in ("T1", "T2"):
            assert d.find_element(By.CSS_SELECTOR, f'[data-live="table:{table}:last_seq"]')

        # Ctrl-C at a terminal: SIGINT to the foreground process group (the demo's own here).
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=90)
        assert proc.returncode == 0, err
        assert "linked: stopped" in out
        assert processes_naming(str(work)) == []
        assert [pid for pid in tree if alive(pid)] == []
        for pid, _ in children:
            assert not alive(pid)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid, _ in processes_naming(str(work)):  # only if the test failed midway
            os.kill(pid, signal.SIGKILL)
