"""Every kind of device a table may run, by name, with the event kinds it can emit: read off
each device's descriptor (devices/kind.py, found by devices/kinds.py).

The event kinds are inside the journal's hash chain: each descriptor's `events` keeps them
byte-identical, and tests/devices/test_devices_layout.py checks them against every
implementation's `EVENTS`. Controller checks them against its registry of event kinds (every
kind a device emits is handled or deliberately ignored by each round machine); `devices` cannot
import that registry, so it offers this list instead. `dealer.<action>` stands for every keypad
action.

`implementations()` imports every driver and simulator: for tests and tools, never a daemon.
"""

from __future__ import annotations

from devices.base import Device
from devices.kinds import kinds


def interfaces() -> dict[str, type[Device]]:
    """Device name -> the interface every implementation of it subclasses."""
    return {k.name: k.interface for k in kinds()}


def implementations() -> dict[str, tuple[type[Device], ...]]:
    """Device name -> every implementation of its interface (driver, in-process simulator):
    a driver may add events of its own (the meter's reports its port going and coming back)."""
    return {k.name: tuple(p.load() for p in (k.driver, k.sim) if p is not None) for k in kinds()}


def event_kinds() -> dict[str, tuple[str, ...]]:
    """Device name -> every event kind any implementation of it can emit."""
    return {k.name: k.events for k in kinds()}
