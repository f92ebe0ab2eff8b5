"""The GPIO section, `[devices.gpio]`: which BCM pin is which button, sensor and lamp.

`read_gpio` reads the pins and checks that no pin serves two inputs/outputs; how many pins
each group needs depends on the game, which `GpioSection.check` checks against the game's needs
(devices/config.py calls it through the sensors' descriptor, devices/sensors/__init__.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from devices.kind import GameNeeds, Section, Setup
from shared.config_reader import MISSING, Table, kind_of

BCM_PINS = range(0, 28)  # the 40-pin header's GPIO0..GPIO27
PIN_FACTORIES = ("lgpio", "mock")
GROUPS = ("chung", "off", "bet_sensor", "lamp")  # the per-box pin groups
_ACTION = re.compile(r"[a-z][a-z0-9_]{0,31}")

# Mock pins for a simulated table without a [devices.gpio] section (BCM numbers, none shared).
SIM_PINS = {
    "chung": (4, 5, 6, 7, 8, 9, 10, 11),
    "off": (12, 13, 14, 15, 16, 17, 18, 19),
    "bet_sensor": (4, 5, 6, 7, 8, 9, 10),
    "lamp": (12, 13, 14, 15, 16, 17, 18),
}
SIM_KEYPAD = {"new_round": 20, "shake": 21, "deal": 22, "void": 23, "confirm": 24}
SIM_KEY_SWITCH = 27


@dataclass(frozen=True)
class GpioConfig:
    pin_factory: str = "lgpio"
    chung: tuple[int, ...] = ()  # Pai Gow: one per box, box 1 first
    off: tuple[int, ...] = ()  # Pai Gow: one per box
    bet_sensor: tuple[int, ...] = ()  # UTH: one per box
    lamp: tuple[int, ...] = ()  # UTH: one per bet sensor
    keypad: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    table_closed: int | None = None
    debounce_ms: int = 20


def _pin(t: Table, name: str, default: Any = MISSING) -> Any:
    value = t.raw(name, default)
    if value is None or (value is default and name not in t.data):
        return value
    if isinstance(value, bool) or not isinstance(value, int) or value not in BCM_PINS:
        t.error(name, f"must be a BCM GPIO number 0..27, got {value!r}")
        return None
    return value


def _pins(t: Table, name: str) -> tuple[int, ...]:
    value = t.raw(name, [])
    if not isinstance(value, list):
        t.error(name, f"must be an array of BCM GPIO numbers, got {kind_of(value)}")
        return ()
    good: list[int] = []
    for i, pin in enumerate(value):
        if isinstance(pin, bool) or not isinstance(pin, int) or pin not in BCM_PINS:
            t.error(f"{name}[{i}]", f"must be a BCM GPIO number 0..27, got {pin!r}")
        else:
            good.append(pin)
    return tuple(good)


def read_gpio(t: Table) -> GpioConfig:
    factory = t.string("pin_factory", "lgpio", choices=PIN_FACTORIES)
    keypad: dict[str, int] = {}
    kt = t.table("keypad")
    if kt is not None:
        for action in kt.data:
            if not _ACTION.fullmatch(action):
                kt.error(action, "action names are lowercase words, e.g. new_round")
            pin = _pin(kt, action)
            if pin is not None:
                keypad[action] = pin
        kt.done()
    cfg = GpioConfig(
        pin_factory=factory,
        chung=_pins(t, "chung"),
        off=_pins(t, "off"),
        bet_sensor=_pins(t, "bet_sensor"),
        lamp=_pins(t, "lamp"),
        keypad=MappingProxyType(keypad),
        table_closed=_pin(t, "table_closed", None),
        debounce_ms=t.integer("debounce_ms", 20, lo=1, hi=1000),
    )
    # No pin may serve two inputs/outputs.
    owner: dict[int, str] = {}
    uses = [(f"{n}[{i}]", p) for n in GROUPS for i, p in enumerate(getattr(cfg, n))]
    uses += [(f"keypad.{a}", p) for a, p in keypad.items()]
    if cfg.table_closed is not None:
        uses.append(("table_closed", cfg.table_closed))
    for name, pin in uses:
        if pin in owner:
            t.error(name, f"GPIO{pin} is already used by {t.key(owner[pin])}")
        else:
            owner[pin] = name
    t.done()
    return cfg


@dataclass(frozen=True)
class GpioSection(Section):
    """`[devices.gpio]`: the sensors' pins, checked against the game's pin groups and keypad."""

    name: str = "gpio"

    def read(self, t: Table) -> GpioConfig:
        return read_gpio(t)

    def check(self, root: Table, t: Table, cfg: GpioConfig, needs: GameNeeds) -> None:
        if needs.boxes is not None:
            _check_groups(t, needs, needs.boxes)
            if "lamp" in needs.groups and bool(cfg.lamp) != bool(cfg.bet_sensor):
                t.error("lamp", "bet sensors and lamps go together: one lamp per bet sensor")
        if needs.keypad is not None:
            # A button wired to an action the game has not would be journaled and refused at
            # every press: each one named here, with what the game offers.
            offered = ", ".join(sorted(needs.keypad))
            for action in sorted(set(cfg.keypad) - needs.keypad):
                root.errors.add(
                    f"devices.gpio.keypad.{action}",
                    f"game {needs.game} has no keypad action {action!r} (one of {offered})",
                )

    def check_real(
        self, root: Table, devices: Table, cfg: GpioConfig | None, needs: GameNeeds
    ) -> None:
        if cfg is None:
            devices.error("gpio", "required on real hardware (or simulate = true)")
        elif needs.boxes is not None:
            for name in needs.wired:
                if not getattr(cfg, name):
                    root.errors.add(
                        f"devices.gpio.{name}", f"required: one pin per box ({needs.boxes})"
                    )
            if cfg.pin_factory == "mock":
                root.errors.add("devices.gpio.pin_factory", "mock pins only with simulate = true")

    def for_simulator(self, cfg: GpioConfig | None, setup: Setup, port: str | None) -> GpioConfig:
        """The table's [devices.gpio] on mock pins, or a full mock wiring when it has none."""
        if cfg is not None:
            return replace(cfg, pin_factory="mock")
        pins: dict[str, Any] = {g: SIM_PINS[g][: setup.boxes] for g in setup.needs.groups}
        return GpioConfig(
            pin_factory="mock",
            keypad=MappingProxyType(dict(SIM_KEYPAD)),
            table_closed=SIM_KEY_SWITCH,
            **pins,
        )


def _check_groups(gt: Table, needs: GameNeeds, boxes: int) -> None:
    """Each group the game reads has one pin per box; a group it does not read has none."""
    for name in GROUPS:
        given = gt.data.get(name, [])
        count = len(given) if isinstance(given, list) else 0
        if name not in needs.groups and count:
            gt.error(name, f"not used by game {needs.game}; remove it")
        elif name in needs.groups and count and count != boxes:
            gt.error(name, f"needs one pin per box: {boxes} pins, got {count}")


SECTION = GpioSection()
