"""The table's GPIO inputs (chung sensors, OFF buttons, bet sensors, keypad, key switch) and
the jackpot lamps, seen as one device named "sensors".

    interface.py  Sensors: events, the lamps command, live input states, edge filtering
    gpio.py       GpioSensors: the real pins through gpiozero (mock pins in simulation)
    debounce.py   raw pin levels to clean edges (chatter, stuck inputs)
    sim.py        SimSensors: in-process, for the simulated players and dealer
    config.py     its [devices.gpio] section
"""

from devices.sensors.interface import LAMP_STATES, Sensors

__all__ = ["LAMP_STATES", "Sensors"]
