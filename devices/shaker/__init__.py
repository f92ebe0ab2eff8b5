"""The automatic dice shaker (Pai Gow).

    interface.py  DiceShaker: commands, events, the reports every implementation shares
    driver.py     SerialShaker: the real shaker over the framed serial protocol
    model.py      ShakerModel: the hardware (dice, cup, cover) and its injectable faults
    sim.py        SimShaker: in-process, over the model
    wire.py       PtyShakerSim: the model behind a pty, for the real driver
    config.py     its [devices.shaker] section
"""

from devices.kind import DeviceKind, Part, Setup, drawn
from devices.shaker.config import SECTION
from devices.shaker.interface import BOX_DICE, DiceShaker

__all__ = ["BOX_DICE", "DEVICE", "DiceShaker"]


def _dice(setup: Setup) -> dict[str, object]:
    return {"cut_die": setup.needs.cut_die}  # NSW 2.4: the fourth die for the cut


DEVICE = DeviceKind(
    name="shaker",
    section=SECTION,
    interface=DiceShaker,
    driver=Part("devices.shaker.driver:SerialShaker", _dice),
    sim=Part("devices.shaker.sim:SimShaker", drawn(_dice)),
    wire_sim=Part("devices.shaker.wire:PtyShakerSim", drawn(_dice)),
    events=DiceShaker.EVENTS,
    order=2,
    section_order=0,
)
