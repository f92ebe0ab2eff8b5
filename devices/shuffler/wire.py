"""The shuffler as hardware behind a pty pair: the framed protocol (docs/protocols.md) over the
hardware model (devices/shuffler/model.py), for the real driver to talk to."""

from __future__ import annotations

import random

from devices.errors import DeviceError
from devices.proto.wire_sim import FramedSim, ticks
from devices.shuffler.driver import UNREADABLE
from devices.shuffler.model import Failure, ShufflerFaults, ShufflerModel


class PtyShufflerSim(ShufflerFaults, FramedSim):
    def __init__(
        self,
        *,
        decks: int = 1,
        rng: random.Random | None = None,
        shuffle_time_s: float = 0.0,
        card_time_s: float = 0.0,
    ) -> None:
        super().__init__(rng)
        self.model = ShufflerModel(decks=decks, rng=self.rng)
        self.shuffle_time_s = shuffle_time_s
        self.card_time_s = card_time_s

    @property
    def order(self) -> list[str | None]:
        """The shuffled deck in play (tests read, and may spoil, a card of it)."""
        return self.model.order

    def _say_failure(self, failure: Failure) -> None:
        self.say("JAM" if failure.jam else "FAULT", failure.reason)

    # --- commands -------------------------------------------------------------------------------

    def _deck_arg(self, args: list[str]) -> int:
        deck = int(args[0])
        self.model.cards(deck)  # DeviceError (a ValueError: "bad arguments") if there is none
        return deck

    def on_SHUFFLE(self, args: list[str]) -> None:
        deck = self._deck_arg(args)
        for t in ticks(self.shuffle_time_s):
            self.later(t, self.say, "SHUFFLING", deck)
        self.later(self.shuffle_time_s, self._shuffled, deck)

    def _shuffled(self, deck: int) -> None:
        failure = self.model.shuffle(deck)
        if failure is not None:
            self._say_failure(failure)
        else:
            self.say("READY", deck)

    def on_DEAL(self, args: list[str]) -> None:
        count = int(args[0])
        if not 1 <= count <= 52:
            raise DeviceError("count")
        if not self.model.ready:
            self.later(0, self.say, "FAULT", "no shuffled deck")
            return
        self.later(self.card_time_s, self._deal, count)

    def _deal(self, count: int) -> None:
        if count <= 0 or not self.model.ready:
            return
        dealt = self.model.deal()
        if isinstance(dealt, Failure):
            self._say_failure(dealt)
            return
        self.say("CARD", dealt.index, dealt.card if dealt.card is not None else UNREADABLE)
        if dealt.card is None:
            return  # the reader stops at a card it cannot read
        self.later(self.card_time_s, self._deal, count - 1)

    def on_CHECK(self, args: list[str]) -> None:
        deck = self._deck_arg(args)
        tokens = [c if c is not None else UNREADABLE for c in self.model.cards(deck)]
        self.later(0, self.say, "DECK", deck, *tokens)

    def on_TEST(self, args: list[str]) -> None:
        self.later(0, self.say, "TEST", "OK")
