"""What every device looks like to the daemon.

A device turns commands (from `Effect("device", {"device", "command", "args"})`) into actions and
reports what happens as `DeviceEvent(kind, data)` through the `emit` callable it is given at
start. The daemon owns one asyncio loop; `emit` must only ever be called on that loop, so devices
hand their events over with `loop.call_soon` (already on the loop) or `loop.call_soon_threadsafe`
(a gpiozero or serial thread). `Device._post` does exactly that: it never blocks and never runs
the daemon's handler inside the caller's stack, so a handler cannot re-enter the device mid-command.

Real drivers and both simulators of a device implement the same interface (`devices/shaker/`,
`shuffler/`, `sensors/`, `meter/`, each in its `interface.py`); docs/devices.md lists commands,
events and fault behaviour.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from devices.errors import DeviceError


@dataclass(frozen=True, slots=True)
class DeviceEvent:
    """What a device reports: an event kind (one of its EVENTS) and its data. The daemon turns
    it into the round machines' event at its door (`devices` never imports `controller`)."""

    kind: str
    data: Mapping[str, Any] = field(default_factory=dict)


Emit = Callable[[DeviceEvent], None]


class State:
    """Device states shown by `tablectl status` / `devices list`."""

    STOPPED = "stopped"
    READY = "ready"
    BUSY = "busy"  # a command is in progress (shaking, shuffling)
    FAULT = "fault"  # the device reported a fault; the next good answer clears it
    OFFLINE = "offline"  # the port is open but the device gives no answer in time
    DISCONNECTED = "disconnected"  # the port is gone (unplugged) or cannot be opened


@dataclass(frozen=True)
class DeviceHealth:
    ok: bool
    state: str
    counters: dict[str, int] = field(default_factory=dict)
    last_error: str | None = None
    last_seen_mono: float | None = None  # time.monotonic() of the last answer or event

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "state": self.state,
            "counters": dict(self.counters),
            "last_error": self.last_error,
            "last_seen_mono": self.last_seen_mono,
        }


