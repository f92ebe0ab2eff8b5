"""The GPIO section, `[devices.gpio]`: which BCM pin is which button, sensor and lamp.

`read_gpio` reads the pins and checks that no pin serves two inputs/outputs; how many pins
each group needs depends on the game, which devices/config.py checks against the game's needs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from shared.config_reader import MISSING, Table, kind_of

BCM_PINS = range(0, 28)  # the 40-pin header's GPIO0..GPIO27
PIN_FACTORIES = ("lgpio", "mock")
GROUPS = ("chung", "off", "bet_sensor", "lamp")  # the per-box pin groups
_ACTION = re.compile(r"[a-z][a-z0-9_]{0,31}")


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
