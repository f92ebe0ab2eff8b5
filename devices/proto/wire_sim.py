"""The wire side of a simulated serial device: a pty pair the real driver opens, with faults.

`WireSim` owns a `PtyPort`; the real driver opens `sim.path` with pyserial, exactly as it opens
`/dev/tablectl-shaker` on a table. Every wire simulator can inject (docs/devices.md):
    drop_next(n)     the next n data frames/answers are never sent
    corrupt_next(n)  the next n frames go out with one byte flipped
    delay_s          added before every answer
    no_answer        reads everything, answers nothing
    unplug / replug  (with `plug_at(link)`): the link is a udev-like symlink to the pty; unplug
                     removes it and closes the pty (the driver's end hangs up: EIO), replug puts
                     a new pty pair behind the same link, as a USB serial adapter pulled and put
                     back.
`FramedSim` speaks the framed protocol through the same `FramedLink` as the driver, each message
dispatched to `on_<VERB>`. Each device's `wire.py` builds on one of them and on the device's
hardware model, the same model its in-process simulator uses.
"""

from __future__ import annotations

import contextlib
import os
import random
from abc import ABC, abstractmethod
from collections import Counter
from typing import Any

from devices.errors import DeviceError, MessageError
from devices.proto.arq import FramedLink
from devices.proto.framing import DATA, message, parse_message
from devices.proto.pty_port import PtyPort
from devices.simbase import Timers, default_rng

PROGRESS_S = 0.2  # a busy device says so at least this often (keep answer_timeout_ms above it)


def ticks(duration: float) -> list[float]:
    """When a device busy for `duration` says it is still busy."""
    n = int(duration / PROGRESS_S)
    return [PROGRESS_S * (i + 1) for i in range(n) if PROGRESS_S * (i + 1) < duration]


class WireSim(ABC):
    """The fault-injecting write side shared by every simulator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.port = PtyPort(self._received)
        self.counters: Counter[str] = Counter()
        self.no_answer = False
        self.delay_s = 0.0
        self._drop = 0
        self._corrupt = 0
        self._timers = Timers()
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
            raise DeviceError("already unplugged")
        self.plugged = False
        self._unlink()
        self._timers.cancel()
        self.port.close()

    async def replug(self) -> None:
        """A new pty pair behind the same symlink (a replugged adapter gets a new node)."""
        if self.plugged:
            raise DeviceError("already plugged in")
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

    def drop_next(self, n: int = 1) -> None:
        self._drop += n

    def corrupt_next(self, n: int = 1) -> None:
        self._corrupt += n

    async def start(self) -> None:
        self.port.start()

    async def close(self) -> None:
        self._timers.cancel()
        self._unlink()
        self.port.close()

    @abstractmethod
    def _received(self, data: bytes) -> None:
        """Bytes the driver wrote to the port."""

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
        """Answer after `delay` plus the injected `delay_s`."""
        self._timers.later(max(0.0, delay + self.delay_s), fn, *args)


class FramedSim(WireSim):
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


class LoopbackPlug(WireSim):
    """A loopback plug (TX wired to RX) on a pty: every byte written to it comes back, through
    the wire faults above (drop, corrupt, delay, no_answer: a broken plug)."""

    def __init__(self, rng: random.Random | None = None) -> None:
        super().__init__(rng if rng is not None else default_rng())

    def _received(self, data: bytes) -> None:
        self.later(0, self.wire_write, data)
