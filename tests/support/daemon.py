"""Run tablectld as a real process for the daemon tests."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from controller.control import SOCKET_NAME, NotRunning, request

REPO = Path(__file__).resolve().parents[2]


def start_daemon(
    state_dir: Path, *args: str, env: dict[str, str] | None = None, capture: bool = True
) -> subprocess.Popen[str]:
    cmd = [
        sys.executable,
        "-m",
        "controller.daemon",
        "--simulate",
        "--state-dir",
        str(state_dir),
        "--runtime-dir",
        str(state_dir / "run"),
        *args,
    ]
    return subprocess.Popen(
        cmd,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
        stderr=subprocess.PIPE if capture else subprocess.DEVNULL,
        text=True,
    )


def wait_for_socket(state_dir: Path, proc: subprocess.Popen[str], timeout: float = 20) -> Any:
    """Wait until the daemon answers `status`; return that answer."""
    path = state_dir / "run" / SOCKET_NAME
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr is not None else ""
            raise AssertionError(f"daemon exited early with {proc.returncode}: {err[-2000:]}")
        try:
            return request(path, "status", timeout=2)
        except (NotRunning, OSError):
            time.sleep(0.05)
    raise AssertionError("daemon did not answer on its control socket")


def wait_ready(state_dir: Path, proc: subprocess.Popen[str], timeout: float = 60) -> Any:
    """Wait until the daemon has started (status `ready`: READY=1 sent, devices and extensions
    up); before that it answers status but refuses device and service commands."""
    deadline = time.monotonic() + timeout
    status = wait_for_socket(state_dir, proc, timeout)
    while not status.get("ready"):
        if time.monotonic() > deadline:
            raise AssertionError(f"daemon answered but did not become ready: {status['state']}")
        time.sleep(0.05)
        status = wait_for_socket(state_dir, proc, timeout)
    return status


def ask(state_dir: Path, cmd: str, args: dict[str, Any] | None = None) -> Any:
    return request(state_dir / "run" / SOCKET_NAME, cmd, args)


def crash_loop(state_dir: Path, args: list[str], kills: int, seed: int) -> None:
    """SIGKILL the simulated daemon `kills` times at random moments, then let it play two
    rounds to the end (the crash tests and bench/bench_crash.py)."""
    rng = random.Random(seed)
    for _ in range(kills):
        proc = start_daemon(state_dir, *args, "--autoplay", "0", "--quiet", capture=False)
        time.sleep(rng.uniform(0.25, 1.2))  # import takes ~0.3 s: some kills land during start-up
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    final = start_daemon(state_dir, *args, "--autoplay", "2")
    _out, err = final.communicate(timeout=60)
    assert final.returncode == 0, err
