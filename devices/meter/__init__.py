"""The progressive meter / table display.

    interface.py  Meter: display commands, the never-decreasing pool rule every driver obeys
    driver.py     AlphaMeter: the real sign over the Alpha protocol
    model.py      MeterModel: the sign (what it shows, what it has shown)
    sim.py        SimMeter: in-process, over the model
    wire.py       PtyMeterSim: an Alpha sign over the model behind a pty, for the real driver
    config.py     its [devices.meter] section
"""

from devices.meter.interface import Meter, MeterView, display_command, format_cents

__all__ = ["Meter", "MeterView", "display_command", "format_cents"]
