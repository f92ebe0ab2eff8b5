"""Wire-level simulators: the shaker, the shuffler and the meter as hardware behind a pty pair.

Each simulator owns a `PtyPort`; the real driver opens `sim.path` with pyserial, exactly as it
opens `/dev/tablectl-shaker` on a table. The shaker and the shuffler speak the framed protocol
through the same `FramedLink` as the driver; the meter decodes Alpha packets with the same
`AlphaDecoder`. `tablectld --simulate=pty` and the tests use them.

Fault injection (docs/devices.md):
  wire, every simulator:  drop_next(n)     the next n data frames/answers are never sent
                          corrupt_next(n)  the next n frames go out with one byte flipped
                          delay_s          added before every answer
                          no_answer        reads everything, answers nothing
  shaker:    not_flat_next(n), not_flat_probability, fail_next(reason), cover_open
  shuffler:  inject_missing/foreign/duplicate/unreadable, restore_deck (the deck's contents,
             seen at its next shuffle and at once by a deck check), fail_next("jam"|"fault",
             at="shuffle"|"dispense")
  unplug / replug (every simulator, with `plug_at(link)`): the link is a udev-like symlink
  to the pty; unplug removes it and closes the pty (the driver's end hangs up: EIO), replug
  puts a new pty pair behind the same link, as a USB serial adapter pulled and put back.
Randomness is the OS CSPRNG unless a seeded `random.Random` is passed.

On a host, for a VM whose emulated serial adapters open the pty (image/vm/):
    python -m devices.pty_sim --shaker LINK --shuffler LINK --meter LINK [--cut-die] [--decks N]
makes LINK a symlink to each simulator's pty and runs until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

from devices.alpha import READ_TEXT, AlphaDecoder, encode_text_reply
from devices.arq import FramedLink
from devices.framing import DATA, MessageError, message, parse_message
from devices.pty_port import PtyPort
from devices.shuffler import STANDARD_DECK
from devices.sim import default_rng

PROGRESS_S = 0.2  # a busy device says so at least this often (keep answer_timeout_ms above it)


class _Wire:
    """The fault-injecting write side shared by every simulator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.port = PtyPort(self._received)
        self.counters: Counter[str] = Counter()
        self.no_answer = False
        self.delay_s = 0.0
        self._drop = 0
        self._corrupt = 0
        self._timers: set[asyncio.TimerHandle] = set()
        self.symlink: str | None = None  # a udev-like symlink to the pty (plug_at)
        self.plugged = True

    @property
    def path(self) -> str:
        return self.port.path

    # --- plugging (a USB serial adapter pulled and put back) -------------------------------------

    def plug_at(self, link: str) -> None:
        """Make `link` a symlink to this pty, as udev makes /dev/tablectl-<device>."""
        self.symlink = link
        with contextlib.suppress(FileNotFoundError):
            os.unlink(link)
        os.symlink(self.path, link)

    async def unplug(self) -> None:
        """The symlink goes, then the pty: the driver's end reads EIO (hangup)."""
        if not self.plugged:
            raise ValueError("already unplugged")
        self.plugged = False
        self._unlink()
        self._cancel_timers()
        self.port.close()

    async def replug(self) -> None:
        """A new pty pair behind the same symlink (a replugged adapter gets a new node)."""
        if self.plugged:
            raise ValueError("already plugged in")
        self.port = PtyPort(self._received)
        await self.start()
        if self.symlink is not None:
            os.symlink(self.path, self.symlink)
        self.plugged = True

    def _unlink(self) -> None:
        if self.symlink is not None:
            with contextlib.suppress(OSError):
                if os.readlink(self.symlink) == self.path:
                    os.unlink(self.symlink)

    def _cancel_timers(self) -> None:
        for t in self._timers:
            t.cancel()
        self._timers.clear()

    def drop_next(self, n: int = 1) -> None:
        self._drop += n

    def corrupt_next(self, n: int = 1) -> None:
        self._corrupt += n

    async def start(self) -> None:
        self.port.start()

    async def close(self) -> None:
        self._cancel_timers()
        self._unlink()
        self.port.close()

    def _received(self, data: bytes) -> None:
        raise NotImplementedError

    def _is_answer(self, data: bytes) -> bool:
        return True

    def wire_write(self, data: bytes) -> None:
        if self.no_answer:
            self.counters["silenced"] += 1
            return
        if self._is_answer(data):
            if self._drop:
                self._drop -= 1
                self.counters["dropped"] += 1
                return
            if self._corrupt:
                self._corrupt -= 1
                self.counters["corrupted"] += 1
                buf = bytearray(data)
                i = self.rng.randrange(1, len(buf))  # keep the start byte: a real line flip
                buf[i] ^= 1 << self.rng.randrange(8)
                data = bytes(buf)
        self.port.write(data)

    def later(self, delay: float, fn: Any, *args: Any) -> None:
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle

        def run() -> None:
            self._timers.discard(handle)
            fn(*args)

        handle = loop.call_later(max(0.0, delay + self.delay_s), run)
        self._timers.add(handle)


