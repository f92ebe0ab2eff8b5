"""The daemon's technician side of the devices (`tablectl devices ...`), an Extension.

Control-socket commands:
    device_list  {}                        every device: health, counters (bad frames, retries,
                                           timeouts, ...), last error, commands and events: the
                                           same `Device.status()` that `status` shows
    device_test  {device}                  exercise one device without game events: shake once
                                           (shaker), deck check (shuffler), flash and read back
                                           (meter), live input states (sensors)
    device_watch {since?}                  device events since a cursor, each device's health
                                           and the live inputs; the CLI polls it
    device_fault {device, fault, value?}   simulation only: inject a fault into a pty simulator
    device_input {input, active}           mock pins only: press/release an input by name

Device events come from `table.subscribe()` (processed events with their effects), so the watch
shows what the round machine did with each of them.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from typing import Any

from controller.control import Refused
from controller.events import DEALER_PREFIX, DEVICE_KINDS, face_down
from controller.extensions.base import Table, started
from devices.base import DeviceError
from devices.build import simulators
from devices.sensors import Sensors
from devices.sensors.gpio import GpioSensors
from shared.stopping import cancel_and_wait

WATCH_KEEP = 500

# fault name -> (simulators that have it, how to apply it)
_FAULTS: dict[str, tuple[tuple[str, ...], Any]] = {
    "no_answer": (("shaker", "shuffler", "meter"), lambda s, v: setattr(s, "no_answer", _bool(v))),
    "drop": (("shaker", "shuffler", "meter"), lambda s, v: s.drop_next(_int(v, 1))),
    "corrupt": (("shaker", "shuffler", "meter"), lambda s, v: s.corrupt_next(_int(v, 1))),
    "delay": (("shaker", "shuffler", "meter"), lambda s, v: setattr(s, "delay_s", _float(v))),
    "not_flat": (("shaker",), lambda s, v: s.not_flat_next(_int(v, 1))),
    "fail": (("shaker",), lambda s, v: s.fail_next(str(v or "motor fault"))),
    "cover_open": (("shaker",), lambda s, v: setattr(s, "cover_open", _bool(v))),
    "jam": (("shuffler",), lambda s, v: s.fail_next("jam", at=str(v or "shuffle"))),
    "malfunction": (("shuffler",), lambda s, v: s.fail_next("fault", at=str(v or "dispense"))),
    "missing": (("shuffler",), lambda s, v: s.inject_missing(v or None)),
    "foreign": (("shuffler",), lambda s, v: s.inject_foreign(str(v or "Jk"))),
    "duplicate": (("shuffler",), lambda s, v: s.inject_duplicate(v or None)),
    "unreadable": (("shuffler",), lambda s, v: s.inject_unreadable()),
    "restore": (("shuffler",), lambda s, v: s.restore_deck()),
    # The adapter pulled out / put back: its symlink and pty go, then a new pty behind the link.
    "unplug": (("shaker", "shuffler", "meter"), lambda s, v: s.unplug()),
    "replug": (("shaker", "shuffler", "meter"), lambda s, v: s.replug()),
}
FAULTS = tuple(_FAULTS)


def _bool(value: Any) -> bool:
    if value in (None, True, "true", "on", "1", 1):
        return True
    if value in (False, "false", "off", "0", 0):
        return False
    raise Refused(f"expected on/off, got {value!r}")


def _int(value: Any, default: int) -> int:
    try:
        n = default if value in (None, "") else int(value)
    except (TypeError, ValueError):
        raise Refused(f"count {value!r} is not a whole number") from None
    if not 0 <= n <= 1000:
        raise Refused(f"count {n} outside 0..1000")
    return n


def _float(value: Any) -> float:
    try:
        f = float(value or 0)
    except (TypeError, ValueError):
        raise Refused(f"delay {value!r} is not a number of seconds") from None
    if not 0 <= f <= 60:
        raise Refused(f"delay {f} s outside 0..60")
    return f


class DevicesExtension:
    name = "device_tests"

    def __init__(self) -> None:
        self.table: Table | None = None
        self.events: deque[dict[str, Any]] = deque(maxlen=WATCH_KEEP)
        self.cursor = 0
        self.tests_run = 0
        self._task: asyncio.Task[None] | None = None

    async def start(self, table: Table) -> None:
        self.table = table
        self._task = asyncio.create_task(self._collect(), name="device-watch")

    async def stop(self) -> None:
        """Cancel the collector; a failure while it stops is raised (the daemon logs it). One
        it died of before was the supervisor's to log, already."""
        task, self._task = self._task, None
        if task is None or task.done():
            return
        # Cancelled until it ends (shared/stopping.py: one cancel can be swallowed on 3.11);
        # the daemon bounds the whole stop (supervisor.stop_part).
        await cancel_and_wait([task])
        if not task.cancelled() and (exc := task.exception()) is not None:
            raise exc

    def handlers(self) -> dict[str, Any]:
        return {
            "device_list": self._h_list,
            "device_test": self._h_test,
            "device_watch": self._h_watch,
            "device_fault": self._h_fault,
            "device_input": self._h_input,
        }

    def status(self) -> dict[str, Any]:
        return {"tests_run": self.tests_run, "events_seen": self.cursor}

    async def _collect(self) -> None:
        assert self.table is not None
        while True:
            q = self.table.subscribe()
            try:
                while (item := await q.get()) is not None:
                    kind = item["event"]["kind"]
                    # Every kind the registry says a device emits (meter.*, cut.* too).
                    if kind in DEVICE_KINDS or self._keypad(kind):
                        self.cursor += 1
                        self.events.append({"n": self.cursor, **item})
            finally:
                self.table.unsubscribe(q)

    def _keypad(self, kind: str) -> bool:
        """A dealer action that has a wired keypad button (the rest are `tablectl dealer`)."""
        if not kind.startswith(DEALER_PREFIX):
            return False
        for d in self._devices().values():
            if isinstance(d, Sensors) and d.keypad is not None:
                return kind.removeprefix(DEALER_PREFIX) in d.keypad
        return False

    # --- handlers -------------------------------------------------------------------------------

    def _devices(self) -> dict[str, Any]:
        return started(self.table).devices

    def _device(self, args: dict[str, Any]) -> Any:
        name = args.get("device")
        devices = self._devices()
        if name not in devices:
            raise Refused(f"no device {name!r} on this table (devices: {', '.join(devices)})")
        return devices[name]

    async def _h_list(self, args: dict[str, Any]) -> dict[str, Any]:
        return {name: d.status() for name, d in self._devices().items()}

    async def _h_test(self, args: dict[str, Any]) -> dict[str, Any]:
        device = self._device(args)
        self.tests_run += 1
        try:
            result = await device.selftest()
        except DeviceError as exc:
            result = {"ok": False, "error": str(exc)}
        return {"device": device.name, "result": result, "health": device.health().as_json()}

    async def _h_watch(self, args: dict[str, Any]) -> dict[str, Any]:
        since = int(args.get("since", 0) or 0)
        inputs: dict[str, Any] = {}
        for d in self._devices().values():
            if isinstance(d, Sensors):
                inputs = {"state": d.inputs()}
                if isinstance(d, GpioSensors):
                    inputs["pins"] = d.raw_inputs()
        return {
            "cursor": self.cursor,
            # No dealt card's value on a terminal, as in status and `tablectl watch`.
            "events": [face_down(e) for e in self.events if e["n"] > since],
            "devices": {n: d.status() for n, d in self._devices().items()},
            "inputs": inputs,
        }

    async def _h_fault(self, args: dict[str, Any]) -> dict[str, Any]:
        device = self._device(args)
        sims = simulators(self._devices())
        if device.name not in sims:
            raise Refused(f"{device.name} is not simulated on a pty: faults need --simulate=pty")
        fault = args.get("fault")
        if fault not in _FAULTS:
            raise Refused(f"unknown fault {fault!r} (faults: {', '.join(FAULTS)})")
        where, apply = _FAULTS[fault]
        if device.name not in where:
            raise Refused(f"fault {fault!r} applies to {', '.join(where)}, not {device.name}")
        try:
            done = apply(sims[device.name], args.get("value"))
            if inspect.isawaitable(done):
                await done
        except (DeviceError, Refused, ValueError, TypeError) as exc:
            # The pty simulators refuse an impossible injection with ValueError today.
            raise Refused(f"{device.name} {fault}: {exc}") from None
        return {"device": device.name, "fault": fault, "value": args.get("value")}

    async def _h_input(self, args: dict[str, Any]) -> dict[str, Any]:
        sensors = next((d for d in self._devices().values() if isinstance(d, GpioSensors)), None)
        if sensors is None:
            raise Refused("no GPIO sensors on this table (in-process simulation)")
        name = str(args.get("input"))
        try:
            if _bool(args.get("active", True)):
                sensors.press(name)
            else:
                sensors.release(name)
        except DeviceError as exc:
            raise Refused(str(exc)) from None
        return {"input": name, "pins": sensors.raw_inputs()}
