"""A device as one descriptor (issue 30): each device package declares

    DEVICE = DeviceKind(name, section, interface, driver, sim, wire_sim, events, order)

in its `__init__.py`, and the config reader (devices/config.py), the builders (build.py, sim.py),
the catalog (catalog.py), the host's pty simulators (pty_sim.py) and the udev rules (udev.py)
iterate the descriptors devices/kinds.py finds: adding a device is one package with one
descriptor, no central list to edit.

A descriptor names its driver and simulators as "module:Class" (`Part`), imported only when one
is built: a daemon start imports the configured devices' drivers only, and the simulators only
with `--simulate` (issue 31; tests/daemon/test_startup_imports.py).
"""

from __future__ import annotations

import importlib
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from devices.base import Device
from shared.config_reader import Table


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


@dataclass(frozen=True)
class Setup:
    """What building one device reads besides its own section: the game's needs, the boxes,
    and the randomness a simulator draws from (None: the CSPRNG)."""

    needs: GameNeeds
    boxes: int
    rng: random.Random | None = None


class Section(ABC):
    """A device's `[devices.<name>]` section: how it is read and checked, and the section a
    driver opens against a simulator. A section type overrides what it needs."""

    name: str

    @abstractmethod
    def read(self, t: Table) -> Any:
        """The section's config object; problems go to `t`'s error list."""

    def check(self, root: Table, t: Table, cfg: Any, needs: GameNeeds) -> None:
        """Check a configured section against what the game needs (simulated or not); by
        default a section asks nothing of the game."""
        return None

    def check_real(self, root: Table, devices: Table, cfg: Any, needs: GameNeeds) -> None:
        """Check what a real table (`simulate = false`) must have of this device; by default
        nothing (the serial devices a game requires are `GameNeeds.required`)."""
        return None

    @abstractmethod
    def for_simulator(self, cfg: Any, setup: Setup, port: str | None) -> Any:
        """The config a real driver opens against a simulator (`port`: its pty)."""


Options = Callable[[Setup], dict[str, Any]]


def no_options(setup: Setup) -> dict[str, Any]:
    return {}


def box_count(setup: Setup) -> dict[str, Any]:
    """The table's number of boxes (`boxes`): a device with a part at each box."""
    return {"boxes": setup.boxes}


def drawn(options: Options = no_options) -> Options:
    """`options` and the table's random source (`rng`): what a simulator draws from."""
    return lambda setup: {**options(setup), "rng": setup.rng}


@dataclass(frozen=True)
class Part:
    """One implementation of a device, by "module:Class", imported only when loaded, and the
    keyword arguments its constructor takes from the table (`options`)."""

    path: str
    options: Options = no_options

    def load(self) -> type[Any]:
        module, _, name = self.path.partition(":")
        cls: type[Any] = getattr(importlib.import_module(module), name)
        return cls

    def make(self, setup: Setup, *args: Any) -> Any:
        return self.load()(*args, **self.options(setup))


@dataclass(frozen=True)
class DeviceKind:
    """Everything the rest of `devices` needs to know of one kind of device."""

    name: str  # the device's name: `Device.name`, the key of a table's devices
    section: Section  # its `[devices.<section.name>]`
    interface: type[Device]  # what every implementation subclasses
    driver: Part  # the real driver, built as driver(section config, **options)
    sim: Part | None  # in-process simulator (`--simulate`); None: none
    wire_sim: Part | None  # the hardware behind a pty, for the real driver; None: none
    # Every event kind any implementation may emit: inside the journal's hash chain
    # (tests/devices/test_devices_layout.py checks it against each implementation's EVENTS).
    events: tuple[str, ...]
    order: int  # where it stands in a table's devices (start order, `tablectl status`)
    # where its section stands among `[devices]`'s: reading, the JSON view, the udev rules
    section_order: int
    optional: bool = False  # simulated only where configured (a card reader: else keyed)

    def used(self, needs: GameNeeds) -> bool:
        """Whether the configured game uses this kind of device."""
        return self.name not in needs.unused

    def simulated(self, configured: bool, needs: GameNeeds) -> bool:
        """Whether a simulated table has one."""
        return self.used(needs) and (configured or not self.optional)