class _FramedSim(_Wire):
    """A framed-protocol device: a FramedLink on the pty, messages dispatched to `on_<VERB>`."""

    def __init__(self, rng: random.Random | None) -> None:
        super().__init__(rng if rng is not None else default_rng())
        self.link = FramedLink(
            self.wire_write, self._payload, retransmit_s=0.1, max_retries=5, counters=self.counters
        )
        self.received: list[str] = []  # every command heard, for tests and the curious

    async def start(self) -> None:
        await super().start()
        self.link.closed = False  # a replug: a new session on the new pty
        self.link.abort()
        self.link.start_session()

    async def unplug(self) -> None:
        self.link.abort()
        await super().unplug()

    async def close(self) -> None:
        self.link.close()
        await super().close()

    def _received(self, data: bytes) -> None:
        if not self.no_answer:
            self.link.data_received(data)

    def _is_answer(self, data: bytes) -> bool:
        return len(data) > 3 and data[3] == DATA

    def _payload(self, payload: bytes) -> None:
        try:
            verb, args = parse_message(payload)
        except MessageError:
            self.counters["messages_bad"] += 1
            return
        self.received.append(" ".join([verb, *args]))
        handler = getattr(self, f"on_{verb}", None)
        if handler is None:
            self.say("FAULT", "unknown command", verb)
            return
        try:
            handler(args)
        except (ValueError, IndexError):
            self.say("FAULT", "bad arguments to", verb)

    def say(self, verb: str, *args: object) -> None:
        if not self.link.closed:
            self.link.send(message(verb, *args))

    def on_STATUS(self, args: list[str]) -> None:
        self.say("STATUS", "READY")


# --- dice shaker --------------------------------------------------------------------------------


class PtyShakerSim(_FramedSim):
    def __init__(
        self,
        *,
        cut_die: bool = False,
        rng: random.Random | None = None,
        shake_time_s: float = 0.0,
        not_flat_probability: float = 0.0,
    ) -> None:
        super().__init__(rng)
        self.cut_die = cut_die
        self.shake_time_s = shake_time_s
        self.not_flat_probability = not_flat_probability
        self.cover_open = False
        self._not_flat = 0
        self._fail: list[str] = []
        self.shakes = 0

    def not_flat_next(self, times: int = 1) -> None:
        self._not_flat += times

    def fail_next(self, reason: str = "motor fault") -> None:
        self._fail.append(reason)

    def _roll(self) -> list[object]:
        dice: list[object] = [self.rng.randint(1, 6) for _ in range(3)]
        return [*dice, self.rng.randint(1, 6) if self.cut_die else "-"]

    def on_SHAKE(self, args: list[str]) -> None:
        self.shakes += 1
        if self.cover_open:
            self.later(0, self.say, "FAULT", "cover open")
            return
        for t in _ticks(self.shake_time_s):
            self.later(t, self.say, "SHAKING")
        self.later(self.shake_time_s, self._settle)

    def _settle(self) -> None:
        if self._fail:
            self.say("FAULT", self._fail.pop(0))
        elif self._not_flat or (
            self.not_flat_probability and self.rng.random() < self.not_flat_probability
        ):
            self._not_flat = max(0, self._not_flat - 1)
            self.say("NOTFLAT")
        else:
            self.say("DICE", *self._roll())

    def on_TEST(self, args: list[str]) -> None:
        if self.cover_open:
            self.later(0, self.say, "TEST", "FAIL", "cover open")
        else:
            self.later(self.shake_time_s, self.say, "TEST", "OK", *self._roll())

    def on_STATUS(self, args: list[str]) -> None:
        self.say("STATUS", *(("FAULT", "cover open") if self.cover_open else ("READY",)))