class Device(ABC):
    """Base of every device: lifecycle, event hand-over, command dispatch, health.

    Subclasses list their commands in COMMANDS and implement each as
    ``async def _cmd_<command>(self, args: Mapping[str, Any]) -> None``. EVENTS lists the event
    kinds the device emits (for docs and `tablectl devices list`).
    """

    COMMANDS: ClassVar[tuple[str, ...]] = ()
    EVENTS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = State.STOPPED
        self.counters: Counter[str] = Counter()
        self.last_error: str | None = None
        self.last_seen_mono: float | None = None
        # "disconnected: <path>: <why>" while the device's port is gone; None while it is open.
        self.port_down: str | None = None
        self._emit: Emit | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # True while stopped for a service test (`released`): the driver lets go of its port,
        # the hardware behind it stays as it is (a pty simulator stays up, build.py).
        self.in_service_test = False

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self, emit: Emit) -> None:
        """Open the device and start reporting events through `emit` (called on this loop)."""
        self._loop = asyncio.get_running_loop()
        self._emit = emit
        await self._open()
        if self.state == State.STOPPED:
            self.state = State.READY

    async def stop(self) -> None:
        """Close the device; events still queued are dropped and counted."""
        await self._close()
        self._emit = None
        self.state = State.STOPPED

    async def _open(self) -> None:
        """Driver hook: open ports, pins; raise DeviceError if the device is unusable."""
        return None

    async def _close(self) -> None:
        """Driver hook: release ports, pins, timers."""
        return None

    @property
    def started(self) -> bool:
        return self._emit is not None

    # --- service tests (docs/operations.md, the technician's device service menu) ----------------

    @contextlib.contextmanager
    def diverted(self, emit: Emit) -> Iterator[None]:
        """While in the block, the device's events go to `emit` instead of the daemon: a button
        pressed for a service test is seen by the test, never played by a round machine."""
        if self._emit is None:
            raise DeviceError(f"{self.name}: not started")
        daemon, self._emit = self._emit, emit
        try:
            yield
        finally:
            self._emit = daemon

    @contextlib.asynccontextmanager
    async def released(self) -> AsyncIterator[None]:
        """While in the block, the device is stopped (its port closed, free for a loopback plug);
        after it, it starts again, reporting to the daemon as before."""
        emit = self._emit
        if emit is None:
            raise DeviceError(f"{self.name}: not started")
        self.in_service_test = True
        try:
            await self.stop()
            try:
                yield
            finally:
                await self.start(emit)
        finally:
            self.in_service_test = False

    # --- commands -------------------------------------------------------------------------------

    async def command(self, command: str, args: Mapping[str, Any] | None = None) -> None:
        """Carry out one command; its outcome arrives later as events."""
        if command not in self.COMMANDS:
            supported = ", ".join(self.COMMANDS) or "none"
            raise DeviceError(f"{self.name}: unknown command {command!r} (supported: {supported})")
        if not self.started:
            raise DeviceError(f"{self.name}: not started (command {command!r})")
        self.counters["commands"] += 1
        await getattr(self, f"_cmd_{command}")(dict(args or {}))

    @abstractmethod
    async def selftest(self) -> dict[str, Any]:
        """Exercise the device without emitting game events; {"ok": bool, ...details}."""

    # --- health ---------------------------------------------------------------------------------

    def health(self) -> DeviceHealth:
        # A port that is gone outranks whatever the device said last: nothing reaches it.
        if self.port_down is not None:
            state, error = State.DISCONNECTED, self.port_down
        else:
            state, error = self.state, self.last_error
        ok = state in (State.READY, State.BUSY)
        return DeviceHealth(ok, state, dict(self.counters), error, self.last_seen_mono)

    def status(self) -> dict[str, Any]:
        """What `tablectl status` and `tablectl devices list` show of this device: one source,
        so the two never disagree."""
        cfg = getattr(self, "cfg", None)
        return {
            **self.health().as_json(),
            "driver": type(self).__name__,
            "port": getattr(cfg, "port", None),
            "simulated": hasattr(self, "simulator"),
            "commands": list(self.COMMANDS),
            "events": list(self.EVENTS),
        }

    def _seen(self) -> None:
        self.last_seen_mono = time.monotonic()

    def _fault(self, reason: str, *, state: str = State.FAULT, counter: str = "faults") -> None:
        self.state = state
        self.last_error = reason
        self.counters[counter] += 1

    # --- events ---------------------------------------------------------------------------------

    def _on_loop(self, fn: Callable[..., object], *args: Any) -> bool:
        """Run `fn(*args)` soon on the daemon's loop, from any thread; never blocks. False when
        the device is not started (nothing is scheduled)."""
        loop = self._loop
        if loop is None or self._emit is None or loop.is_closed():
            return False
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            loop.call_soon(fn, *args)
        else:
            loop.call_soon_threadsafe(fn, *args)
        return True

    def _post(self, kind: str, data: Mapping[str, Any] | None = None) -> None:
        """Hand an event to the loop. Safe from any thread; never blocks."""
        if not self._on_loop(self._deliver, DeviceEvent(kind, dict(data or {}))):
            self.counters["events_dropped"] += 1

    def _deliver(self, event: DeviceEvent) -> None:
        emit = self._emit
        if emit is None:  # stopped while the event was queued
            self.counters["events_dropped"] += 1
            return
        self.counters["events"] += 1
        self._seen()
        emit(event)


# --- argument helpers (errors name the device, command and argument) ----------------------------


def arg_int(
    device: str,
    command: str,
    args: Mapping[str, Any],
    name: str,
    *,
    lo: int | None = None,
    hi: int | None = None,
) -> int:
    if name not in args:
        raise DeviceError(f"{device}.{command}: missing argument {name!r}")
    value = args[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise DeviceError(f"{device}.{command}: {name} must be an integer, got {value!r}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise DeviceError(f"{device}.{command}: {name} {value} outside {lo}..{hi}")
    return value


def arg_str(
    device: str,
    command: str,
    args: Mapping[str, Any],
    name: str,
    choices: tuple[str, ...] | None = None,
) -> str:
    if name not in args:
        raise DeviceError(f"{device}.{command}: missing argument {name!r}")
    value = args[name]
    if not isinstance(value, str) or (choices is not None and value not in choices):
        expected = f"one of {', '.join(choices)}" if choices else "a string"
        raise DeviceError(f"{device}.{command}: {name} must be {expected}, got {value!r}")
    return value
