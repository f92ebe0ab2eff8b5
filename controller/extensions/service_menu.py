"""The technician's device service menu, an Extension: control-socket commands that exercise
the table's hardware between rounds (docs/operations.md "Device service tests").

    device_lamp_walk    {step_ms?}                   light each jackpot lamp alone in turn,
                                                     read each pin back, restore the lamps
    device_buttons      {}                           the wired inputs, each with its prompt
    device_button_wait  {input, timeout_s?}          wait for one input pressed and let go; the
                                                     press is the test's, never the round's
    device_loopback     {device | port, baud?, timeout_ms?}
                                                     a pattern through a loopback plug; a
                                                     device's driver lets go of its port for it

The tests themselves live with the devices (devices/tools/). Each is refused while a round is in
progress (from "no more bets" to the settlement; closed or betting is free) and while another
test runs,
and each is logged with who ran it. They move no money and change no configuration, so the
technician group may run them as well as the supervisor group (controller/control.py TECHNICIAN;
docs/operations.md "Who may do what").
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from controller import control
from controller.control import Refused
from controller.extensions.base import ready
from controller.logs import event as log_event
from devices.base import Device
from devices.errors import DeviceError
from devices.proto.serial_config import BAUD_RATES
from devices.sensors.gpio import GpioSensors
from devices.tools import buttons, lamps
from devices.tools import loopback as loop

if TYPE_CHECKING:
    from controller.extensions.base import Table

log = logging.getLogger("tablectl")
MAX_PORT = 256  # characters of a port path
MAX_WAIT_S = 600  # `--wait`: how long a test may wait for the round in progress to end
WAIT_POLL_S = 0.1  # how often it looks


# The phases between rounds in both games: the table closed, or taking wagers before the deal
# or the shake (controller/rounds/paigow/state.py, uth/state.py). From "no more bets" to the
# settlement a round is in progress: its devices are the round's.
FREE_PHASES = ("closed", "betting")


def round_in_progress(status: Mapping[str, Any]) -> str | None:
    """Why the table is not free for a service test, from the machine's status; None: it is."""
    phase = status.get("state")
    return None if phase in FREE_PHASES else f"a round is in progress ({phase})"


def _number(args: Mapping[str, Any], name: str, default: int, lo: int, hi: int) -> int:
    value = args.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise Refused(f"{name} must be an integer within {lo}..{hi}, got {value!r}")
    return value


