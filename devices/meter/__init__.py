"""The progressive meter / table display.

    interface.py  Meter: display commands, the never-decreasing pool rule every driver obeys
    driver.py     AlphaMeter: the real sign over the Alpha protocol
    model.py      MeterModel: the sign (what it shows, what it has shown)
    sim.py        SimMeter: in-process, over the model
    wire.py       PtyMeterSim: an Alpha sign over the model behind a pty, for the real driver
    config.py     its [devices.meter] section
"""

from devices.kind import DeviceKind, Part, drawn
from devices.meter.config import SECTION
from devices.meter.interface import PORT_EVENTS, Meter, MeterView, display_command, format_cents

__all__ = ["DEVICE", "Meter", "MeterView", "display_command", "format_cents"]


DEVICE = DeviceKind(
    name="meter",
    section=SECTION,
    interface=Meter,
    driver=Part("devices.meter.driver:AlphaMeter"),
    sim=Part("devices.meter.sim:SimMeter"),
    wire_sim=Part("devices.meter.wire:PtyMeterSim", drawn()),
    events=(*Meter.EVENTS, *PORT_EVENTS),  # the driver reports its port going and coming back
    order=1,
    section_order=2,
)
