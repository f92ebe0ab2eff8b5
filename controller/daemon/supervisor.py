"""Supervision of the daemon's long-lived tasks and of its extensions.

A task that dies (raises, or returns while the table runs) is logged CRITICAL with its traceback
and started again after a backoff; too many deaths in a window take the table out of service
(once per task) and the restarts go on at the longest backoff. An extension whose task dies is
stopped and started again. Stopping a part that fails is logged and counted, never swallowed.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any

from controller.daemon.stats import Stats
from controller.extensions.base import Extension, Table
from controller.logs import FIELDS_ATTR
from controller.logs import event as log_event
from shared.stopping import cancel_and_wait, names

# A long-lived task that dies is restarted after RESTART_MIN_S, doubling up to RESTART_MAX_S;
# more than RESTART_LIMIT deaths within RESTART_WINDOW_S take the table out of service.
RESTART_MIN_S = 0.5
RESTART_MAX_S = 30.0
RESTART_LIMIT = 5
RESTART_WINDOW_S = 300.0
# Each part of the daemon (its own tasks, an extension, a device, the control socket) gets this
# long to stop; one that takes longer is abandoned (issue 27: a stop must end well before
# systemd's TimeoutStopSec=30s, and one hung part must not keep the others from stopping).
PART_STOP_LIMIT_S = 3.0

# Set while an extension starts: the tasks it creates then are its long-lived ones (supervised).
_STARTING: contextvars.ContextVar[str | None] = contextvars.ContextVar("starting", default=None)


class Supervisor:
    def __init__(
        self,
        log: logging.Logger,
        stats: Stats,
        *,
        stopping: Callable[[], bool],
        stop_requested: Callable[[], bool],
        give_up: Callable[[str], None],
    ) -> None:
        self.log = log
        self.stats = stats
        self._stopping = stopping  # the table is stopping its parts: deaths are expected
        self._stop_requested = stop_requested  # a stop was asked for (SIGTERM, autoplay done)
        self._give_up = give_up  # takes the table out of service, with the reason
        self._failures: dict[str, deque[float]] = {}  # task name -> recent deaths (monotonic)
        self._ext_tasks: dict[str, list[asyncio.Task[Any]]] = {}
        self._restarting: set[str] = set()
        self._gave_up: set[str] = set()  # tasks that took the table out of service
        self.helpers: set[asyncio.Task[Any]] = set()  # restarts in flight: cancelled at stop
        self.abandoned: list[asyncio.Task[Any]] = []  # parts that did not stop in their limit

    # -- the daemon's own tasks ---------------------------------------------------------------

    def spawn(
        self, name: str, factory: Callable[[], Coroutine[Any, Any, None]]
    ) -> asyncio.Task[None]:
        """Run `factory()` as a supervised long-lived task: if it raises (or returns while the
        table is not stopping) it is logged CRITICAL with its traceback and started again after
        a backoff; too many deaths in a row take the table out of service (and the restarts go
        on, at the longest backoff). Cancel the returned task to stop it."""
        return asyncio.create_task(self._supervised(name, factory), name=name)

    async def _supervised(
        self, name: str, factory: Callable[[], Coroutine[Any, Any, None]]
    ) -> None:
        delay = RESTART_MIN_S
        while True:
            began = time.monotonic()
            try:
                await factory()
                if self._stopping() or self._stop_requested():  # it ended: we are stopping
                    return
                raise RuntimeError(f"task {name} returned while the table runs")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.task_died(name, exc)
            if time.monotonic() - began > RESTART_WINDOW_S:
                delay = RESTART_MIN_S  # it had been healthy for a while: a fresh start
            await asyncio.sleep(delay)
            delay = min(delay * 2, RESTART_MAX_S)
            log_event(self.log, logging.WARNING, f"task {name} restarted", task=name)

    def task_died(self, name: str, exc: BaseException) -> bool:
        """Log and count a death; True when the task has now died too often (the table is
        then out of service, once, for that task)."""
        self.stats.task_failures[name] += 1
        self.log.critical(
            f"task {name} died: {type(exc).__name__}: {exc}",
            exc_info=exc,  # the traceback (journald: EXCEPTION_TEXT)
            extra={FIELDS_ATTR: {"task": name, "code": "E502"}},
        )
        now = time.monotonic()
        recent = self._failures.setdefault(name, deque(maxlen=RESTART_LIMIT + 1))
        recent.append(now)
        while recent and now - recent[0] > RESTART_WINDOW_S:
            recent.popleft()
        if len(recent) > RESTART_LIMIT:
            if name in self._gave_up:
                return True
            self._gave_up.add(name)
            self._give_up(
                f"task {name} died {len(recent)} times in {RESTART_WINDOW_S:.0f} s"
                f" (last: {type(exc).__name__}: {exc})"
            )
            return True
        return False

    def helper(self, coro: Coroutine[Any, Any, None]) -> None:
        """A short task of the daemon's own (a restart, a meter update), cancelled at stop."""
        task = asyncio.create_task(coro)
        self.helpers.add(task)
        task.add_done_callback(self.helpers.discard)

    async def stop_part(
        self, what: str, stop: Callable[[], Awaitable[None]], limit_s: float | None = None
    ) -> bool:
        """Stop one part within `limit_s`; a failure is logged with its traceback and counted,
        one that has not stopped by then is named in the log (E507), cancelled and abandoned
        (never awaited again), and the other parts are still stopped (the journal is closed
        last in any case). False when the part did not stop cleanly. `limit_s`: by default
        PART_STOP_LIMIT_S."""
        limit_s = PART_STOP_LIMIT_S if limit_s is None else limit_s
        task = asyncio.create_task(_call(stop), name=f"stop {what}")
        done, _ = await asyncio.wait([task], timeout=limit_s)
        if not done:
            task.cancel()
            self.abandoned.append(task)
            self.stats.stop_abandoned += 1
            log_event(self.log, logging.ERROR,
                      f"{what} did not stop within {limit_s:g} s: abandoned",
                      part=what, limit_s=limit_s, code="E507")
            return False
        exc = None if task.cancelled() else task.exception()
        if exc is None:
            return True
        self.stats.stop_errors += 1
        self.log.error(f"{what} failed to stop: {type(exc).__name__}: {exc}", exc_info=exc,
                       extra={FIELDS_ATTR: {"code": "E503"}})
        return False

    async def stop_tasks(
        self, what: str, tasks: Iterable[asyncio.Task[Any]], limit_s: float | None = None
    ) -> None:
        """Cancel the daemon's own tasks until they have ended (shared/stopping.py: a single
        cancel can be swallowed on Python 3.11); those still running after `limit_s` are named
        in the log (E507) and abandoned."""
        limit_s = PART_STOP_LIMIT_S if limit_s is None else limit_s
        left = await cancel_and_wait(tasks, limit_s=limit_s)
        if left:
            self.abandoned.extend(left)
            self.stats.stop_abandoned += len(left)
            log_event(self.log, logging.ERROR,
                      f"{what} ({names(left)}) did not stop within {limit_s:g} s: abandoned",
                      part=what, tasks=names(left), limit_s=limit_s, code="E507")

    # -- extensions ---------------------------------------------------------------------------

    async def start_extension(self, ext: Extension, table: Table) -> None:
        """Start an extension and supervise the tasks it starts: one dying (an exception) is
        logged CRITICAL with its traceback and the extension is stopped and started again
        after a backoff (too many deaths: out of service, see task_died)."""
        loop = asyncio.get_running_loop()
        created: list[asyncio.Task[Any]] = []
        previous = loop.get_task_factory()

        def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Future[Any]:
            task = previous(loop, coro, **kw) if previous else asyncio.Task(coro, loop=loop, **kw)
            if _STARTING.get() == ext.name and isinstance(task, asyncio.Task):
                created.append(task)
            return task

        token = _STARTING.set(ext.name)
        loop.set_task_factory(factory)  # type: ignore[arg-type]
        try:
            await ext.start(table)
        finally:
            loop.set_task_factory(previous)
            _STARTING.reset(token)
        self._ext_tasks[ext.name] = created  # one that died already reports at once
        for task in self._ext_tasks[ext.name]:
            task.add_done_callback(
                lambda t, ext=ext: self._ext_task_done(ext, table, t)  # type: ignore[misc]
            )

    def _ext_task_done(self, ext: Extension, table: Table, task: asyncio.Task[Any]) -> None:
        if task.cancelled():
            return
        exc = task.exception()  # retrieved here, whatever happens next
        if self._stopping() or ext.name in self._restarting:
            return
        if exc is None:
            log_event(self.log, logging.INFO, f"extension {ext.name}: task {task.get_name()} ended")
            return
        if self.task_died(f"{ext.name}/{task.get_name()}", exc):
            return  # too many deaths: left stopped, the table is out of service
        self._restarting.add(ext.name)
        self.helper(self._restart_extension(ext, table))

    async def _restart_extension(self, ext: Extension, table: Table) -> None:
        """Stop the extension and start it again, after a backoff that grows with its deaths."""
        while not self._stopping():
            deaths = sum(len(v) for k, v in self._failures.items() if k.startswith(f"{ext.name}/"))
            await asyncio.sleep(min(RESTART_MIN_S * 2 ** max(deaths - 1, 0), RESTART_MAX_S))
            await self.stop_part(f"extension {ext.name}", ext.stop)
            if self._stopping():
                return
            try:
                await self.start_extension(ext, table)
            except Exception as exc:
                if self.task_died(f"{ext.name}/start", exc):
                    self._restarting.discard(ext.name)
                    return
                continue
            log_event(self.log, logging.WARNING, f"extension {ext.name} restarted", ext=ext.name)
            self._restarting.discard(ext.name)
            return


async def _call(stop: Callable[[], Awaitable[None]]) -> None:
    await stop()
