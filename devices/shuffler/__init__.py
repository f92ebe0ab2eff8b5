"""The card-reading shuffler (UTH).

    interface.py  Shuffler: commands, events, deck checks, the reports every implementation shares
    driver.py     SerialShuffler: the real shuffler over the framed serial protocol
    model.py      ShufflerModel: the hardware (decks, order, reader) and its injectable faults
    sim.py        SimShuffler: in-process, over the model
    wire.py       PtyShufflerSim: the model behind a pty, for the real driver
    config.py     its [devices.shuffler] section
"""

from devices.kind import DeviceKind, Part, Setup, drawn
from devices.shuffler.config import SECTION
from devices.shuffler.interface import STANDARD_DECK, DeckCheck, Shuffler, check_deck

__all__ = ["DEVICE", "STANDARD_DECK", "DeckCheck", "Shuffler", "check_deck"]


def _decks(setup: Setup) -> dict[str, object]:
    return {"decks": setup.needs.decks}


DEVICE = DeviceKind(
    name="shuffler",
    section=SECTION,
    interface=Shuffler,
    driver=Part("devices.shuffler.driver:SerialShuffler", _decks),
    sim=Part("devices.shuffler.sim:SimShuffler", drawn(_decks)),
    wire_sim=Part("devices.shuffler.wire:PtyShufflerSim", drawn(_decks)),
    events=Shuffler.EVENTS,
    order=3,
    section_order=1,
)
