"""One configured serial port kept open: noticed when it goes, reopened when it comes back.

A USB serial adapter that is unplugged (or a shaker that is power-cycled with its adapter) takes
its tty with it: the kernel hangs the open file up, so a read raises EIO or reports readiness and
returns b'' (pyserial turns both into SerialException, pyserial-asyncio-fast closes the transport
and `connection_lost` runs), and udev removes the node and its `/dev/tablectl-*` symlink. A
`SerialLine` notices any of these within WATCH_S:

* the transport is lost (read/write error, hangup),
* the configured path no longer exists, or now names another device node (a replug behind the
  same symlink faster than the hangup was seen),
* the port cannot be opened at start.

It then calls `on_down(reason)` once, logs one warning (device, path, error) and keeps trying:
it waits for the path to exist (looked at every NODE_POLL_S) and opens it, waiting
BACKOFF_MIN_S doubling to BACKOFF_MAX_S after each failed open (a node that udev has not yet
given its group and mode). When the open succeeds it logs one info line, counts `reconnects`
and calls `on_up()`; the driver re-runs its handshake there. Retries are counted
(`reopen_failed`), never logged one by one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import select
from collections.abc import Callable

from devices.base import Device, DeviceError
from devices.proto import serial_port
from shared.stopping import end_tasks

WATCH_S = 0.5  # how often an open port's path is looked at
NODE_POLL_S = 0.25  # how often a missing path is looked for (a stat: cheap)
BACKOFF_MIN_S = 0.5
BACKOFF_MAX_S = 5.0
log = logging.getLogger("tablectl.devices")


def short_reason(reason: str) -> str:
    """pyserial's words for a vanished port, shortened for a status line."""
    if "returned no data" in reason:
        return "hung up (readable, no data)"
    for errno_, name in (("[Errno 5]", "I/O error (EIO)"), ("[Errno 6]", "no device (ENXIO)")):
        if errno_ in reason:
            return name
    return reason


def hung_up(transport: asyncio.Transport) -> bool:
    """The tty reports a hangup (its USB device or the pty's other end is gone). Looked at
    before a write, so a write into a vanished port never reaches pyserial-asyncio-fast's
    'Fatal write error' path (a traceback in the log for what is an unplug)."""
    fd = getattr(getattr(transport, "serial", None), "fd", None)
    if not isinstance(fd, int) or fd < 0:
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)  # POLLHUP / POLLERR are always reported
    return any(ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, ev in poller.poll(0))


def _node(path: str) -> int | None:
    """The device number the path leads to, None when it leads nowhere."""
    try:
        return os.stat(path).st_rdev
    except OSError:
        return None


