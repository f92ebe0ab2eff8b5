"""The card-reading shuffler driver: our framed protocol over a serial port (docs/protocols.md).

    host -> shuffler   SHUFFLE d | DEAL n | CHECK d | STATUS | TEST
    shuffler -> host   SHUFFLING d                 progress of a shuffle (restarts the timer)
                       READY d                     deck d shuffled, dispensing may start
                       CARD i token                a dispensed card: index i since the shuffle,
                                                   token "As".."2c", "??" unreadable, or what
                                                   the reader saw ("Jk")
                       DECK d token token ...      a deck check: every card read, in order
                       JAM reason...               incomplete shuffle / card jam (UTH 12.1)
                       FAULT reason...             malfunction, deck exhausted (UTH 12.2)
                       STATUS READY|BUSY|FAULT [reason...]
                       TEST OK | TEST FAIL reason...

A deal of n cards is answered by n CARD messages, each restarting the answer timer; the indexes
must follow on from the shuffle (a gap is a lost card: a fault). An unreadable card ends the
deal with shuffler.fault, as does a shuffler that stops answering mid-deal.
"""

from __future__ import annotations

import re
from typing import Any

from devices.base import DeviceError, State
from devices.errors import MessageError
from devices.proto.channel import POLL_S, ChannelDriver
from devices.proto.serial_config import SerialConfig
from devices.shuffler import Shuffler, check_deck

UNREADABLE = "??"
_TOKEN = re.compile(r"[0-9A-Za-z?]{1,4}")
CHECK_ANSWERS = frozenset({"DECK", "FAULT", "JAM"})


def parse_token(token: str) -> str | None:
    if not _TOKEN.fullmatch(token):
        raise MessageError(f"card token {token[:8]!r}")
    return None if token == UNREADABLE else token


class SerialShuffler(ChannelDriver, Shuffler):
    def __init__(
        self, cfg: SerialConfig, name: str = "shuffler", *, decks: int = 1, poll_s: float = POLL_S
    ) -> None:
        super().__init__(name, decks=decks)
        self._attach(cfg, self._no_answer, poll_s=poll_s, on_reconnect=self.reconnected)
        self._deal_left = 0
        self._next_index = 0  # the index the next dispensed card must carry
        self._shuffling: int | None = None
        self._checking: int | None = None
        self._queued: list[tuple[str, int]] = []

    async def shuffle(self, deck: int) -> None:
        self._request("SHUFFLE", deck)

    async def deck_check(self, deck: int) -> None:
        self._request("CHECK", deck)

    async def dispense_cards(self, count: int) -> None:
        self._request("DEAL", count)

    def _request(self, verb: str, arg: int) -> None:
        # One command at a time on the wire: a deck check asked for mid-shuffle waits its turn.
        if self.channel.waiting is not None:
            self._queued.append((verb, arg))
            return
        if verb == "SHUFFLE":
            self._shuffling = arg
        elif verb == "CHECK":
            self._checking = arg
        else:
            self._deal_left = arg
        self.channel.request(verb, arg)

    def _no_answer(self, reason: str) -> None:
        self._end()
        if self.port_down is not None:
            # Unplugged, it may come back power-cycled: whatever deck it held is not "ready".
            self.deck_in_play = None
        self._report_fault(reason, offline=True)
        self._next()

    def _end(self) -> None:
        self.channel.answered()
        self._deal_left = 0
        self._shuffling = self._checking = None

    def _next(self) -> None:
        if self._queued and self.channel.waiting is None and self.started:
            self._request(*self._queued.pop(0))

    def _message(self, verb: str, args: list[str]) -> None:
        try:
            self._handle(verb, args)
        finally:
            self._next()

    def _handle(self, verb: str, args: list[str]) -> None:
        waiting = self.channel.waiting
        if verb == "SHUFFLING" and waiting == "SHUFFLE":
            self.channel.progress()
        elif verb == "READY" and waiting == "SHUFFLE":
            deck = int(args[0])
            expected = self._shuffling
            self._end()
            if deck != expected:
                self._report_fault(f"shuffler readied deck {deck}, asked for deck {expected}")
                return
            self._next_index = 0
            self._report_ready(deck)
        elif verb == "CARD" and waiting == "DEAL":
            self._card(args)
        elif verb == "DECK" and waiting == "CHECK":
            deck = int(args[0])
            expected = self._checking
            self._end()
            if deck != expected:
                self._report_fault(f"deck check of deck {deck}, asked for deck {expected}")
                return
            self._report_check(check_deck([parse_token(t) for t in args[1:]], deck))
        elif verb in ("JAM", "FAULT"):
            reason = " ".join(args) or verb.lower()
            if waiting is None:
                self._fault(reason)  # between commands: health only, no game event
                return
            self._end()
            (self._report_jam if verb == "JAM" else self._report_fault)(reason)
        elif verb == "STATUS":
            if args and args[0] == "FAULT" and waiting is None:
                self._fault(" ".join(args[1:]) or "fault")
        else:
            self.counters["unsolicited"] += 1

    def _card(self, args: list[str]) -> None:
        if len(args) != 2:
            raise MessageError("CARD needs an index and a token")
        index, token = int(args[0]), parse_token(args[1])
        if index != self._next_index:
            self._end()
            self._report_fault(f"card index {index}, expected {self._next_index}: a card lost")
            return
        self._next_index += 1
        self._deal_left -= 1
        if token is None:
            self.counters["unreadable"] += 1
            self._end()
            self._report_fault(f"unreadable card at index {index}")
            return
        if self._deal_left <= 0:
            self._end()
        else:
            self.channel.progress()
        self._report_card(token, index)

    async def selftest(self) -> dict[str, Any]:
        """A deck check whose result goes to the technician, not to the round."""
        if not self.started:
            return {"ok": False, "error": "not started"}
        if self.channel.waiting is not None:
            # Busy with the round (a shuffle, a deal): it answers, so it is alive; not tested.
            return {"ok": self.state != State.FAULT, "tested": False, "busy": self.channel.waiting}
        deck = self.deck_in_play or self.next_deck()
        try:
            verb, args = await self.channel.ask("CHECK", deck, answers=CHECK_ANSWERS)
        except DeviceError as exc:
            return {"ok": False, "error": str(exc)}
        if verb != "DECK":
            return {"ok": False, "error": f"{verb.lower()}: {' '.join(args)}"}
        try:
            result = check_deck([parse_token(t) for t in args[1:]], deck)
        except ValueError as exc:
            return {"ok": False, "error": f"bad deck check: {exc}"}
        return {"ok": result.ok, "deck_check": result.as_json()}
