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

Link and codec counters (`frames_bad`, `retries`, `frames_duplicate`, ...) are kept in the
device's own counters, so `tablectl devices list` shows them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from controller.config import SerialConfig
from devices import serial_port
from devices.arq import FramedLink
from devices.base import Device, DeviceError, State
from devices.framing import MessageError, message, parse_message

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
        self._transport: asyncio.Transport | None = None
        self._answer_timer: asyncio.TimerHandle | None = None
        self.waiting: str | None = None  # the verb whose answer we wait for
        self._ask: tuple[frozenset[str], asyncio.Future[Message]] | None = None
        self._poll_task: asyncio.Task[None] | None = None
        self._status_pending = False

    # --- lifecycle ------------------------------------------------------------------------------

    async def open(self) -> None:
        self._transport = await serial_port.open_serial(
            self.device.name, self.cfg.port, self.cfg.baud, self.link.data_received, self._lost
        )
        self.link.closed = False
        self.link.start_session()
        if self.poll_s > 0:
            self._poll_task = asyncio.create_task(self._poll(), name=f"{self.device.name}-poll")

    async def close(self) -> None:
        self._stop_timer()
        if self._poll_task is not None:
            self._poll_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poll_task
            self._poll_task = None
        if self._ask is not None and not self._ask[1].done():
            self._ask[1].cancel()
        self._ask = None
        self.link.close()
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    def _write(self, data: bytes) -> None:
        serial_port.write(self._transport, data)

    def _lost(self, reason: str) -> None:
        if self._transport is not None:  # not our own close
            self.device.last_error = f"{self.cfg.port}: {reason}"
            log.error("%s: %s", self.device.name, self.device.last_error)
            self._transport = None

    # --- requests -------------------------------------------------------------------------------

    def request(self, verb: str, *args: object) -> None:
        """Send a command whose answer arrives through `on_message`; time it."""
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
            if self.waiting is not None or self._ask is not None:
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