class ServiceMenu:
    name = "service_menu"

    def __init__(self) -> None:
        self.table: Table | None = None
        self.runs: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self._busy = asyncio.Lock()
        self.waiting_for: str | None = None  # the input a button test waits for now

    async def start(self, table: Table) -> None:
        self.table = table

    async def stop(self) -> None:
        self.table = None

    def handlers(self) -> dict[str, Any]:
        return {
            "device_lamp_walk": self._h_lamp_walk,
            "device_buttons": self._h_buttons,
            "device_button_wait": self._h_button_wait,
            "device_loopback": self._h_loopback,
        }

    def status(self) -> dict[str, Any]:
        return {
            "tests_run": dict(self.runs),
            "tests_failed": dict(self.failed),
            "waiting_for": self.waiting_for,
        }

    # --- the guard every test goes through ------------------------------------------------------

    def _devices(self) -> dict[str, Device]:
        return ready(self.table).devices

    def _sensors(self) -> GpioSensors:
        sensors = next((d for d in self._devices().values() if isinstance(d, GpioSensors)), None)
        if sensors is None:
            raise Refused("no GPIO sensors on this table (in-process simulation: use"
                             " tablectld --simulate=pty)")  # fmt: skip
        return sensors

    async def _run(self, test: str, fn: Callable[[], Awaitable[dict[str, Any]]],
                   args: Mapping[str, Any]) -> dict[str, Any]:
        wait_s = _number(args, "wait_s", 0, 0, MAX_WAIT_S)
        table = ready(self.table)
        waited = await self._between_rounds(table, wait_s)
        why = round_in_progress(table.game_status())
        if why is not None:
            if wait_s:
                raise Refused(f"{test} refused: {why} still after {wait_s} s of waiting")
            raise Refused(f"{test} refused: {why}; run it between rounds, or with --wait to"
                          " run it at the next gap")
        if self._busy.locked():
            raise Refused(f"{test} refused: another service test is running")
        async with self._busy:
            try:
                result = await fn()
            except DeviceError as exc:
                raise Refused(f"{test}: {exc}") from None
        self.runs[test] += 1
        if not result.get("ok"):
            self.failed[test] += 1
        peer = control.current_peer()
        who = peer.user if peer is not None else "?"
        if result.get("ok"):
            log_event(log, logging.INFO, f"service test {test} by {who} passed", test=test,
                      user=who)
        else:
            log_event(log, logging.WARNING, f"service test {test} by {who} FAILED:"
                      f" {failure_text(result)}", test=test, user=who, code="E205")
        if waited:
            result = {**result, "waited_s": round(waited, 1)}
        return result

    async def _between_rounds(self, table: Table, wait_s: int) -> float:
        """Wait up to `wait_s` for the round in progress to end (`--wait`); the seconds waited."""
        began = time.monotonic()
        while (round_in_progress(table.game_status()) is not None
               and time.monotonic() - began < wait_s):
            await asyncio.sleep(WAIT_POLL_S)
        return time.monotonic() - began if wait_s else 0.0

    # --- the tests ------------------------------------------------------------------------------

    async def _h_lamp_walk(self, args: dict[str, Any]) -> dict[str, Any]:
        lo, hi = (int(s * 1000) for s in lamps.STEP_S)
        step_ms = _number(args, "step_ms", 500, lo, hi)
        sensors = self._sensors()
        return await self._run("lamp walk", lambda: lamps.lamp_walk(sensors, step_ms / 1000),
                               args)

    async def _h_buttons(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"inputs": buttons.prompts(self._sensors())}

    async def _h_button_wait(self, args: dict[str, Any]) -> dict[str, Any]:
        name = args.get("input")
        if not isinstance(name, str):
            raise Refused(f"input must be an input's name, e.g. chung3, got {name!r}")
        lo, hi = (int(s) for s in buttons.TIMEOUT_S)
        timeout_s = _number(args, "timeout_s", 30, lo, hi)
        sensors = self._sensors()

        async def wait() -> dict[str, Any]:
            self.waiting_for = name  # (its presses are the test's from the first await on)
            try:
                return await buttons.wait_for_press(sensors, name, float(timeout_s))
            finally:
                self.waiting_for = None

        return await self._run("button test", wait, args)

    async def _h_loopback(self, args: dict[str, Any]) -> dict[str, Any]:
        lo, hi = (int(s * 1000) for s in loop.TIMEOUT_S)
        timeout_s = _number(args, "timeout_ms", 1000, lo, hi) / 1000
        devices = self._devices()
        name, port = args.get("device"), args.get("port")
        if (name is None) == (port is None):
            raise Refused("name a device (shaker, shuffler, meter) or a port, not both")
        if name is not None:
            if name not in devices:
                known = ", ".join(devices)
                raise Refused(f"no device {name!r} on this table (devices: {known})")
            device = devices[name]
            try:
                line = loop.line_of(device)
            except DeviceError as exc:
                raise Refused(str(exc)) from None

            async def through_device() -> dict[str, Any]:
                async with device.released():
                    result = await loop.loopback(
                        line.port, line.baud, timeout_s, seven_e1=line.seven_e1
                    )
                return {"device": device.name, **result}

            return await self._run("loopback", through_device, args)
        if not isinstance(port, str) or not port.startswith("/") or len(port) > MAX_PORT:
            raise Refused(f"port must be an absolute path of at most {MAX_PORT} characters")
        held = [n for n, d in devices.items() if _port_of(d) == port]
        if held:
            raise Refused(f"{port} is {held[0]}'s port: name the device to test it")
        baud = _number(args, "baud", 115200, min(BAUD_RATES), max(BAUD_RATES))
        if baud not in BAUD_RATES:
            raise Refused(f"baud must be one of {', '.join(map(str, BAUD_RATES))}")
        return await self._run("loopback", lambda: loop.loopback(port, baud, timeout_s), args)


def failure_text(result: Mapping[str, Any]) -> str:
    """Why a service test failed, in a line: its error, else the steps that went wrong."""
    if result.get("error"):
        return str(result["error"])
    wrong = [f"lamp {s['box']} (GPIO{s['pin']}) read back lit"
             f" {', '.join(map(str, s['lit'])) or 'none'}"
             for s in result.get("steps") or [] if not s.get("ok")]
    if result.get("restored_ok") is False:
        wrong.append("the lamps did not end as the game wants them")
    return "; ".join(wrong) or "see the command's report"


def _port_of(device: Device) -> str | None:
    try:
        return loop.line_of(device).port
    except DeviceError:
        return None
