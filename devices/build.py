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
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from devices.base import Device
from devices.cardreader.config import SECTION as CARDREADER
from devices.config import DevicesConfig, GameNeeds
from devices.meter.config import SECTION as METER
from devices.proto.serial_config import SerialConfig
from devices.sensors.config import GpioConfig
from devices.shaker.config import SECTION as SHAKER
from devices.shuffler.config import SECTION as SHUFFLER

# Each driver and wire simulator is imported where a table that has the device builds it, not
# here: a UTH table never loads the shaker's modules, nor a real table the simulators (issue 31:
# `import controller.daemon.main` used to pull every `devices` module, ~4 MB of the daemon).

# Mock pins for a simulated table without a [devices.gpio] section (BCM numbers, none shared).
SIM_PINS = {
    "chung": (4, 5, 6, 7, 8, 9, 10, 11),
    "off": (12, 13, 14, 15, 16, 17, 18, 19),
    "bet_sensor": (4, 5, 6, 7, 8, 9, 10),
    "lamp": (12, 13, 14, 15, 16, 17, 18),
}
SIM_KEYPAD = {"new_round": 20, "shake": 21, "deal": 22, "void": 23, "confirm": 24}
SIM_KEY_SWITCH = 27


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


def _uses(cfg: TableConfig, device: str) -> bool:
    return device not in cfg.needs.unused


def build_hardware(cfg: TableConfig) -> dict[str, Device]:
    """The real drivers for what the config wires (config validation made sure it is enough)."""
    d = cfg.devices
    devices: list[Device] = []
    if d.gpio is not None:
        from devices.sensors.gpio import GpioSensors

        devices.append(GpioSensors(d.gpio, boxes=cfg.boxes))
    if d.meter is not None:
        from devices.meter.driver import AlphaMeter

        devices.append(AlphaMeter(d.meter))
    if d.shaker is not None and _uses(cfg, "shaker"):
        from devices.shaker.driver import SerialShaker

        devices.append(SerialShaker(d.shaker, cut_die=cfg.needs.cut_die))
    if d.shuffler is not None and _uses(cfg, "shuffler"):
        from devices.shuffler.driver import SerialShuffler

        devices.append(SerialShuffler(d.shuffler, decks=cfg.needs.decks))
    if d.cardreader is not None:
        from devices.cardreader.driver import SerialCardReader

        devices.append(SerialCardReader(d.cardreader, boxes=cfg.boxes))
    return {dev.name: dev for dev in devices}


def sim_gpio(cfg: TableConfig) -> GpioConfig:
    """The table's [devices.gpio] on mock pins, or a full mock wiring when it has none."""
    if cfg.devices.gpio is not None:
        return replace(cfg.devices.gpio, pin_factory="mock")
    pins: dict[str, Any] = {g: SIM_PINS[g][: cfg.boxes] for g in cfg.needs.groups}
    return GpioConfig(
        pin_factory="mock",
        keypad=MappingProxyType(dict(SIM_KEYPAD)),
        table_closed=SIM_KEY_SWITCH,
        **pins,
    )


def _serial(cfg: SerialConfig | None, port: str, baud: int) -> SerialConfig:
    timeout = cfg.answer_timeout_ms if cfg is not None else 1000
    return SerialConfig(port=port, baud=baud, answer_timeout_ms=timeout)


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
    """Real drivers against pty simulators; `rng` seeds the simulated dice and shuffles."""
    from devices.meter.driver import AlphaMeter
    from devices.meter.wire import PtyMeterSim
    from devices.sensors.gpio import GpioSensors

    d = cfg.devices
    links = _links_dir(cfg)
    meter_sim = PtyMeterSim(rng=rng)
    meter_port = _plug(meter_sim, "meter", links)
    devices: list[Device] = [
        GpioSensors(sim_gpio(cfg), boxes=cfg.boxes),
        Simulated.attach(AlphaMeter(_serial(d.meter, meter_port, METER.baud)), meter_sim),
    ]
    needs = cfg.needs
    if _uses(cfg, "shaker"):
        from devices.shaker.driver import SerialShaker
        from devices.shaker.wire import PtyShakerSim

        sim = PtyShakerSim(cut_die=needs.cut_die, rng=rng)
        port = _plug(sim, "shaker", links)
        shaker = SerialShaker(_serial(d.shaker, port, SHAKER.baud), cut_die=needs.cut_die)
        devices.append(Simulated.attach(shaker, sim))
    if _uses(cfg, "shuffler"):
        from devices.shuffler.driver import SerialShuffler
        from devices.shuffler.wire import PtyShufflerSim

        sim2 = PtyShufflerSim(decks=needs.decks, rng=rng)
        port = _plug(sim2, "shuffler", links)
        shuffler = SerialShuffler(_serial(d.shuffler, port, SHUFFLER.baud), decks=needs.decks)
        devices.append(Simulated.attach(shuffler, sim2))
    if d.cardreader is not None:  # a configured reader: its simulator inserts the cards
        from devices.cardreader.driver import SerialCardReader
        from devices.cardreader.wire import PtyCardReaderSim

        sim3 = PtyCardReaderSim(rng=rng)
        port = _plug(sim3, "cardreader", links)
        reader = SerialCardReader(_serial(d.cardreader, port, CARDREADER.baud), boxes=cfg.boxes)
        devices.append(Simulated.attach(reader, sim3))
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
