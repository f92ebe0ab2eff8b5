"""Ending asyncio tasks for good, within a limit: every stop in the daemon, its drivers, the link.

On Python 3.11 (the table image's) `asyncio.wait_for` can swallow a cancellation that arrives in
the same loop pass as the result it waits for (CPython gh-86296, fixed in 3.12). A task that loops
around such a wait (the meter's read-back poll, aiomqtt's PUBACK wait in the link) then goes on
after one cancel, and a stop that cancelled once and waited hung until systemd killed the daemon
(docs/security.md, finding 1; issue 27). So a stop cancels again every `every_s` until each task
has ended, and gives up after `limit_s`, handing back what still runs (the caller names it in the
log and abandons it) rather than waiting for good.

Here, in shared/ (which imports nothing of the programs), so that the drivers, the daemon, the
MQTT transport and head office's worker share one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

CANCEL_EVERY_S = 0.1
# A driver's own tasks (a poll, a writer, a port watch) end in milliseconds once cancelled; one
# still running after this is abandoned and named, so the daemon's limit for the whole device
# (controller/daemon/supervisor.py, 3 s) is not all spent on one task.
TASK_STOP_LIMIT_S = 1.0


async def cancel_and_wait(
    tasks: Iterable[asyncio.Task[Any]],
    every_s: float = CANCEL_EVERY_S,
    limit_s: float | None = None,
) -> list[asyncio.Task[Any]]:
    """Cancel `tasks` and wait until each has ended, cancelling again every `every_s` while one
    goes on; after `limit_s` (None: no limit) stop waiting. Returns the tasks still running then
    (abandoned: cancelled, never awaited again), [] when every one ended.

    Our own cancellation meanwhile does not cut this short (a task left running would outlive
    what it serves); it is raised once the tasks have ended or the limit passed. The exceptions
    of the ended tasks are retrieved (an error while stopping is no "never retrieved" noise):
    callers that want them read `task.exception()` themselves."""
    tasks = list(tasks)
    pending = {t for t in tasks if not t.done()}
    cancelled: asyncio.CancelledError | None = None
    loop = asyncio.get_running_loop()
    deadline = None if limit_s is None else loop.time() + limit_s
    while pending:
        left = None if deadline is None else deadline - loop.time()
        if left is not None and left <= 0:
            break
        for task in pending:
            task.cancel()
        try:
            _done, pending = await asyncio.wait(
                pending, timeout=every_s if left is None else min(every_s, left)
            )
        except asyncio.CancelledError as exc:
            cancelled = exc
            pending = {t for t in pending if not t.done()}
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()
    if cancelled is not None:
        raise cancelled
    return [t for t in tasks if t in pending]


def names(tasks: Iterable[asyncio.Task[Any]]) -> str:
    """The tasks' names for a log line: `meter-poll, meter-writer`."""
    return ", ".join(sorted(t.get_name() for t in tasks))


async def end_tasks(
    tasks: Iterable[asyncio.Task[Any]], log: logging.Logger, what: str,
    limit_s: float = TASK_STOP_LIMIT_S,
) -> list[asyncio.Task[Any]]:
    """`cancel_and_wait` with `limit_s`; tasks still running then are logged as abandoned
    (naming `what` and the tasks) and returned."""
    left = await cancel_and_wait(tasks, limit_s=limit_s)
    if left:
        log.error("%s: %s did not stop within %g s: abandoned", what, names(left), limit_s)
    return left
