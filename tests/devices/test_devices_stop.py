"""A device's stop always ends: the real meter driver against its pty simulator, stopped at
random moments while it polls fast (issue 27, item 4).

On Python 3.11 `asyncio.wait_for` (the meter's read-back waits in it) can swallow a cancellation
that arrives in the same loop pass as the reply (CPython gh-86296): a stop that cancelled the
poll task once and then waited for it hung for good (5 of 200 stops, measured). A stop that did
not end within STOP_LIMIT_S counts as hung; the test then ends the stuck tasks itself (cancelling
until they are done) so that a failure never blocks the run.
"""

from __future__ import annotations

import asyncio
import random

from devices.meter.driver import AlphaMeter
from devices.meter.wire import PtyMeterSim
from tests.support.devices import serial_cfg as cfg

STOPS = 300
STOP_LIMIT_S = 2.0  # a stop takes milliseconds; two seconds is a hang


async def _end(tasks: list[asyncio.Task[None]]) -> None:
    """The test's own cleanup of a hung stop's tasks: cancel until each has ended."""
    while pending := [t for t in tasks if not t.done()]:
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=0.01)


def test_the_meter_stops_at_any_moment_of_a_fast_poll() -> None:
    async def go() -> list[int]:
        rng = random.Random(27)
        sim = PtyMeterSim()
        await sim.start()
        hung: list[int] = []
        try:
            for i in range(STOPS):
                dev = AlphaMeter(cfg(sim.path, 9600), min_interval_s=0.002, poll_s=0.002)
                await dev.start(lambda e: None)
                await asyncio.sleep(rng.uniform(0, 0.03))  # a few polls, stopped anywhere
                inner = list(dev._tasks)
                stop = asyncio.create_task(dev.stop())
                done, _ = await asyncio.wait([stop], timeout=STOP_LIMIT_S)
                if not done:
                    hung.append(i)
                    await _end([stop, *inner])
                    await dev.line.close()
                else:
                    stop.result()  # a stop that raised fails the test with its error
                    assert all(t.done() for t in inner), "the stop left a driver task running"
        finally:
            await sim.close()
        return hung

    hung = asyncio.run(go())
    assert hung == [], f"{len(hung)} of {STOPS} meter stops hung (stops {hung[:10]})"
