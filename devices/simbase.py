"""What every simulator shares: the CSPRNG it uses unless told otherwise, and delayed answers
on the daemon's loop that are cancelled when the simulator stops. Nothing here blocks."""

from __future__ import annotations

import asyncio
import random
import secrets
from collections.abc import Callable
from typing import Any


def default_rng() -> random.Random:
    """The CSPRNG every simulator uses unless a seeded `random.Random` is injected."""
    return secrets.SystemRandom()


class Timers:
    """Delayed calls on the running loop; `cancel()` drops the ones not yet run."""

    def __init__(self) -> None:
        self._handles: set[asyncio.Handle] = set()

    def later(self, delay: float, fn: Callable[..., object], *args: Any) -> None:
        loop = asyncio.get_running_loop()
        handle: asyncio.Handle

        def run() -> None:
            self._handles.discard(handle)
            fn(*args)

        handle = loop.call_later(delay, run) if delay > 0 else loop.call_soon(run)
        self._handles.add(handle)

    def cancel(self) -> None:
        for handle in self._handles:
            handle.cancel()
        self._handles.clear()
