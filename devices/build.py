"""Which device objects a configured table runs with.

    build_hardware(cfg)        the real drivers on the configured ports and pins
    build_pty(cfg, rng)        the same real drivers, each against a wire-level simulator on a
                               pty pair (`tablectld --simulate=pty`); GPIO on mock pins
    build_simulators(cfg)      the in-process simulators (devices/sim.py; `--simulate`)

`cfg` is anything shaped like `TableConfig` below (controller/config/ gives the real one).

With `build_pty` every serial driver starts its simulator before opening the port and closes it
after (`Simulated`), so the daemon's start/stop order needs no change. Each driver opens a
udev-like symlink to its pty, `<runtime_dir>/pty/tablectl-<device>` (the pty itself when that
directory cannot be made), so a simulator can be unplugged and replugged behind it
(`tablectl devices fault shaker unplug`). `simulators(devices)` finds them again (technician
fault injection, tests).
"""

from __future__ import annotations

import contextlib
import random
from pathlib import Path
from typing import Any, Protocol

from devices.base import Device
from devices.config import DevicesConfig, GameNeeds
from devices.kind import Setup
from devices.kinds import kinds

# Each driver and wire simulator is imported where a table that has the device builds it
# (its descriptor's `Part`, devices/kind.py), not here: a UTH table never loads the shaker's
# modules, nor a real table the simulators (issue 31: `import controller.daemon.main` used to
# pull every `devices` module, ~4 MB of the daemon).


class _Service(Protocol):
    @property
    def runtime_dir(self) -> Path: ...


class TableConfig(Protocol):
    """What building a table's devices reads of its configuration (controller's TableConfig
    has it: `devices` never imports `controller`)."""

    @property
    def devices(self) -> DevicesConfig: ...

    @property
    def boxes(self) -> int: ...

    @property
    def needs(self) -> GameNeeds: ...

    @property
    def service(self) -> _Service: ...


def setup(cfg: TableConfig, rng: random.Random | None = None) -> Setup:
    return Setup(needs=cfg.needs, boxes=cfg.boxes, rng=rng)


def build_hardware(cfg: TableConfig) -> dict[str, Device]:
    """The real drivers for what the config wires (config validation made sure it is enough):
    each configured device the game uses."""
    how = setup(cfg)
    devices: list[Device] = []
    for kind in kinds():
        section = cfg.devices.section(kind.section.name)
        if section is not None and kind.used(cfg.needs):
            devices.append(kind.driver.make(how, section))
    return {dev.name: dev for dev in devices}


def _plug(sim: Any, name: str, links: Path | None) -> str:
    """The path the driver opens: a symlink to the simulator's pty, as udev would make."""
    if links is None:
        return str(sim.path)
    link = str(links / f"tablectl-{name}")
    sim.plug_at(link)
    return link


def _links_dir(cfg: TableConfig) -> Path | None:
    links = cfg.service.runtime_dir / "pty"
    with contextlib.suppress(OSError):
        links.mkdir(parents=True, exist_ok=True)
        return links
    return None


def build_pty(cfg: TableConfig, rng: random.Random | None = None) -> dict[str, Device]:
    """Real drivers against pty simulators; `rng` seeds the simulated dice and shuffles. A
    device without a wire simulator (the sensors) runs its driver on the simulated section
    (gpiozero's mock pins)."""
    how = setup(cfg, rng)
    links = _links_dir(cfg)
    devices: list[Device] = []
    for kind in kinds():
        given = cfg.devices.section(kind.section.name)
        if not kind.simulated(given is not None, cfg.needs):
            continue
        if kind.wire_sim is None:
            devices.append(kind.driver.make(how, kind.section.for_simulator(given, how, None)))
            continue
        sim = kind.wire_sim.make(how)
        port = _plug(sim, kind.name, links)
        driver = kind.driver.make(how, kind.section.for_simulator(given, how, port))
        devices.append(Simulated.attach(driver, sim))
    return {dev.name: dev for dev in devices}


class Simulated:
    """Starts a wire simulator before its driver opens the port; closes it after (but not when
    the driver only lets go of the port for a service test: the hardware stays on)."""

    @staticmethod
    def attach(device: Device, sim: Any) -> Device:
        open_, close = device._open, device._close

        async def _open() -> None:
            if not device.in_service_test:
                await sim.start()
            await open_()

        async def _close() -> None:
            try:
                await close()
            finally:
                if not device.in_service_test:
                    await sim.close()

        device._open = _open  # type: ignore[method-assign]
        device._close = _close  # type: ignore[method-assign]
        device.simulator = sim  # type: ignore[attr-defined]
        return device


def simulators(devices: dict[str, Device]) -> dict[str, Any]:
    """The wire simulators behind the devices of a `build_pty` table, by device name."""
    return {n: d.simulator for n, d in devices.items() if hasattr(d, "simulator")}
