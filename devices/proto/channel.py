"""The driver side of one framed serial device (shaker, shuffler): port, link, answer timer.

`FramedChannel` opens the port, runs a `FramedLink` over it and turns silence into a report:

* `request(verb, *args)` sends a command and starts the answer timer (the configured
  `answer_timeout_ms`). The device's progress messages (`SHAKING`, `SHUFFLING`, a `CARD` of a
  deal) restart it (`progress()`); the final answer stops it (`answered()`). If the timer runs
  out, or the link gives up on the frame, `on_timeout("no answer")` runs once and the link is
  aborted, so a late retransmission can never start a shake nobody is waiting for.
* `ask(verb, *args, answers=...)` is the same for technician tests: it awaits the answer and
  returns it instead of reporting an event.
* While idle it polls `STATUS` every POLL_S; a device that does not answer is marked `offline`
  in its health (no game event: nothing was asked of it) and `ready` again when it answers.
* The port itself is held by a `SerialLine` (devices/proto/serial_line.py). When it goes
  (unplugged), whatever was asked is dropped and `on_timeout("disconnected: <path>: <why>")` runs
  once, so the device reports its usual fault event. A request while it is gone is held for the
  answer time and then gets the same fault (sent instead if the port is back by then). When it is
  back, a new ARQ session starts (HELLO) and `on_reconnect` runs.

Link and codec counters (`frames_bad`, `retries`, `frames_duplicate`, ...) are kept in the
device's own counters, so `tablectl devices list` shows them.
"""

from __future__ import annotations

import asyncio
import logging
from abc import abstractmethod
from collections.abc import Callable
from typing import Any

from devices.base import Device, DeviceError, State
from devices.proto.arq import FramedLink
from devices.proto.framing import MessageError, message, parse_message
from devices.proto.serial_config import SerialConfig
from devices.proto.serial_line import SerialLine
from shared.stopping import end_tasks

POLL_S = 5.0  # idle STATUS poll: how soon a silent idle device shows offline
log = logging.getLogger("tablectl.devices")

Message = tuple[str, list[str]]


