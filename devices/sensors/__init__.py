"""The table's GPIO inputs (chung sensors, OFF buttons, bet sensors, keypad, key switch) and
the jackpot lamps, seen as one device named "sensors".

    interface.py  Sensors: events, the lamps command, live input states, edge filtering
    gpio.py       GpioSensors: the real pins through gpiozero (mock pins in simulation)
    debounce.py   raw pin levels to clean edges (chatter, stuck inputs)
    sim.py        SimSensors: in-process, for the simulated players and dealer
    config.py     its [devices.gpio] section
"""

from devices.kind import DeviceKind, Part, box_count
from devices.sensors.config import SECTION
from devices.sensors.interface import LAMP_STATES, Sensors

__all__ = ["DEVICE", "LAMP_STATES", "Sensors"]


# No wire simulator: under `--simulate=pty` the real driver runs on gpiozero's mock pins.
DEVICE = DeviceKind(
    name="sensors",
    section=SECTION,
    interface=Sensors,
    driver=Part("devices.sensors.gpio:GpioSensors", box_count),
    sim=Part("devices.sensors.sim:SimSensors", box_count),
    wire_sim=None,
    events=Sensors.EVENTS,
    order=0,
    section_order=4,
)
