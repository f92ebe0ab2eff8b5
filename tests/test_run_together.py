"""`run_together` (shared/link/transport.py) on asyncio.TaskGroup, and the head-office
worker's ledger calls under its cancellation (headoffice/worker.py `_db`).

No broker needed: the loops are plain coroutines. Each test bounds its wait with a timeout, so
a hang fails the test instead of stalling the suite."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

import pytest

from headoffice.worker import Worker
from shared.link.transport import LinkError, cancel_and_wait, run_together


def _stubborn(cancels: list[int], swallow: int):
    """A loop that swallows its first `swallow` cancellations, as 3.11's wait_for can."""

    async def loop() -> None:
        while True:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancels.append(1)
                if len(cancels) > swallow:
                    raise

    return loop()


def test_cancel_and_wait_ends_a_task_that_swallows_a_cancellation() -> None:
    # As a Python 3.11 asyncio.wait_for can (gh-86296): the link's stop must not wait forever
    # on such a task (the soak's SIGTERM hangs, docs/security.md finding 1).
    async def main() -> None:
        cancels: list[int] = []
        task = asyncio.create_task(_stubborn(cancels, swallow=2))
        await asyncio.sleep(0)
        await asyncio.wait_for(cancel_and_wait([task], every_s=0.01), 5)
        assert task.cancelled() and len(cancels) == 3

    asyncio.run(main())


def test_the_first_failure_is_raised_itself_and_the_others_end() -> None:
    # Worker.run and the link extension tell a dropped connection (`except LinkError`:
    # reconnect, a warning) from a bug (`except Exception`: a traceback, counted) by the type:
    # a group wrapping the LinkError would turn every dropped connection into a "bug".
    async def main() -> list[int]:
        cancels: list[int] = []

        async def drops() -> None:
            await asyncio.sleep(0.01)
            raise LinkError("connection lost")

        with pytest.raises(LinkError, match="connection lost"):
            async with asyncio.timeout(10):
                await run_together(drops(), _stubborn(cancels, swallow=2))
        return cancels

    assert asyncio.run(main()) == [1, 1, 1]  # cancelled until it ended


def test_cancelled_from_outside_it_ends_every_loop_before_it_returns() -> None:
    # The daemon's stop (or head office's SIGTERM) cancels the session: a loop that swallows
    # a cancel must not leave the TaskGroup waiting forever, nor run on after its connection.
    async def main() -> tuple[bool, list[int]]:
        cancels: list[int] = []
        loop_task = asyncio.create_task(run_together(_stubborn(cancels, swallow=3)))
        await asyncio.sleep(0.01)
        loop_task.cancel()
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(10):
                await loop_task
        return loop_task.cancelled(), cancels

    cancelled, cancels = asyncio.run(main())
    assert cancelled and cancels == [1, 1, 1, 1]


def test_a_cancel_during_cleanup_still_waits_for_every_task() -> None:
    async def main() -> tuple[bool, bool]:
        cancels: list[int] = []
        stubborn = asyncio.create_task(_stubborn(cancels, swallow=5))
        await asyncio.sleep(0)
        cleanup = asyncio.create_task(cancel_and_wait([stubborn], every_s=0.01))
        await asyncio.sleep(0.015)
        cleanup.cancel()  # the caller is cancelled while the task still goes on
        try:
            with pytest.raises(asyncio.CancelledError):
                async with asyncio.timeout(10):
                    await cleanup
            return stubborn.done(), cleanup.cancelled()
        finally:
            while not stubborn.done():  # were it left running, asyncio.run would never end
                stubborn.cancel()
                await asyncio.sleep(0)

    assert asyncio.run(main()) == (True, True)


def test_a_ledger_call_cancelled_again_and_again_still_waits_for_its_thread() -> None:
    # The hazard behind the head-office hang: `cancel_and_wait` cancels every 0.5 s, and a
    # second cancel used to interrupt `_db`'s wait for the thread, releasing the ledger lock
    # while the thread was still inside its transaction; the next session's first ledger call
    # then ran a second thread on the same connection.
    finished = threading.Event()

    def slow_transaction() -> str:
        time.sleep(0.3)
        finished.set()
        return "committed"

    async def main() -> tuple[bool, bool]:
        worker = SimpleNamespace(_db_lock=asyncio.Lock())
        task = asyncio.create_task(Worker._db(worker, slow_transaction))  # type: ignore[arg-type]
        await asyncio.sleep(0.02)
        async with asyncio.timeout(10):
            await cancel_and_wait([task], every_s=0.01)  # ~30 cancels during the thread
        return finished.is_set(), worker._db_lock.locked()

    thread_done, still_locked = asyncio.run(main())
    assert thread_done and not still_locked
