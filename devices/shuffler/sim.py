"""The shuffler simulated in-process: the driver side of `Shuffler` over the hardware model.

Faults are the model's (devices/shuffler/model.py: deck contents, jams and malfunctions,
stacked decks for tests), plus `no_answer = True`: commands are never answered, and after
`answer_timeout_s` the driver side reports shuffler.fault "no answer". The simulated dealer
takes each card with `dispense()`. All timers run on the daemon's loop; nothing blocks.
"""

from __future__ import annotations

import random
from typing import Any

from devices.base import DeviceError, State
from devices.shuffler.interface import Shuffler, check_deck
from devices.shuffler.model import Failure, ShufflerFaults, ShufflerModel
from devices.simbase import Timers


class SimShuffler(ShufflerFaults, Shuffler):
    def __init__(
        self,
        name: str = "shuffler",
        *,
        decks: int = 1,
        rng: random.Random | None = None,
        shuffle_time_s: float = 0.0,
        answer_timeout_s: float = 1.0,
    ) -> None:
        super().__init__(name, decks=decks)
        self.model = ShufflerModel(decks=decks, rng=rng)
        self.rng = self.model.rng
        self.shuffle_time_s = shuffle_time_s
        self.answer_timeout_s = answer_timeout_s
        self.no_answer = False
        self._timers = Timers()

    def _timed_out(self) -> None:
        self._report_fault("no answer", offline=True)

    def _failed(self, failure: Failure) -> None:
        (self._report_jam if failure.jam else self._report_fault)(failure.reason)

    # --- commands -------------------------------------------------------------------------------

    async def _close(self) -> None:
        self._timers.cancel()

    async def shuffle(self, deck: int) -> None:
        if self.no_answer:
            self._timers.later(self.answer_timeout_s, self._timed_out)
            return
        self._timers.later(self.shuffle_time_s, self._shuffled, deck)

    def _shuffled(self, deck: int) -> None:
        self._seen()
        failure = self.model.shuffle(deck)
        if failure is not None:
            self._failed(failure)
        else:
            self._report_ready(deck)

    async def deck_check(self, deck: int) -> None:
        if self.no_answer:
            self._timers.later(self.answer_timeout_s, self._timed_out)
            return
        self._seen()
        self._report_check(check_deck(self.model.cards(deck), deck))

    async def dispense_cards(self, count: int) -> None:
        for _ in range(count):
            if self.dispense() is None or self.state != State.READY:
                return  # a fault ends the deal; the round machine decides (UTH 12.2)

    def dispense(self) -> str | None:
        """The simulated dealer takes the next card: card.dispensed (or a fault) follows.

        Returns the card token, None when nothing came out.
        """
        if not self.started:
            raise DeviceError(f"{self.name}: not started")
        if self.deck_in_play is None or self.state != State.READY:
            raise DeviceError(f"{self.name}: no shuffled deck ready to dispense ({self.state})")
        if self.no_answer:
            self.state = State.BUSY
            self._timers.later(self.answer_timeout_s, self._timed_out)
            return None
        dealt = self.model.deal()
        if isinstance(dealt, Failure):
            self._failed(dealt)
            return None
        self._seen()
        if dealt.card is None:
            self.counters["unreadable"] += 1
            self._report_fault(f"unreadable card at index {dealt.index}")
            return None
        self._report_card(dealt.card, dealt.index)
        return dealt.card

    @property
    def remaining(self) -> int:
        return self.model.remaining

    async def selftest(self) -> dict[str, Any]:
        if self.no_answer:
            return {"ok": False, "error": "no answer"}
        deck = self.deck_in_play or self.next_deck()
        result = check_deck(self.model.cards(deck), deck)
        return {"ok": result.ok, "deck_check": result.as_json()}
