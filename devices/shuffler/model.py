"""The card-reading shuffler as hardware: one or two physical decks (UTH rule 4.2), the shuffled
order of the deck in play, and a reader that names every card it passes.

One model behind both simulators (sim.py in-process, wire.py behind a pty), so a fault behaves
the same whichever one runs, and refuses the same way (DeviceError). Fault injection:
    inject_missing / inject_foreign / inject_duplicate / inject_unreadable, restore_deck
        change a deck's physical contents: seen at its next shuffle, and at once by a deck check
    fail_next("jam"|"fault", at="shuffle"|"dispense")   the next shuffle or card fails so
    stack_next(cards)   tests: the next shuffle puts these cards first, in order
Without `deck`, an injection changes the deck last shuffled (deck 1 before any shuffle).
Randomness is the OS CSPRNG unless a seeded `random.Random` is passed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from devices.errors import DeviceError
from devices.shuffler.interface import STANDARD_DECK
from devices.simbase import default_rng

UNREADABLE = None  # a card the reader cannot identify, in a deck's contents


@dataclass(frozen=True)
class Failure:
    """An injected failure that just happened: a jam (UTH rule 12.1) or a malfunction (12.2)."""

    jam: bool
    reason: str


@dataclass(frozen=True)
class Dealt:
    """A card out of the shoe: its index in the shuffle and the face (None: unreadable)."""

    index: int
    card: str | None


class ShufflerModel:
    def __init__(self, *, decks: int = 1, rng: random.Random | None = None) -> None:
        self.decks = decks
        self.rng = rng if rng is not None else default_rng()
        self.contents: dict[int, list[str | None]] = {
            d: list(STANDARD_DECK) for d in range(1, decks + 1)
        }
        self.deck: int | None = None  # the deck last shuffled
        self.ready = False  # a shuffled deck is ready to deal from
        self.order: list[str | None] = []  # the shuffled deck in play
        self.next_index = 0
        self._pending: list[tuple[bool, str, str]] = []  # (jam, at, reason)
        self._stacked: list[list[str]] = []

    # --- fault injection ------------------------------------------------------------------------

    def cards(self, deck: int | None = None) -> list[str | None]:
        d = deck if deck is not None else (self.deck or 1)
        if d not in self.contents:
            raise DeviceError(f"shuffler: no deck {d!r} (decks: 1..{self.decks})")
        return self.contents[d]

    def inject_missing(self, card: str | None = None, deck: int | None = None) -> str:
        cards = self.cards(deck)
        if card is None:
            card = self.rng.choice([c for c in cards if c is not None])
        if card not in cards:
            raise DeviceError(f"shuffler: card {card!r} is not in the deck")
        cards.remove(card)
        return card

    def inject_foreign(self, card: str = "Jk", deck: int | None = None) -> str:
        """Add a card that does not belong (default a joker)."""
        self.cards(deck).append(card)
        return card

    def inject_duplicate(self, card: str | None = None, deck: int | None = None) -> str:
        """Add a second copy of a card (a card from another deck with the same face)."""
        cards = self.cards(deck)
        if card is None:
            card = self.rng.choice([c for c in cards if c is not None])
        cards.append(card)
        return card

    def inject_unreadable(self, deck: int | None = None) -> None:
        """Replace a random card with one the reader cannot identify."""
        cards = self.cards(deck)
        cards[self.rng.randrange(len(cards))] = UNREADABLE

    def restore_deck(self, deck: int | None = None) -> None:
        self.cards(deck)[:] = STANDARD_DECK

    def stack_next(self, top: Sequence[str]) -> None:
        """Tests: the next shuffle puts these cards first, in this order (the rest shuffled as
        usual), e.g. to force a jackpot hit (controller/sim/uth.py `royal_flush_top`). Only a
        test calls it; the shuffle itself stays the CSPRNG's."""
        if len(set(top)) != len(top):
            raise DeviceError(f"shuffler: stacked cards repeat: {list(top)}")
        self._stacked.append(list(top))

    def fail_next(self, kind: str = "jam", *, at: str = "shuffle", reason: str = "") -> None:
        if kind not in ("jam", "fault") or at not in ("shuffle", "dispense"):
            raise DeviceError(f"shuffler: cannot inject {kind!r} at {at!r}")
        jam = kind == "jam"
        self._pending.append((jam, at, reason or ("card jam" if jam else "malfunction")))

    def _take_fault(self, at: str) -> Failure | None:
        for i, (jam, where, reason) in enumerate(self._pending):
            if where == at:
                del self._pending[i]
                self.ready = False
                return Failure(jam, reason)
        return None

    # --- the machine ----------------------------------------------------------------------------

    def shuffle(self, deck: int) -> Failure | None:
        """Shuffle `deck` (its contents as they are now); a Failure if one was injected."""
        cards = self.cards(deck)
        failure = self._take_fault("shuffle")
        if failure is not None:
            return failure
        order = list(cards)
        self.rng.shuffle(order)
        if self._stacked:
            top = self._stacked.pop(0)
            order = [*top, *(c for c in order if c not in top)]
        self.deck, self.order, self.next_index, self.ready = deck, order, 0, True
        return None

    def deal(self) -> Dealt | Failure:
        """The next card of the deck in play (the caller checks `ready` first). The reader
        stops at a card it cannot read, and at the end of the deck."""
        failure = self._take_fault("dispense")
        if failure is not None:
            return failure
        if self.next_index >= len(self.order):
            self.ready = False
            return Failure(False, "deck exhausted")
        index = self.next_index
        card = self.order[index]
        self.next_index += 1
        if card is None:
            self.ready = False
        return Dealt(index, card)

    @property
    def remaining(self) -> int:
        return len(self.order) - self.next_index


class ShufflerFaults:
    """The model's fault injection on a simulator that holds one as `model`: both simulators
    answer to the same names (tests, `tablectl devices fault`)."""

    model: ShufflerModel

    @property
    def contents(self) -> dict[int, list[str | None]]:
        return self.model.contents

    def inject_missing(self, card: str | None = None, deck: int | None = None) -> str:
        return self.model.inject_missing(card, deck)

    def inject_foreign(self, card: str = "Jk", deck: int | None = None) -> str:
        return self.model.inject_foreign(card, deck)

    def inject_duplicate(self, card: str | None = None, deck: int | None = None) -> str:
        return self.model.inject_duplicate(card, deck)

    def inject_unreadable(self, deck: int | None = None) -> None:
        self.model.inject_unreadable(deck)

    def restore_deck(self, deck: int | None = None) -> None:
        self.model.restore_deck(deck)

    def stack_next(self, top: Sequence[str]) -> None:
        self.model.stack_next(top)

    def fail_next(self, kind: str = "jam", *, at: str = "shuffle", reason: str = "") -> None:
        self.model.fail_next(kind, at=at, reason=reason)
