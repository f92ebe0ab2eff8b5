"""The `[devices]` section of table.toml: every device's own section, read by that device.

    [devices]            simulate
    [devices.shaker]     devices/shaker/config.py     (a serial section)
    [devices.shuffler]   devices/shuffler/config.py   (a serial section)
    [devices.meter]      devices/meter/config.py      (a serial section)
    [devices.cardreader] devices/cardreader/config.py (a serial section; optional)
    [devices.gpio]       devices/sensors/config.py

`read_devices(root, needs)` reads them all into a `DevicesConfig`, recording every problem in
the file's one error list (shared/config_reader.py). What the configured game asks of the
devices comes in as `GameNeeds`, which controller/config/ derives from the game's section:
this package knows devices, not games. A new serial device is one more `SerialSection` in
`SERIAL_SECTIONS` and one more field of `DevicesConfig`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from devices.cardreader.config import SECTION as CARDREADER
from devices.meter.config import SECTION as METER
from devices.proto.serial_config import SerialConfig, SerialSection
from devices.sensors.config import GROUPS, GpioConfig, read_gpio
from devices.shaker.config import SECTION as SHAKER
from devices.shuffler.config import SECTION as SHUFFLER
from shared.config_reader import Table

SERIAL_SECTIONS: tuple[SerialSection, ...] = (SHAKER, SHUFFLER, METER, CARDREADER)
# device -> (default port, baud): the names udev makes and the daemon's unit allows
SERIAL_DEFAULTS = {s.name: (s.port, s.baud) for s in SERIAL_SECTIONS}


@dataclass(frozen=True)
class DevicesConfig:
    simulate: bool = False
    shaker: SerialConfig | None = None
    shuffler: SerialConfig | None = None
    meter: SerialConfig | None = None
    cardreader: SerialConfig | None = None  # Player Cards (issue 29); optional: keyed instead
    gpio: GpioConfig | None = None


@dataclass(frozen=True)
class GameNeeds:
    """What the configured game asks of the devices."""

    game: str
    boxes: int | None  # None when the game's section could not be read
    # serial device -> why the game does not use it ("game paigow"); absent: used
    unused: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    required: tuple[str, ...] = ()  # serial devices a real table must have configured
    groups: tuple[str, ...] = ()  # the GPIO pin groups the game reads, one pin per box
    wired: tuple[str, ...] = ()  # the groups a real table must have wired
    cut_die: bool = False  # the shaker has a fourth die (NSW 2.4)
    decks: int = 1  # the shuffler's decks
    keypad: frozenset[str] | None = None  # the game's keypad actions (None: not known)


def read_devices(root: Table, needs: GameNeeds | None) -> DevicesConfig:
    """`[devices]` and its sub-sections; `needs` is None when the game is unknown."""
    t = root.table("devices")
    if t is None:
        t = Table(root.errors, "devices", {})
    simulate = t.boolean("simulate", False)
    serial: dict[str, SerialConfig | None] = {}
    for section in SERIAL_SECTIONS:
        device = section.name
        st = t.table(device)
        serial[device] = None
        if st is None:
            continue
        if needs is not None and device in needs.unused:
            t.error(device, f"not used by {needs.unused[device]}; remove [devices.{device}]")
        serial[device] = section.read(st)
    gt = t.table("gpio")
    gpio = read_gpio(gt) if gt is not None else None
    t.done()

    if gpio is not None and gt is not None and needs is not None and needs.boxes is not None:
        _check_groups(gt, needs, needs.boxes)
        if "lamp" in needs.groups and bool(gpio.lamp) != bool(gpio.bet_sensor):
            gt.error("lamp", "bet sensors and lamps go together: one lamp per bet sensor")
    if gpio is not None and needs is not None and needs.keypad is not None:
        # A button wired to an action the game has not would be journaled and refused at every
        # press: each one named here, with what the game offers.
        offered = ", ".join(sorted(needs.keypad))
        for action in sorted(set(gpio.keypad) - needs.keypad):
            root.errors.add(f"devices.gpio.keypad.{action}",
                            f"game {needs.game} has no keypad action {action!r} (one of {offered})")

    if simulate is False and needs is not None:
        # On real hardware the devices the game relies on must be configured.
        for device in needs.required:
            if serial[device] is None:
                t.error(
                    device, f"required for game {needs.game} on real hardware (or simulate = true)"
                )
        if gpio is None:
            t.error("gpio", "required on real hardware (or simulate = true)")
        elif needs.boxes is not None:
            for name in needs.wired:
                if not getattr(gpio, name):
                    root.errors.add(
                        f"devices.gpio.{name}", f"required: one pin per box ({needs.boxes})"
                    )
            if gpio.pin_factory == "mock":
                root.errors.add("devices.gpio.pin_factory", "mock pins only with simulate = true")
    return DevicesConfig(simulate=simulate, gpio=gpio, **serial)


def _check_groups(gt: Table, needs: GameNeeds, boxes: int) -> None:
    """Each group the game reads has one pin per box; a group it does not read has none."""
    for name in GROUPS:
        given = gt.data.get(name, [])
        count = len(given) if isinstance(given, list) else 0
        if name not in needs.groups and count:
            gt.error(name, f"not used by game {needs.game}; remove it")
        elif name in needs.groups and count and count != boxes:
            gt.error(name, f"needs one pin per box: {boxes} pins, got {count}")
