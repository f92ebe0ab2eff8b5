"""A device is one descriptor (issue 30): a new kind of device is one package under `devices/`
whose `__init__.py` declares `DEVICE = DeviceKind(...)`, and the config reader, the builders
(real, pty, in-process), the catalog, the host's pty simulators and the udev rules pick it up
with no central list edited. The fake device here is written once, as that one file, into a
directory added to the `devices` package's path for the test."""

from __future__ import annotations

import asyncio
import gc
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import devices
from controller.config import load_config
from controller.config.load import config_json
from devices import catalog, pty_sim
from devices import kinds as kinds_module
from devices.build import build_hardware, build_pty, simulators
from devices.config import config_class
from devices.kinds import kind, kinds
from devices.proto.serial_config import SerialConfig
from devices.sim import build_simulators
from devices.udev import rules

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "paigow-nsw.toml"

# The whole of the fake device: its interface, driver, simulators and its one descriptor.
BELL = '''
"""A table bell (a fake device for tests/devices/test_device_descriptor.py)."""

from typing import Any, ClassVar

from devices.base import Device
from devices.kind import DeviceKind, Part, Setup
from devices.proto.serial_config import SerialConfig, SerialSection
from devices.proto.wire_sim import LoopbackPlug


class Bell(Device):
    COMMANDS: ClassVar[tuple[str, ...]] = ("ring",)
    EVENTS: ClassVar[tuple[str, ...]] = ("bell.rung",)

    def __init__(self, name: str = "bell", *, boxes: int) -> None:
        super().__init__(name)
        self.boxes = boxes

    async def _cmd_ring(self, args: Any) -> None:
        return None

    async def selftest(self) -> dict[str, Any]:
        return {"ok": True}


class SerialBell(Bell):
    EVENTS: ClassVar[tuple[str, ...]] = ("bell.rung", "bell.fault")

    def __init__(self, cfg: SerialConfig, *, boxes: int) -> None:
        super().__init__(boxes=boxes)
        self.cfg = cfg


class SimBell(Bell):
    pass


class PtyBellSim(LoopbackPlug):
    pass


def _boxes(setup: Setup) -> dict[str, object]:
    return {"boxes": setup.boxes}


DEVICE = DeviceKind(
    name="bell",
    section=SerialSection("bell", "/dev/tablectl-bell", 9600),
    interface=Bell,
    driver=Part("devices.bell:SerialBell", _boxes),
    sim=Part("devices.bell:SimBell", _boxes),
    wire_sim=Part("devices.bell:PtyBellSim"),
    events=("bell.rung", "bell.fault"),
    order=9,
    section_order=9,
)
'''


@pytest.fixture
def bell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fake device's package, `devices.bell`, for the test's duration."""
    extra = tmp_path / "extra"
    (extra / "bell").mkdir(parents=True)
    (extra / "bell" / "__init__.py").write_text(textwrap.dedent(BELL))
    monkeypatch.setattr(devices, "__path__", [*devices.__path__, str(extra)])
    yield tmp_path
    sys.modules.pop("devices.bell", None)
    # Nothing of the bell outlives the test (the caches hold its descriptor, and through it its
    # classes, which every later `Device.__subclasses__()` would list: tests/rounds' contract).
    kinds_module._found.cache_clear()
    config_class.cache_clear()
    gc.collect()


def table(tmp_path: Path, section: str = '[devices.bell]\nport = "/dev/ttyBELL"\n') -> object:
    path = tmp_path / "table.toml"
    path.write_text(EXAMPLE.read_text() + "\n" + section)
    cfg = load_config(path)
    return replace(cfg, service=replace(cfg.service, runtime_dir=tmp_path / "run"))


def test_without_the_package_there_is_no_bell() -> None:
    # The test below sees the bell because of its one file, not because it was there already.
    assert "bell" not in {k.name for k in kinds()}
    assert "bell" not in pty_sim.names()


def test_one_descriptor_adds_a_device_everywhere(bell: Path) -> None:
    assert [k.name for k in kinds()][-1] == "bell"
    assert kind("bell").section.name == "bell"

    # config: its section is read (and checked: an unknown key is refused), and shown
    cfg = table(bell)
    assert cfg.devices.bell == SerialConfig(port="/dev/ttyBELL", baud=9600)  # type: ignore[attr-defined]
    assert list(config_json(cfg)["devices"])[-1] == "bell"
    with pytest.raises(ValueError, match=r"devices\.bell\.volume: unknown key"):
        table(bell, "[devices.bell]\nvolume = 11\n")

    # build: the real driver on the configured port, with its options from the table
    real = build_hardware(cfg)
    assert type(real["bell"]).__name__ == "SerialBell"
    assert real["bell"].cfg.port == "/dev/ttyBELL"  # type: ignore[attr-defined]
    assert real["bell"].boxes == cfg.boxes  # type: ignore[attr-defined]

    # the in-process simulators (`--simulate`)
    assert type(build_simulators(cfg)["bell"]).__name__ == "SimBell"

    # the pty simulators: the real driver against its wire simulator behind a udev-like link
    built = build_pty(cfg)
    try:
        assert type(simulators(built)["bell"]).__name__ == "PtyBellSim"
        assert built["bell"].cfg.port == str(bell / "run" / "pty" / "tablectl-bell")  # type: ignore[attr-defined]
    finally:
        for sim in simulators(built).values():
            asyncio.run(sim.close())

    # the catalog: its interface, implementations and event kinds (the hash chain's)
    assert catalog.interfaces()["bell"].__name__ == "Bell"
    assert [c.__name__ for c in catalog.implementations()["bell"]] == ["SerialBell", "SimBell"]
    assert catalog.event_kinds()["bell"] == ("bell.rung", "bell.fault")

    # the host's pty simulators (`python -m devices.pty_sim --bell LINK`)
    assert pty_sim.parser().parse_args(["--bell", "/tmp/x"]).bell == "/tmp/x"
    sims = pty_sim.make_sims({"bell": "/tmp/x"})
    try:
        assert type(sims["bell"]).__name__ == "PtyBellSim"
    finally:
        asyncio.run(sims["bell"].close())

    # the udev rules of a serial device
    with_ids = table(bell, '[devices.bell]\nusb_vendor = "0403"\nusb_product = "6001"\n')
    assert 'SYMLINK+="tablectl-bell"' in rules(with_ids.devices)  # type: ignore[attr-defined]
