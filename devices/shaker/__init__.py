"""The automatic dice shaker (Pai Gow).

    interface.py  DiceShaker: commands, events, the reports every implementation shares
    driver.py     SerialShaker: the real shaker over the framed serial protocol
    model.py      ShakerModel: the hardware (dice, cup, cover) and its injectable faults
    sim.py        SimShaker: in-process, over the model
    wire.py       PtyShakerSim: the model behind a pty, for the real driver
    config.py     its [devices.shaker] section
"""

from devices.shaker.interface import BOX_DICE, DiceShaker

__all__ = ["BOX_DICE", "DiceShaker"]
