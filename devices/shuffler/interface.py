"""The card-reading shuffler (UTH): shuffles, reports every dispensed card, checks the deck.

Commands: shuffle {deck?}       shuffle a deck; without `deck`, the next one in turn (rule 4.2:
                                with two decks one is shuffled while the other is in play)
          deck_check {deck?}    read every card of a deck (default: the deck in play)
          dispense {count, deck?}   deal `count` cards of the deck in play (the round's deal)
Events:   shuffler.ready {deck}            the deck is shuffled and dispensing may start
          card.dispensed {card, index}     every card out, in order; `card` in "As"/"Td"
                                           notation, `index` 0 for the first card of a shuffle
          deck.check {deck, ok, count, missing, extra, duplicate, unreadable}
          shuffler.jam {reason}            incomplete shuffle / jam (rule 12.1: reshuffle)
          shuffler.fault {reason}          malfunction, no answer (rule 12.2 mid-round: void)

A card the reader sees that is not one of the 52 (a joker, a card of another game) is reported as
dispensed with the token the reader gave; the round machine treats it as a foreign card (11.7).

A shuffler that stopped answering is asked to shuffle again after a growing pause (`retry_delay`:
2 s doubling to 60 s), not at once: the round machine answers every failed shuffle with another
(12.1), and each failure is journaled, so a dead shuffler would have added a record a second
all night. Any answer from it (a deck ready, a card, a check, a jam or fault it reports itself)
ends the pauses.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from devices.base import Device, DeviceError, State, arg_int

# The faces a card reader reports, in deck order 2c 2d 2h 2s 3c .. As (rank-major, as UTH's
# cards.full_deck orders them; tests/devices check the two agree).
STANDARD_DECK: tuple[str, ...] = tuple(r + s for r in "23456789TJQKA" for s in "cdhs")
_STANDARD = frozenset(STANDARD_DECK)


@dataclass(frozen=True)
class DeckCheck:
    """What a deck check found. Faces are in deck order (2c .. As) for stable output."""

    deck: int
    count: int  # cards read, readable or not
    missing: tuple[str, ...]
    extra: tuple[str, ...]  # tokens that are not one of the 52 cards (foreign)
    duplicate: tuple[str, ...]  # cards read more than once
    unreadable: int

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.duplicate or self.unreadable)

    def as_json(self) -> dict[str, Any]:
        return {
            "deck": self.deck,
            "ok": self.ok,
            "count": self.count,
            "missing": list(self.missing),
            "extra": list(self.extra),
            "duplicate": list(self.duplicate),
            "unreadable": self.unreadable,
        }


def check_deck(cards: Iterable[str | None], deck: int = 1) -> DeckCheck:
    """Compare what the reader saw (None: unreadable) with one 52-card deck (UTH 3.1, 11.7)."""
    seen = list(cards)
    faces = Counter(c for c in seen if c is not None)
    order = {c: i for i, c in enumerate(STANDARD_DECK)}
    return DeckCheck(
        deck=deck,
        count=len(seen),
        missing=tuple(c for c in STANDARD_DECK if c not in faces),
        extra=tuple(sorted(c for c in faces if c not in _STANDARD)),
        duplicate=tuple(
            sorted((c for c, n in faces.items() if n > 1 and c in _STANDARD), key=order.__getitem__)
        ),
        unreadable=sum(1 for c in seen if c is None),
    )


def retry_delay(unanswered: int, base_s: float, cap_s: float) -> float:
    """Seconds to wait before the next shuffle after `unanswered` shuffles in a row got no
    answer: none after an answer, then base, 2 x base, 4 x base ... up to cap."""
    if unanswered <= 0:
        return 0.0
    return min(cap_s, base_s * 2 ** min(unanswered - 1, 30))


class Shuffler(Device):
    retry_base_s = 2.0
    retry_cap_s = 60.0
    COMMANDS: ClassVar[tuple[str, ...]] = ("shuffle", "deck_check", "dispense")
    EVENTS: ClassVar[tuple[str, ...]] = (
        "shuffler.ready",
        "card.dispensed",
        "deck.check",
        "shuffler.jam",
        "shuffler.fault",
    )

    def __init__(self, name: str = "shuffler", *, decks: int = 1) -> None:
        if decks not in (1, 2):
            raise DeviceError(f"{name}: decks must be 1 or 2 (rule 4.2), got {decks!r}")
        super().__init__(name)
        self.decks = decks
        self.deck_in_play: int | None = None  # the last deck reported ready
        self.unanswered = 0  # commands in a row the shuffler did not answer
        self._delayed: asyncio.TimerHandle | None = None  # a shuffle waiting for its retry
        self._delayed_deck = 0  # the deck of that shuffle
        self._retries: set[asyncio.Task[None]] = set()

    async def stop(self) -> None:
        if self._delayed is not None:
            self._delayed.cancel()
            self._delayed = None
        await super().stop()

    def next_deck(self) -> int:
        """The deck to shuffle next: the one not in play when two alternate (rule 4.2)."""
        if self.decks == 1 or self.deck_in_play is None:
            return 1
        return 2 if self.deck_in_play == 1 else 1

    def _deck_arg(self, command: str, args: Mapping[str, Any], default: int) -> int:
        if "deck" not in args or args["deck"] is None:
            return default
        return arg_int(self.name, command, args, "deck", lo=1, hi=self.decks)

    async def _cmd_shuffle(self, args: Mapping[str, Any]) -> None:
        if self.state == State.BUSY or self._delayed is not None:
            raise DeviceError(f"{self.name}.shuffle: a shuffle is already in progress")
        deck = self._deck_arg("shuffle", args, self.next_deck())
        self.counters["shuffles"] += 1
        delay = retry_delay(self.unanswered, self.retry_base_s, self.retry_cap_s)
        if delay > 0:
            # Still OFFLINE in `health` while it waits: that is what it is.
            self.counters["shuffles_delayed"] += 1
            self._delayed_deck = deck
            self._delayed = asyncio.get_running_loop().call_later(delay, self._retry, deck)
            return
        self.state = State.BUSY
        await self.shuffle(deck)

    def _retry(self, deck: int) -> None:
        self._delayed = None
        if not self.started:
            return
        self.state = State.BUSY
        task = asyncio.ensure_future(self.shuffle(deck))
        self._retries.add(task)
        task.add_done_callback(self._retried)

    def reconnected(self) -> None:
        """Its port is back (a replug): the shuffle waiting out a pause goes now, not in a
        minute; the pauses start again from none."""
        self.unanswered = 0
        if self._delayed is not None:
            self._delayed.cancel()
            self._retry(self._delayed_deck)

    def _retried(self, task: asyncio.Task[None]) -> None:
        self._retries.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._report_fault(f"shuffle retry failed: {task.exception()}", answered=False)

    async def _cmd_deck_check(self, args: Mapping[str, Any]) -> None:
        deck = self._deck_arg("deck_check", args, self.deck_in_play or self.next_deck())
        self.counters["deck_checks"] += 1
        await self.deck_check(deck)

    async def _cmd_dispense(self, args: Mapping[str, Any]) -> None:
        count = arg_int(self.name, "dispense", args, "count", lo=1, hi=52)
        deck = self._deck_arg("dispense", args, self.deck_in_play or self.next_deck())
        if self.deck_in_play is None or self.state != State.READY:
            # Not a controller bug: after a restart or a fault the deck may be gone. Report it
            # as the machine would, so the round goes to 12.1/12.2 instead of hanging.
            self._report_fault(f"no shuffled deck ready to dispense ({self.state})",
                               answered=False)
            return
        if deck != self.deck_in_play:
            self._report_fault(f"deck {deck} is not in play (deck {self.deck_in_play} is)",
                               answered=False)
            return
        self.counters["dispenses"] += 1
        await self.dispense_cards(count)

    @abstractmethod
    async def dispense_cards(self, count: int) -> None:
        """Deal `count` cards of the ready deck: one card.dispensed each (or a fault)."""

    @abstractmethod
    async def shuffle(self, deck: int) -> None:
        """Start shuffling `deck`; shuffler.ready (or jam/fault) follows."""

    @abstractmethod
    async def deck_check(self, deck: int) -> None:
        """Read every card of `deck`; deck.check follows."""

    # --- reports shared by driver and simulator -------------------------------------------------

    def _report_ready(self, deck: int) -> None:
        self.unanswered = 0
        self.state = State.READY
        self.deck_in_play = deck
        self._post("shuffler.ready", {"deck": deck})

    def _report_card(self, card: str, index: int) -> None:
        self.unanswered = 0
        self.counters["cards"] += 1
        if card not in _STANDARD:
            self.counters["foreign_cards"] += 1
        self._post("card.dispensed", {"card": card, "index": index})

    def _report_check(self, result: DeckCheck) -> None:
        self.unanswered = 0
        if not result.ok:
            self.counters["deck_check_failed"] += 1
            self.last_error = f"deck {result.deck} check failed"
        self._post("deck.check", result.as_json())

    def _report_jam(self, reason: str) -> None:
        self.unanswered = 0
        self._fault(reason, counter="jams")
        self._post("shuffler.jam", {"reason": reason})

    def _report_fault(self, reason: str, *, offline: bool = False, answered: bool = True) -> None:
        """`offline`: the shuffler did not answer; `answered=False`: refused here, before the
        shuffler was asked (it neither answered nor failed to)."""
        if offline:
            self.unanswered += 1
            # Silent on an open port: a timeout; with the port gone (unplugged): a fault.
            counter = "timeouts" if self.port_down is None else "faults"
            self._fault(reason, state=State.OFFLINE, counter=counter)
        else:
            if answered:
                self.unanswered = 0  # it answered, with a fault of its own
            self._fault(reason)
        self._post("shuffler.fault", {"reason": reason})
