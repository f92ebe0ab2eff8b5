"""The kinds of device a table may run: the `DEVICE` descriptor (devices/kind.py) of each
package directly under `devices/` that declares one, in their `order`.

Found, not listed: a new device is a package with a descriptor in its `__init__.py`. Only the
packages' `__init__` modules are imported here (interfaces and config sections, which reading
the config needs anyway), never a driver or a simulator (issue 31).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil

import devices
from devices.errors import DevicesError
from devices.kind import DeviceKind


def kinds() -> tuple[DeviceKind, ...]:
    """Every kind of device, in start order."""
    return _found(tuple(devices.__path__))


def by_section() -> tuple[DeviceKind, ...]:
    """Every kind of device, in the order of their sections in `[devices]`."""
    return tuple(sorted(kinds(), key=lambda k: (k.section_order, k.name)))


def kind(name: str) -> DeviceKind:
    for k in kinds():
        if k.name == name:
            return k
    raise DevicesError(f"no device {name!r} (one of {', '.join(k.name for k in kinds())})")


@functools.cache
def _found(path: tuple[str, ...]) -> tuple[DeviceKind, ...]:
    found: list[DeviceKind] = []
    for info in pkgutil.iter_modules(list(path), prefix="devices."):
        if info.ispkg:
            descriptor = getattr(importlib.import_module(info.name), "DEVICE", None)
            if isinstance(descriptor, DeviceKind):
                found.append(descriptor)
    names = [k.name for k in found]
    if len(set(names)) != len(names):
        raise DevicesError(f"two device packages declare the same device: {sorted(names)}")
    return tuple(sorted(found, key=lambda k: (k.order, k.name)))