def _ticks(duration: float) -> list[float]:
    n = int(duration / PROGRESS_S)
    return [PROGRESS_S * (i + 1) for i in range(n) if PROGRESS_S * (i + 1) < duration]


# --- shuffler -----------------------------------------------------------------------------------


class PtyShufflerSim(_FramedSim):
    def __init__(
        self,
        *,
        decks: int = 1,
        rng: random.Random | None = None,
        shuffle_time_s: float = 0.0,
        card_time_s: float = 0.0,
    ) -> None:
        super().__init__(rng)
        self.decks = decks
        self.shuffle_time_s = shuffle_time_s
        self.card_time_s = card_time_s
        self.contents: dict[int, list[str | None]] = {
            d: list(STANDARD_DECK) for d in range(1, decks + 1)
        }
        self.deck: int | None = None
        self.order: list[str | None] = []
        self.next_index = 0
        self._pending: list[tuple[str, str, str]] = []

    # --- fault injection ------------------------------------------------------------------------

    def _cards(self, deck: int | None) -> list[str | None]:
        return self.contents[deck or self.deck or 1]

    def inject_missing(self, card: str | None = None, deck: int | None = None) -> str:
        cards = self._cards(deck)
        card = card or self.rng.choice([c for c in cards if c is not None])
        cards.remove(card)
        return card

    def inject_foreign(self, card: str = "Jk", deck: int | None = None) -> str:
        self._cards(deck).append(card)
        return card

    def inject_duplicate(self, card: str | None = None, deck: int | None = None) -> str:
        cards = self._cards(deck)
        card = card or self.rng.choice([c for c in cards if c is not None])
        cards.append(card)
        return card

    def inject_unreadable(self, deck: int | None = None) -> None:
        cards = self._cards(deck)
        cards[self.rng.randrange(len(cards))] = None

    def restore_deck(self, deck: int | None = None) -> None:
        self._cards(deck)[:] = STANDARD_DECK

    def fail_next(self, kind: str = "jam", *, at: str = "shuffle", reason: str = "") -> None:
        if kind not in ("jam", "fault") or at not in ("shuffle", "dispense"):
            raise ValueError(f"cannot inject {kind!r} at {at!r}")
        self._pending.append((kind, at, reason or ("card jam" if kind == "jam" else "malfunction")))

    def _take_fault(self, at: str) -> bool:
        for i, (kind, where, reason) in enumerate(self._pending):
            if where == at:
                del self._pending[i]
                self.say("JAM" if kind == "jam" else "FAULT", reason)
                return True
        return False

    # --- commands -------------------------------------------------------------------------------

    def _deck_arg(self, args: list[str]) -> int:
        deck = int(args[0])
        if deck not in self.contents:
            raise ValueError(f"no deck {deck}")
        return deck

    def on_SHUFFLE(self, args: list[str]) -> None:
        deck = self._deck_arg(args)
        for t in _ticks(self.shuffle_time_s):
            self.later(t, self.say, "SHUFFLING", deck)
        self.later(self.shuffle_time_s, self._shuffled, deck)

    def _shuffled(self, deck: int) -> None:
        if self._take_fault("shuffle"):
            self.deck, self.order = None, []
            return
        order = list(self.contents[deck])
        self.rng.shuffle(order)
        self.deck, self.order, self.next_index = deck, order, 0
        self.say("READY", deck)

    def on_DEAL(self, args: list[str]) -> None:
        count = int(args[0])
        if not 1 <= count <= 52:
            raise ValueError("count")
        if self.deck is None:
            self.later(0, self.say, "FAULT", "no shuffled deck")
            return
        self.later(self.card_time_s, self._deal, count)

    def _deal(self, count: int) -> None:
        if count <= 0 or self.deck is None:
            return
        if self._take_fault("dispense"):
            self.deck = None
            return
        if self.next_index >= len(self.order):
            self.deck = None
            self.say("FAULT", "deck exhausted")
            return
        card = self.order[self.next_index]
        self.say("CARD", self.next_index, card if card is not None else "??")
        self.next_index += 1
        if card is None:
            return  # the reader stops at a card it cannot read
        self.later(self.card_time_s, self._deal, count - 1)

    def on_CHECK(self, args: list[str]) -> None:
        deck = self._deck_arg(args)
        tokens = [c if c is not None else "??" for c in self.contents[deck]]
        self.later(0, self.say, "DECK", deck, *tokens)

    def on_TEST(self, args: list[str]) -> None:
        self.later(0, self.say, "TEST", "OK")


