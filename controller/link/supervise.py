"""Supervision of the link's and head office's long-lived tasks.

A task that dies of something nobody expected (a bug, a message no check foresaw) must not
leave the service half-alive and silent: `supervised` logs the failure with its traceback,
counts it, and runs the task again after a backoff. Cancellation (the service stopping) passes
through untouched.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any

from shared.link.transport import Backoff


async def supervised(
    name: str,
    factory: Callable[[], Coroutine[Any, Any, None]],
    log: logging.Logger,
    counters: Counter[str],
    *,
    backoff: Backoff | None = None,
) -> None:
    """Run `factory()` forever: each time it raises (or returns), log, count
    `task_failures` and `<name>_restarts`, wait a jittered backoff and start it again."""
    backoff = backoff or Backoff(0.2, 10.0)
    while True:
        try:
            await factory()
            log.error("task %s ended by itself; started again", name)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("task %s failed; started again", name)
        counters["task_failures"] += 1
        counters[f"{name}_restarts"] += 1
        await asyncio.sleep(backoff.next_delay())
