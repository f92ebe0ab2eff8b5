"""The table's GPIO inputs and jackpot lamps through gpiozero (device "sensors").

Wiring (docs/devices.md): every input is a switch to ground with the internal pull-up, so an
input is active when its pin reads low. Pins come from `[devices.gpio]`:

    chung[i]       active: chung.on {box}       inactive: chung.off {box}
    off[i]         active: off.pressed {box}    inactive: off.released {box}
    bet_sensor[i]  active: bet.on {box}         inactive: bet.off {box}
    keypad.<a>     a press released within STUCK_S: dealer.<a> {}
    table_closed   active: table.close {}       inactive: table.open {}
    lamp[i]        idle: off, bet: on, locked: slow blink, win: fast blink

gpiozero calls `when_activated`/`when_deactivated` in its own threads (or, with mock pins, in
the caller's): the callbacks only stamp the edge with the injectable clock and hand it to the
loop. On the loop each input's `Debouncer` decides what counts (devices/sensors/debounce.py): a
level that held for `debounce_ms`, never a bounce; a chattering input reports `chatter` in the
health and nothing to the game until it is quiet; a keypad button acts on release, so one held
for STUCK_S (stuck, or a dealer leaning on it) is reported and never acted on.

Pin factories: "lgpio" on the Pi (gpiozero.pins.lgpio.LGPIOFactory), "mock" in tests and
simulation (gpiozero.pins.mock.MockFactory; drive a pin with `pin.drive_low()`/`drive_high()`
to press/release; `press(name)`/`release(name)` do that by input name).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from devices.base import DeviceError
from devices.sensors import Sensors
from devices.sensors.config import GpioConfig
from devices.sensors.debounce import CHATTER, LEVEL, STUCK, Change, Debouncer

STUCK_S = 5.0  # a keypad press longer than this is not a press
LAMP_BLINK = {"locked": (0.5, 0.5), "win": (0.1, 0.1)}  # (on, off) seconds
log = logging.getLogger("tablectl.devices")


@dataclass(frozen=True)
class Input:
    name: str  # "chung3", "keypad.shake", "table_closed"
    pin: int
    on: tuple[str, dict[str, Any]] | None  # event when it becomes active
    off: tuple[str, dict[str, Any]] | None  # event when it becomes inactive
    momentary: bool = False  # a keypad button: acts on release, may be stuck


def inputs_of(cfg: GpioConfig) -> list[Input]:
    out: list[Input] = []
    for group, on, off in (
        ("chung", "chung.on", "chung.off"),
        ("off", "off.pressed", "off.released"),
        ("bet_sensor", "bet.on", "bet.off"),
    ):
        for i, pin in enumerate(getattr(cfg, group)):
            data = {"box": i + 1}
            out.append(Input(f"{group}{i + 1}", pin, (on, data), (off, data)))
    for action, pin in sorted(cfg.keypad.items()):
        out.append(Input(f"keypad.{action}", pin, None, (f"dealer.{action}", {}), True))
    if cfg.table_closed is not None:
        out.append(Input("table_closed", cfg.table_closed, ("table.close", {}), ("table.open", {})))
    return out


def make_factory(name: str) -> Any:
    """The gpiozero pin factory named in the config (imported only when used)."""
    if name == "mock":
        from gpiozero.pins.mock import MockFactory

        return MockFactory()
    if name == "lgpio":
        try:
            from gpiozero.pins.lgpio import LGPIOFactory

            return LGPIOFactory()
        except Exception as exc:  # no lgpio module, no /dev/gpiochip: say which
            raise DeviceError(f"sensors: lgpio pin factory unavailable: {exc}") from None
    raise DeviceError(f"sensors: unknown pin factory {name!r}")


class GpioSensors(Sensors):
    def __init__(
        self,
        cfg: GpioConfig,
        *,
        boxes: int,
        name: str = "sensors",
        factory: Any = None,
        clock: Callable[[], float] = time.monotonic,
        stuck_s: float = STUCK_S,
    ) -> None:
        super().__init__(name, boxes=boxes, keypad=list(cfg.keypad))
        self.cfg = cfg
        self.factory = factory
        self.clock = clock
        self.stuck_s = stuck_s
        self.inputs_cfg = inputs_of(cfg)
        self.debouncers: dict[str, Debouncer] = {}
        self.problems: dict[str, str] = {}  # input -> "chattering" | "stuck"
        self.lamps: dict[int, str] = {}
        self._devices: dict[str, Any] = {}
        self._lamp_devices: dict[int, Any] = {}
        self._lamps_held = False  # a service test owns the lamps (holding_lamps)
        self._timer: asyncio.TimerHandle | None = None

    # --- lifecycle ------------------------------------------------------------------------------

    async def _open(self) -> None:
        from gpiozero import LED, DigitalInputDevice
        from gpiozero.exc import GPIOZeroError

        if self.factory is None:
            self.factory = make_factory(self.cfg.pin_factory)
        now = self.clock()
        try:
            for inp in self.inputs_cfg:
                dev = DigitalInputDevice(inp.pin, pull_up=True, pin_factory=self.factory)
                self._devices[inp.name] = dev
                self.debouncers[inp.name] = Debouncer(
                    self.cfg.debounce_ms / 1000,
                    initial=bool(dev.is_active),
                    now=now,
                    quiet_s=max(1.0, self.cfg.debounce_ms / 1000),
                    stuck_s=self.stuck_s if inp.momentary else None,
                )
                dev.when_activated = self._edge_callback(inp.name, True)
                dev.when_deactivated = self._edge_callback(inp.name, False)
            for i, pin in enumerate(self.cfg.lamp):
                self._lamp_devices[i + 1] = LED(pin, pin_factory=self.factory)
                self.lamps[i + 1] = "idle"
        except (GPIOZeroError, OSError, RuntimeError) as exc:
            self._release()
            raise DeviceError(f"{self.name}: GPIO unavailable: {exc}") from None
        self._read_initial()
        self._schedule()

    def _read_initial(self) -> None:
        """Inputs as they are at start: recorded, not replayed as edges (the journal knows the
        round), except an open key switch, which opens a closed table."""
        for inp in self.inputs_cfg:
            active = self.debouncers[inp.name].stable
            event = inp.on if active else inp.off
            if event is None or inp.momentary:
                continue
            kind, data = event
            if kind in ("table.open", "table.close"):
                self.table_open = kind == "table.open"
                if self.table_open:
                    self._post(kind, data)
            elif active:
                group = kind.split(".")[0]
                self.levels[group].add(data["box"])

    async def _close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._release()

    def _release(self) -> None:
        for dev in [*self._devices.values(), *self._lamp_devices.values()]:
            with contextlib.suppress(Exception):
                dev.close()
        self._devices.clear()
        self._lamp_devices.clear()

    # --- edges ----------------------------------------------------------------------------------

    def _edge_callback(self, name: str, level: bool) -> Callable[[], None]:
        def callback() -> None:  # a gpiozero thread: stamp and hand over, nothing else
            self._on_loop(self._edge, name, level, self.clock())

        return callback

    def _edge(self, name: str, level: bool, at: float) -> None:
        deb = self.debouncers.get(name)
        if deb is None:
            return
        self.counters["edges"] += 1
        deb.feed(level, at)
        self.poll_inputs()

    def poll_inputs(self) -> None:
        """Apply every change that is due by now; schedule the next look."""
        now = self.clock()
        for inp in self.inputs_cfg:
            deb = self.debouncers.get(inp.name)
            if deb is None:
                continue
            for change in deb.poll(now):
                self._apply(inp, change, deb)
        self._schedule()

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        due = [d for d in (deb.deadline() for deb in self.debouncers.values()) if d is not None]
        if not due or self._loop is None or self._emit is None:
            return
        delay = max(0.0, min(due) - self.clock()) + 0.001
        self._timer = self._loop.call_later(delay, self._tick)

    def _tick(self) -> None:
        self._timer = None
        self.poll_inputs()

    def _apply(self, inp: Input, change: Change, deb: Debouncer) -> None:
        if change.what == CHATTER:
            self._problem(inp.name, "chattering", change.value)
            return
        if change.what == STUCK:
            self._problem(inp.name, "stuck", change.value)
            return
        assert change.what == LEVEL
        if inp.momentary:
            # Act on release of a press that was not stuck (STUCK clears after this LEVEL).
            if not change.value and self.problems.get(inp.name) != "stuck":
                kind, data = inp.off  # type: ignore[misc]
                self.counters["presses"] += 1
                self._input(kind, data)
            return
        event = inp.on if change.value else inp.off
        if event is not None:
            self._input(*event)

    def _problem(self, name: str, what: str, began: bool) -> None:
        if began:
            self.problems[name] = what
            self.counters[what] += 1
            self.last_error = f"{name} {what}: not acted on"
            log.warning("%s: input %s %s", self.name, name, what)
        elif self.problems.get(name) == what:
            del self.problems[name]
            log.info("%s: input %s no longer %s", self.name, name, what)

    # --- lamps ----------------------------------------------------------------------------------

    async def set_lamp(self, box: int | None, state: str) -> None:
        """The game's lamp write: remembered, and driven unless a service test holds the lamps
        (then driven when the test lets go: `holding_lamps`)."""
        for b in [box] if box is not None else list(self._lamp_devices):
            if b not in self._lamp_devices:
                continue  # no lamp wired for this box
            self.lamps[b] = state
            if self._lamps_held:
                self.counters["lamp_writes_held"] += 1
            else:
                self.drive_lamp(b, state)
        self.counters["lamp_writes"] += 1

    def drive_lamp(self, box: int, state: str) -> None:
        """Drive one lamp's pin as `state` says, whoever holds the lamps (the lamp walk's own
        writes); `lamps` keeps what the game asked for."""
        led = self._lamp_devices.get(box)
        if led is None:  # not wired, or the device stopped under a lamp walk
            raise DeviceError(f"{self.name}: no lamp {box} to drive")
        if state == "idle":
            led.off()
        elif state == "bet":
            led.on()
        else:
            on, off = LAMP_BLINK[state]
            led.blink(on_time=on, off_time=off, background=True)

    @contextlib.asynccontextmanager
    async def holding_lamps(self) -> AsyncIterator[None]:
        """The lamps are a service test's while this is open: the game's writes are remembered,
        not driven (a bet placed during a lamp walk must not light a lamp the walk reads back),
        and every lamp is driven as the game last asked when the test lets go."""
        if self._lamps_held:
            raise DeviceError(f"{self.name}: the lamps are already held by a service test")
        self._lamps_held = True
        try:
            yield
        finally:
            self._lamps_held = False
            for box, state in sorted(self.lamps.items()):
                if box in self._lamp_devices:
                    self.drive_lamp(box, state)

    # --- technicians ----------------------------------------------------------------------------

    def raw_inputs(self) -> dict[str, Any]:
        """Each input by name: pin, debounced level, problem (for `tablectl devices watch`)."""
        return {
            inp.name: {
                "pin": inp.pin,
                "active": self.debouncers[inp.name].stable if inp.name in self.debouncers else None,
                "problem": self.problems.get(inp.name),
            }
            for inp in self.inputs_cfg
        }

    def lamp_pins(self) -> dict[int, dict[str, Any]]:
        """Each lamp by box: its pin and whether the pin is driven now (read back from the pin,
        not from what was asked: a lamp walk sees what the wire does)."""
        return {
            box: {"pin": self.cfg.lamp[box - 1], "lit": bool(led.is_lit)}
            for box, led in sorted(self._lamp_devices.items())
        }

    def pin_of(self, name: str) -> Any:
        if name not in self._devices:
            known = ", ".join(i.name for i in self.inputs_cfg) or "none"
            raise DeviceError(f"{self.name}: no input {name!r} (inputs: {known})")
        return self._devices[name].pin

    def press(self, name: str) -> None:
        """Mock pins only: drive an input active (low), as a switch closing."""
        self._mock_pin(name).drive_low()

    def release(self, name: str) -> None:
        self._mock_pin(name).drive_high()

    def _mock_pin(self, name: str) -> Any:
        pin = self.pin_of(name)
        if not hasattr(pin, "drive_low"):
            raise DeviceError(f"{self.name}: {name} is a real pin; only mock pins can be driven")
        return pin

    async def selftest(self) -> dict[str, Any]:
        """Live input states, chattering or stuck inputs, lamp states (nothing is driven)."""
        ok = self.started and not self.problems
        return {
            "ok": ok,
            "inputs": self.raw_inputs(),
            "problems": dict(self.problems),
            "lamps": dict(self.lamps),
        }