class FramedChannel:
    def __init__(
        self,
        device: Device,
        cfg: SerialConfig,
        on_message: Callable[[str, list[str]], None],
        on_timeout: Callable[[str], None],
        *,
        poll_s: float = POLL_S,
        on_reconnect: Callable[[], None] | None = None,
    ) -> None:
        self.device = device
        self.cfg = cfg
        self.on_message = on_message
        self.on_timeout = on_timeout
        self.poll_s = poll_s
        self.answer_s = cfg.answer_timeout_ms / 1000
        # Three resends inside the answer time: a lost frame costs a quarter of it.
        self.link = FramedLink(
            self._write,
            self._payload,
            retransmit_s=self.answer_s / 4,
            max_retries=3,
            on_give_up=self._gave_up,
            counters=device.counters,
        )
        self.on_reconnect = on_reconnect
        self.line = SerialLine(
            device, cfg.port, cfg.baud, self.link.data_received, self._up, self._down
        )
        self._answer_timer: asyncio.TimerHandle | None = None
        self.waiting: str | None = None  # the verb whose answer we wait for
        self._ask: tuple[frozenset[str], asyncio.Future[Message]] | None = None
        self._poll_task: asyncio.Task[None] | None = None
        self._status_pending = False
        self._held: bytes | None = None  # a request made while the port was gone

    # --- lifecycle ------------------------------------------------------------------------------

    async def open(self) -> None:
        """Open the port; a port missing at start is `disconnected` and reopened when it comes."""
        self.link.closed = False
        await self.line.open()
        if self.line.connected:
            self.link.start_session()
        if self.poll_s > 0:
            self._poll_task = asyncio.create_task(self._poll(), name=f"{self.device.name}-poll")

    async def close(self) -> None:
        self._stop_timer()
        self._held = None
        task, self._poll_task = self._poll_task, None
        if task is not None:  # cancelled until it ends (shared/stopping.py)
            await end_tasks([task], log, self.device.name)
        if self._ask is not None and not self._ask[1].done():
            # An answer, never a cancellation: its caller (a self-test, perhaps the daemon's
            # start-up one) is not being cancelled and must not unwind as if it were.
            self._ask[1].set_exception(DeviceError(f"{self.device.name}: port closed"))
        self._ask = None
        self.link.close()
        await self.line.close()

    def _write(self, data: bytes) -> None:
        self.line.write(data)

    # --- the port going and coming back (devices/proto/serial_line.py) -------------------------

    def _down(self, reason: str) -> None:
        """The port is gone: whatever was asked of the device is lost with it. The device's fault
        path runs once (`<device>.fault {reason: "disconnected: ..."}`), as for a silent one."""
        self._stop_timer()
        self.waiting = None
        self._held = None
        self._status_pending = False
        self.link.abort()
        if self._ask is not None and not self._ask[1].done():
            self._ask[1].set_exception(DeviceError(f"{self.device.name}: disconnected ({reason})"))
        self.device.state = State.OFFLINE
        self.on_timeout(self.line.fault_reason)

    def _held_out(self) -> None:
        self._answer_timer = None
        self._held = None
        self.waiting = None
        self.on_timeout(self.line.fault_reason)

    def _up(self) -> None:
        """The port is back: a new ARQ session (HELLO resets both ends' sequence numbers), the
        command held meanwhile, then the device's own recovery (`on_reconnect`)."""
        self.device.state = State.READY
        self._status_pending = False
        self.link.abort()
        self.link.start_session()
        held, self._held = self._held, None
        if held is not None and self.waiting is not None:
            self.device.state = State.BUSY
            self.link.send(held)
            self.progress()
        if self.on_reconnect is not None:
            self.on_reconnect()

    # --- requests -------------------------------------------------------------------------------

    def request(self, verb: str, *args: object) -> None:
        """Send a command whose answer arrives through `on_message`; time it. With the port
        gone the answer is the fault at once (on the loop, never inside the caller)."""
        if self.line.down_reason is not None:
            # Held for the answer time, as a silent device is: a dealer's or the machine's
            # immediate retry cannot spin on it. Sent if the port is back by then.
            self.waiting = verb
            self._held = message(verb, *args)
            self._stop_timer()
            loop = asyncio.get_running_loop()
            self._answer_timer = loop.call_later(self.answer_s, self._held_out)
            return
        self.link.send(message(verb, *args))
        self.waiting = verb
        self.progress()

    def progress(self) -> None:
        self._stop_timer()
        loop = asyncio.get_running_loop()
        self._answer_timer = loop.call_later(self.answer_s, self._timed_out)

    def answered(self) -> None:
        self._stop_timer()
        self.waiting = None

    async def ask(self, verb: str, *args: object, answers: frozenset[str]) -> Message:
        """A technician request: send and await one of `answers` (DeviceError on silence)."""
        if self._ask is not None or self.waiting is not None:
            raise DeviceError(f"{self.device.name}: busy ({self.waiting or 'a test'} running)")
        if self.line.down_reason is not None:
            raise DeviceError(f"{self.device.name}: disconnected ({self.line.down_reason})")
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._ask = (answers, future)
        try:
            self.link.send(message(verb, *args))
            return await asyncio.wait_for(future, self.answer_s * 2)
        except TimeoutError:
            self.device.counters["timeouts"] += 1
            self.link.abort()
            raise DeviceError(f"{self.device.name}: no answer to {verb}") from None
        finally:
            self._ask = None

    def _stop_timer(self) -> None:
        if self._answer_timer is not None:
            self._answer_timer.cancel()
            self._answer_timer = None

    def _timed_out(self) -> None:
        self._answer_timer = None
        verb, self.waiting = self.waiting, None
        self.link.abort()
        log.error(
            "%s: no answer to %s within %d ms", self.device.name, verb, self.cfg.answer_timeout_ms
        )
        self.on_timeout("no answer")

    def _gave_up(self, reason: str) -> None:
        if self.waiting is not None:
            self._stop_timer()
            self._timed_out()
        elif self._ask is None:
            self._went_offline(f"no answer ({reason})")

    # --- incoming -------------------------------------------------------------------------------

    def _payload(self, payload: bytes) -> None:
        try:
            verb, args = parse_message(payload)
        except MessageError as exc:
            self.device.counters["messages_bad"] += 1
            self.device.last_error = f"bad message: {exc}"
            return
        self.device._seen()
        if verb == "STATUS":
            self._status_pending = False
        if self.device.state == State.OFFLINE and self.waiting is None:
            self.device.state = State.READY
        if self._ask is not None and verb in self._ask[0] and not self._ask[1].done():
            self._ask[1].set_result((verb, args))
            return
        try:
            self.on_message(verb, args)
        except (ValueError, IndexError, KeyError) as exc:  # a message we cannot use: count it
            self.device.counters["messages_bad"] += 1
            self.device.last_error = f"bad {verb} message {args!r}: {exc}"

    # --- idle poll ------------------------------------------------------------------------------

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_s)
            if self.waiting is not None or self._ask is not None or not self.line.connected:
                continue
            if self._status_pending:
                self._went_offline("no answer to STATUS")
            self._status_pending = True
            self.link.send(message("STATUS"))

    def _went_offline(self, reason: str) -> None:
        if self.device.state != State.OFFLINE:
            self.device.counters["timeouts"] += 1
            log.error("%s: %s", self.device.name, reason)
        self.device.state = State.OFFLINE
        self.device.last_error = reason
        self.link.abort()


class ChannelDriver(Device):
    """A driver whose device speaks through one `FramedChannel` (card reader, shaker,
    shuffler): it attaches the channel once, and the channel's port opens and closes with the
    device. A base before the device's interface: `SerialShaker(ChannelDriver, DiceShaker)`."""

    cfg: SerialConfig
    channel: FramedChannel

    def _attach(self, cfg: SerialConfig, on_timeout: Callable[[str], None], **options: Any) -> None:
        """The channel on `cfg`'s port, its messages to `_message`; `options`: FramedChannel's
        (poll_s, on_reconnect)."""
        self.cfg = cfg
        self.channel = FramedChannel(self, cfg, self._message, on_timeout, **options)

    @abstractmethod
    def _message(self, verb: str, args: list[str]) -> None:
        """One message from the device (its verb and arguments)."""

    def _idle_status(self, args: list[str]) -> None:
        """The answer to the idle STATUS poll: FAULT is a fault in the health (no game event:
        nothing was asked of the device), READY after a fault makes it ready again."""
        if args[:1] == ["FAULT"]:
            self._fault(" ".join(args[1:]) or "fault")
        elif args[:1] == ["READY"] and self.state == State.FAULT:
            self.state = State.READY

    async def _open(self) -> None:
        await self.channel.open()

    async def _close(self) -> None:
        await self.channel.close()
