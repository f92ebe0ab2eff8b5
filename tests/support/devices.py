"""Helpers the device tests share: a serial config for a pty, waiting on a condition (on the
loop, or from a test's thread), running a test's coroutine with a hard limit (a hang fails, it
never blocks the run), and asking a daemon whose extensions may still be starting."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from devices.proto.serial_config import SerialConfig

ANSWER_TIMEOUT_MS = 300  # short, so a silent simulator is reported quickly
RUN_LIMIT_S = 40.0


def serial_cfg(
    path: str | Path, baud: int = 115200, answer_timeout_ms: int = ANSWER_TIMEOUT_MS
) -> SerialConfig:
    return SerialConfig(port=str(path), baud=baud, answer_timeout_ms=answer_timeout_ms)


async def until(pred: Callable[[], bool], timeout: float = 3.0) -> None:
    """Return once `pred()` holds; AssertionError if it does not within `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not pred():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)


def run(fn: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(fn(), RUN_LIMIT_S))  # type: ignore[arg-type]


def wait_until(pred: Callable[[], Any], timeout: float = 15.0) -> None:
    """`until` for a test's own thread (a daemon in another process)."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


def ask_started(ask: Callable[..., Any], state_dir: Path, cmd: str) -> Any:
    """`ask(state_dir, cmd)` once the daemon's extensions have started (the control socket
    answers "still starting" before)."""
    for _ in range(200):
        try:
            return ask(state_dir, cmd)
        except RuntimeError as exc:
            assert "still starting" in str(exc)
            time.sleep(0.05)
    raise AssertionError(f"{cmd}: the daemon's extensions never started")
