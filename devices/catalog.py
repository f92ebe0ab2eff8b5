"""Every kind of device a table may run, by name, with the event kinds it can emit.

The event kinds are inside the journal's hash chain: each interface's `EVENTS` keeps them
byte-identical. Controller checks them against its registry of event kinds (every kind a device
emits is handled or deliberately ignored by each round machine); `devices` cannot import that
registry, so it offers this list instead. `dealer.<action>` stands for every keypad action.
"""

from __future__ import annotations

from devices.base import Device
from devices.cardreader import CardReader
from devices.cardreader.driver import SerialCardReader
from devices.meter import Meter
from devices.meter.driver import AlphaMeter
from devices.meter.sim import SimMeter
from devices.sensors import Sensors
from devices.sensors.gpio import GpioSensors
from devices.sensors.sim import SimSensors
from devices.shaker import DiceShaker
from devices.shaker.driver import SerialShaker
from devices.shaker.sim import SimShaker
from devices.shuffler import Shuffler
from devices.shuffler.driver import SerialShuffler
from devices.shuffler.sim import SimShuffler

INTERFACES: dict[str, type[Device]] = {
    "shaker": DiceShaker,
    "shuffler": Shuffler,
    "sensors": Sensors,
    "meter": Meter,
    "cardreader": CardReader,
}
# Every implementation of each interface: a driver may add events of its own (the meter's
# driver reports its port going and coming back).
IMPLEMENTATIONS: dict[str, tuple[type[Device], ...]] = {
    "shaker": (SerialShaker, SimShaker),
    "shuffler": (SerialShuffler, SimShuffler),
    "sensors": (GpioSensors, SimSensors),
    "meter": (AlphaMeter, SimMeter),
    "cardreader": (SerialCardReader,),  # the in-process table keys cards (`dealer.player_card`)
}


def event_kinds() -> dict[str, tuple[str, ...]]:
    """Device name -> every event kind any implementation of it can emit."""
    return {
        name: tuple(dict.fromkeys(k for cls in impls for k in cls.EVENTS))
        for name, impls in IMPLEMENTATIONS.items()
    }
