"""build_simulators: the simulated devices a configured table uses."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from controller.config import load_config
from controller.rounds.base import Effect
from devices.base import DeviceEvent as Event
from devices.meter.sim import SimMeter
from devices.sensors.sim import SimSensors
from devices.shaker.sim import SimShaker
from devices.shuffler.sim import SimShuffler
from devices.sim import build_simulators

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_paigow_table() -> None:
    devices = build_simulators(load_config(EXAMPLES / "paigow-nsw.toml"))
    assert set(devices) == {"shaker", "sensors", "meter"}
    shaker = devices["shaker"]
    assert isinstance(shaker, SimShaker) and shaker.cut_die  # NSW 2.4
    sensors = devices["sensors"]
    assert isinstance(sensors, SimSensors) and sensors.boxes == 8
    nz = build_simulators(load_config(EXAMPLES / "paigow-nz.toml"))
    assert isinstance(nz["shaker"], SimShaker) and not nz["shaker"].cut_die


def test_uth_table_runs_device_effects() -> None:
    devices = build_simulators(load_config(EXAMPLES / "uth-nsw.toml"), rng=random.Random(1))
    assert set(devices) == {"shuffler", "sensors", "meter"}
    shuffler = devices["shuffler"]
    assert isinstance(shuffler, SimShuffler) and shuffler.decks == 2

    async def main() -> list[Event]:
        events: list[Event] = []
        for device in devices.values():
            await device.start(events.append)
        # What the daemon does with a device effect.
        effect = Effect("device", {"device": "shuffler", "command": "shuffle", "args": {}})
        await devices[effect.data["device"]].command(effect.data["command"], effect.data["args"])
        await devices["sensors"].command("lamps", {"box": 1, "state": "bet"})
        await devices["meter"].command("pool", {"amount": 5_000_000})
        for _ in range(5):
            await asyncio.sleep(0)
        assert isinstance(shuffler, SimShuffler)
        shuffler.dispense()
        for _ in range(5):
            await asyncio.sleep(0)
        for device in devices.values():
            await device.stop()
        return events

    events = asyncio.run(main())
    assert [e.kind for e in events] == ["shuffler.ready", "card.dispensed"]
    meter = devices["meter"]
    assert isinstance(meter, SimMeter) and meter.text == "$50,000.00"
    assert all(d.health().state == "stopped" for d in devices.values())
