"""The card reader as hardware behind a pty pair: the framed protocol (docs/protocols.md) for the
real driver to talk to. A test (or `python -m devices.pty_sim --cardreader LINK`) inserts cards;
faults: an unreadable card, a malformed id, the reader's own fault, and the WireSim's (drop,
corrupt, no answer, unplug / replug)."""

from __future__ import annotations

import random

from devices.proto.wire_sim import FramedSim


class PtyCardReaderSim(FramedSim):
    def __init__(self, *, rng: random.Random | None = None) -> None:
        super().__init__(rng)
        self.fault: str | None = None

    def insert(self, box: int, card: str) -> None:
        """A card inserted and read (its id as the card holds it: a bad one is sent as is)."""
        self.say("CARD", box, card)

    def insert_unreadable(self, box: int) -> None:
        self.say("UNREADABLE", box)

    def remove(self, box: int) -> None:
        self.say("REMOVED", box)

    def fail(self, reason: str = "head dirty") -> None:
        self.fault = reason
        self.say("FAULT", reason)

    def on_STATUS(self, args: list[str]) -> None:
        self.say("STATUS", *(("FAULT", self.fault) if self.fault else ("READY",)))