class SerialLine:
    def __init__(
        self,
        device: Device,
        port: str,
        baud: int,
        on_data: Callable[[bytes], None],
        on_up: Callable[[], None],
        on_down: Callable[[str], None],
        *,
        seven_e1: bool = False,
        backoff_min_s: float = BACKOFF_MIN_S,
        backoff_max_s: float = BACKOFF_MAX_S,
    ) -> None:
        self.device = device
        self.port = port
        self.baud = baud
        self.on_data = on_data
        self.on_up = on_up
        self.on_down = on_down
        self.seven_e1 = seven_e1
        self.backoff_min_s = backoff_min_s
        self.backoff_max_s = backoff_max_s
        self.down_reason: str | None = None  # why the port is not open; None while it is
        self._transport: asyncio.Transport | None = None
        self._rdev: int | None = None
        self._task: asyncio.Task[None] | None = None  # the watch, or the reconnect loop
        self._up = asyncio.Event()
        self._generation = 0  # one per open, so a late `connection_lost` of an old port is ignored
        self._closed = False  # stopped: nothing is reopened any more

    @property
    def fault_reason(self) -> str:
        """The `reason` of the device's fault event and its last error while the port is gone."""
        return f"disconnected: {self.port}: {self.down_reason}"

    @property
    def connected(self) -> bool:
        return self._transport is not None

    async def open(self) -> None:
        """Open the port; a port that cannot be opened is reported down, never raised."""
        self._closed = False
        try:
            await self._connect()
        except DeviceError as exc:
            self._down("not present" if _node(self.port) is None else self._why(exc))
            return
        self._task = asyncio.create_task(self._watch(), name=f"{self.device.name}-port-watch")

    async def close(self) -> None:
        self._closed = True
        task, self._task = self._task, None
        if task is not None:  # cancelled until it ends (shared/stopping.py)
            await end_tasks([task], log, self.device.name)
        transport, self._transport = self._transport, None
        self._up.clear()
        self.down_reason = self.device.port_down = None  # stopped says it all now
        if transport is not None:
            transport.close()

    async def wait_up(self) -> None:
        await self._up.wait()

    def write(self, data: bytes) -> None:
        """Write or raise OSError (a closed transport: the port is down)."""
        if self._transport is not None and hung_up(self._transport):
            # Reported on the next turn of the loop, not inside the caller's send.
            loop = asyncio.get_running_loop()
            loop.call_soon(self._hung_up, self._generation)
            raise OSError("port hung up")
        serial_port.write(self._transport, data)

    # --- internals ------------------------------------------------------------------------------

    async def _connect(self) -> None:
        self._generation += 1
        generation = self._generation

        def lost(reason: str) -> None:
            if generation == self._generation:  # not a port closed and since reopened
                self._lost(reason)

        transport = await serial_port.open_serial(
            self.device.name, self.port, self.baud, self.on_data, lost, seven_e1=self.seven_e1
        )
        self._transport = transport
        self._rdev = _node(self.port)
        self.down_reason = None
        self.device.port_down = None
        self._up.set()

    def _lost(self, reason: str) -> None:
        """pyserial-asyncio-fast closed the transport (EIO, b'' with readiness, hangup)."""
        if self._transport is None:
            return  # our own close
        self._transport = None  # already closed by the transport itself
        self._down(short_reason(reason), detail=reason)

    def _hung_up(self, generation: int) -> None:
        if generation == self._generation:  # still the port that hung up, not a reopened one
            self._down("hung up (POLLHUP)")

    def _down(self, reason: str, *, detail: str | None = None) -> None:
        if self.down_reason is not None or self._closed:
            return
        self.down_reason = reason
        self.device.port_down = self.fault_reason  # what health shows until it is back
        self._up.clear()
        transport, self._transport = self._transport, None
        if transport is not None:
            transport.close()
        self.device.counters["disconnects"] += 1
        log.warning(
            "%s: disconnected from %s: %s (reopening until it is back)",
            self.device.name, self.port, detail or reason,
        )  # fmt: skip
        current = asyncio.current_task()
        if self._task is not None and self._task is not current:
            self._task.cancel()
        self._task = asyncio.create_task(self._reconnect(), name=f"{self.device.name}-reconnect")
        self.on_down(reason)

    def _why(self, exc: Exception) -> str:
        return str(exc).removeprefix(f"{self.device.name}: cannot open {self.port}: ")

    async def _watch(self) -> None:
        while self._transport is not None:
            await asyncio.sleep(WATCH_S)
            if self._transport is None:
                return
            node = _node(self.port)
            if node is None:
                self._down("gone (no such path)")
                return
            if node != self._rdev:
                self._down("replaced (the path leads to another device)")
                return

    async def _reconnect(self) -> None:
        delay = self.backoff_min_s
        while True:
            while _node(self.port) is None:
                await asyncio.sleep(NODE_POLL_S)
            try:
                await self._connect()
            except Exception as exc:  # whatever the open raised, this loop must go on trying
                self.device.counters["reopen_failed"] += 1
                self.device.port_down = f"{self.fault_reason} (reopen: {self._why(exc)})"
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.backoff_max_s)
                continue
            break
        self.device.counters["reconnects"] += 1
        log.info("%s: reconnected on %s", self.device.name, self.port)
        self._task = asyncio.create_task(self._watch(), name=f"{self.device.name}-port-watch")
        self.on_up()