# --- meter (Alpha sign) -------------------------------------------------------------------------


class PtyMeterSim(_Wire):
    """An Alpha sign: shows what it is written, answers reads of its TEXT file."""

    def __init__(self, *, rng: random.Random | None = None) -> None:
        super().__init__(rng if rng is not None else default_rng())
        self.decoder = AlphaDecoder(self.counters)
        self.text = ""
        self.mode = ""
        self.shown: list[str] = []

    def _received(self, data: bytes) -> None:
        for packet in self.decoder.feed(data):
            if packet.command == READ_TEXT:
                self.later(0, self.wire_write, encode_text_reply(self.text))
                continue
            parsed = packet.text()
            if parsed is None:
                self.counters["ignored"] += 1
                continue
            _, self.mode, self.text = parsed
            self.shown.append(self.text)


# --- host-side entry point ----------------------------------------------------------------------


async def serve(links: dict[str, str], *, cut_die: bool = False, decks: int = 1) -> None:
    """Start the named simulators, point each link at its pty, run until SIGTERM/SIGINT."""
    make = {
        "shaker": lambda: PtyShakerSim(cut_die=cut_die),
        "shuffler": lambda: PtyShufflerSim(decks=decks),
        "meter": lambda: PtyMeterSim(),
    }
    sims: dict[str, _Wire] = {name: make[name]() for name in links}
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        for name, sim in sims.items():
            await sim.start()
            tmp = f"{links[name]}.tmp"
            os.symlink(sim.path, tmp)
            os.replace(tmp, links[name])
            print(f"pty_sim: {name} {sim.path} -> {links[name]}", flush=True)
        await stop.wait()
    finally:
        for sim in sims.values():
            await sim.close()
        for name, sim in sims.items():
            print(f"pty_sim: {name} counters {dict(sim.counters)}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    doc = (__doc__ or "").split("\n")[0]
    ap = argparse.ArgumentParser(prog="python -m devices.pty_sim", description=doc)
    for name in ("shaker", "shuffler", "meter"):
        ap.add_argument(f"--{name}", metavar="LINK", help=f"symlink to make to the {name}'s pty")
    ap.add_argument("--cut-die", action="store_true", help="the shaker has a fourth die (NSW)")
    ap.add_argument("--decks", type=int, default=1, choices=(1, 2), help="shuffler decks")
    args = ap.parse_args(argv)
    links = {n: getattr(args, n) for n in ("shaker", "shuffler", "meter") if getattr(args, n)}
    if not links:
        ap.error("name at least one of --shaker, --shuffler, --meter")
    asyncio.run(serve(links, cut_die=args.cut_die, decks=args.decks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
