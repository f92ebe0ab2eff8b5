"""Helpers the device tests share: a serial config for a pty, waiting on a condition on the
loop, and running a test's coroutine with a hard limit (a hang fails, it never blocks the run)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from devices.proto.serial_config import SerialConfig

ANSWER_TIMEOUT_MS = 300  # short, so a silent simulator is reported quickly
RUN_LIMIT_S = 40.0


def serial_cfg(path: str | Path, baud: int = 115200) -> SerialConfig:
    return SerialConfig(port=str(path), baud=baud, answer_timeout_ms=ANSWER_TIMEOUT_MS)


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
