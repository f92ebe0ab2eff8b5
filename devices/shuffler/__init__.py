"""The card-reading shuffler (UTH).

    interface.py  Shuffler: commands, events, deck checks, the reports every implementation shares
    driver.py     SerialShuffler: the real shuffler over the framed serial protocol
    model.py      ShufflerModel: the hardware (decks, order, reader) and its injectable faults
    sim.py        SimShuffler: in-process, over the model
    wire.py       PtyShufflerSim: the model behind a pty, for the real driver
    config.py     its [devices.shuffler] section
"""

from devices.shuffler.interface import STANDARD_DECK, DeckCheck, Shuffler, check_deck

__all__ = ["STANDARD_DECK", "DeckCheck", "Shuffler", "check_deck"]
