"""The `[devices]` section of table.toml: every device's own section, read by that device.

    [devices]              simulate
    [devices.<section>]    each device's descriptor names its section and reader
                           (devices/kind.py; devices/kinds.py finds the descriptors):
                           shaker, shuffler, meter, cardreader (serial, devices/proto/
                           serial_config.py), gpio (the sensors, devices/sensors/config.py)

`read_devices(root, needs)` reads them all into a `DevicesConfig`, recording every problem in
the file's one error list (shared/config_reader.py). What the configured game asks of the
devices comes in as `GameNeeds`, which controller/config/ derives from the game's section:
this package knows devices, not games. A new device is a package with a descriptor; nothing
here changes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, make_dataclass
from typing import Any

from devices.kind import DeviceKind, GameNeeds
from devices.kinds import by_section
from devices.proto.serial_config import SerialSection
from shared.config_reader import Table

__all__ = ["SERIAL_DEFAULTS", "DevicesConfig", "GameNeeds", "config_class", "read_devices"]

# device -> (default port, baud): the names udev makes and the daemon's unit allows
SERIAL_DEFAULTS = {
    k.section.name: (k.section.port, k.section.baud)
    for k in by_section()
    if isinstance(k.section, SerialSection)
}


@dataclass(frozen=True)
class DevicesConfig:
    """`simulate`, and each device's section as a field of its name (`cfg.devices.shaker`,
    None when the table has none): the fields come from the descriptors (`config_class`)."""

    simulate: bool = False

    def section(self, name: str) -> Any:
        """The configured section `[devices.<name>]`; None when the table has none."""
        return getattr(self, name, None)


@functools.cache
def config_class(found: tuple[DeviceKind, ...]) -> type[DevicesConfig]:
    """`DevicesConfig` with a field per device section, in the sections' order."""
    fields_ = [(k.section.name, Any, None) for k in found]
    made: type[DevicesConfig] = make_dataclass(
        "DevicesConfig", fields_, bases=(DevicesConfig,), frozen=True
    )
    made.__module__ = __name__
    return made


def read_devices(root: Table, needs: GameNeeds | None) -> DevicesConfig:
    """`[devices]` and its sub-sections; `needs` is None when the game is unknown."""
    t = root.table("devices")
    if t is None:
        t = Table(root.errors, "devices", {})
    simulate = t.boolean("simulate", False)
    found = by_section()
    sections: dict[str, Any] = {}
    tables: dict[str, Table] = {}
    for kind in found:
        name = kind.section.name
        st = t.table(name)
        if st is None:
            continue
        if needs is not None and kind.name in needs.unused:
            t.error(name, f"not used by {needs.unused[kind.name]}; remove [devices.{name}]")
        sections[name], tables[name] = kind.section.read(st), st
    t.done()

    if needs is not None:
        for kind in found:
            name = kind.section.name
            if name in sections:
                kind.section.check(root, tables[name], sections[name], needs)
    if simulate is False and needs is not None:
        # On real hardware the devices the game relies on must be configured.
        for device in needs.required:
            if device not in sections:
                t.error(
                    device, f"required for game {needs.game} on real hardware (or simulate = true)"
                )
        for kind in found:
            kind.section.check_real(root, t, sections.get(kind.section.name), needs)
    return config_class(found)(simulate=simulate, **sections)
