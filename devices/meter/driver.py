"""The progressive meter driver: an Alpha sign on a serial port, 9600 7E1 (devices/proto/alpha.py).

The `Meter` interface decides what to show (and refuses a pool decrease without a win); this
driver renders, paces and frames:

* Rate limit: at most one write every `min_interval_s` (the sign needs time to redraw, and a
  burst of pool increments must not flood a 9600-baud line). Pool values waiting their turn
  are coalesced: only the newest is written. A WIN, OFFLINE, CLOSED or an announcement is never
  coalesced away; the queue holds at most MAX_QUEUE views (oldest pool values dropped first,
  counted `writes_dropped`).
* Health: the sign has no events, so every POLL_S the driver reads the TEXT file back. No
  answer within `answer_timeout_ms` marks the meter `offline` (counted `timeouts`); text that
  differs from what was last written is counted `readback_mismatch` and written again.
* `selftest` ("flash the meter"): flashes a test pattern, reads it back, restores the view.
* Unplugged (devices/proto/serial_line.py): the state is `disconnected` and `meter.fault {reason:
  "disconnected: ..."}` goes to the round machine (UTH: jackpot equipment failure, 11.11).
  Views shown meanwhile wait in the queue (coalesced as above). When the port is back the sign
  is written what it should show (it may have lost it) and `meter.ready {}` follows.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any, ClassVar

from devices.base import DeviceError, State
from devices.meter import Meter, MeterView
from devices.meter.interface import PORT_EVENTS
from devices.proto.alpha import (
    FLASH,
    HOLD,
    MAX_TEXT,
    ROTATE,
    AlphaDecoder,
    encode_read_text,
    encode_write_text,
    printable,
)
from devices.proto.serial_config import SerialConfig
from devices.proto.serial_line import SerialLine
from shared.stopping import end_tasks

MIN_INTERVAL_S = 0.25
POLL_S = 5.0
MAX_QUEUE = 16
LINE = 16  # characters one line of the table's sign shows without scrolling
TEST_PATTERN = "8888888888888888"
log = logging.getLogger("tablectl.devices")


def render(view: MeterView) -> tuple[str, str]:
    """A view -> (text the sign can show, mode code)."""
    text, _ = printable(view.text)
    text = text[:MAX_TEXT]
    if view.mode == "win":
        return text, FLASH
    if view.mode == "announce" and len(text) > LINE:
        return text, ROTATE
    return text, HOLD


class AlphaMeter(Meter):
    EVENTS: ClassVar[tuple[str, ...]] = PORT_EVENTS

    def __init__(
        self,
        cfg: SerialConfig,
        name: str = "meter",
        *,
        min_interval_s: float = MIN_INTERVAL_S,
        poll_s: float = POLL_S,
    ) -> None:
        super().__init__(name)
        self.cfg = cfg
        self.min_interval_s = min_interval_s
        self.poll_s = poll_s
        self.answer_s = cfg.answer_timeout_ms / 1000
        self.decoder = AlphaDecoder(self.counters)
        self.written: str | None = None  # the text the sign should be showing
        self._queue: deque[tuple[str, str, bool]] = deque()  # (text, mode, is_pool)
        self._wake = asyncio.Event()
        self._reply: asyncio.Future[str] | None = None
        self.line = SerialLine(
            self, cfg.port, cfg.baud, self._data, self._up, self._down, seven_e1=True
        )
        self._tasks: list[asyncio.Task[None]] = []
        self._lock = asyncio.Lock()  # one write-or-read exchange on the line at a time

    async def _open(self) -> None:
        await self.line.open()
        self._tasks = [asyncio.create_task(self._writer(), name=f"{self.name}-writer")]
        if self.poll_s > 0:
            self._tasks.append(asyncio.create_task(self._poll(), name=f"{self.name}-poll"))

    async def _close(self) -> None:
        tasks, self._tasks = self._tasks, []
        # Cancelled until they end: one cancel can be swallowed by the read-back's wait_for
        # on Python 3.11 (shared/stopping.py), and the stop then hung for good (issue 27).
        await end_tasks(tasks, log, self.name)
        await self.line.close()

    def _down(self, reason: str) -> None:
        self._fault(self.line.fault_reason)
        if self._reply is not None and not self._reply.done():
            self._reply.set_exception(DeviceError(f"{self.name}: disconnected ({reason})"))
        self._post("meter.fault", {"reason": self.line.fault_reason})

    def _up(self) -> None:
        self.state = State.READY
        if not self._queue and self.view is not None:
            # The sign may have been power-cycled with its adapter: show it the view again.
            text, mode = render(self.view)
            self._queue.append((text, mode, self.view.mode == "pool"))
        self._wake.set()
        self._post("meter.ready", {})

    # --- writing --------------------------------------------------------------------------------

    async def _show(self, view: MeterView) -> None:
        text, mode = render(view)
        if text != view.text:
            self.counters["chars_replaced"] += 1
        is_pool = view.mode == "pool"
        if is_pool and self._queue and self._queue[-1][2]:
            self._queue[-1] = (text, mode, True)  # a newer pool value supersedes a waiting one
            self.counters["writes_coalesced"] += 1
        else:
            if len(self._queue) >= MAX_QUEUE:
                self._drop_one()
            self._queue.append((text, mode, is_pool))
        self._wake.set()

    def _drop_one(self) -> None:
        for i, item in enumerate(self._queue):
            if item[2]:
                del self._queue[i]
                break
        else:
            self._queue.popleft()
        self.counters["writes_dropped"] += 1

    async def _writer(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                if not self.line.connected:
                    await self.line.wait_up()  # views shown meanwhile wait here, coalesced
                    continue
                text, mode, _ = self._queue.popleft()
                async with self._lock:
                    self._write(encode_write_text(text, mode))
                self.written = text
                self.counters["writes"] += 1
                await asyncio.sleep(self.min_interval_s)

    def _write(self, packet: bytes) -> None:
        try:
            self.line.write(packet)
        except OSError as exc:
            self.counters["write_errors"] += 1
            self.last_error = f"write failed: {exc}"

    # --- reading back ---------------------------------------------------------------------------

    def _data(self, data: bytes) -> None:
        for packet in self.decoder.feed(data):
            parsed = packet.text()
            if packet.type_code != "0" or parsed is None:
                self.counters["unsolicited"] += 1
                continue
            self._seen()
            if self._reply is not None and not self._reply.done():
                self._reply.set_result(parsed[2])

    async def read_back(self) -> str:
        """The text the sign holds; DeviceError when it does not answer in time."""
        async with self._lock:
            self._reply = asyncio.get_running_loop().create_future()
            self._write(encode_read_text())
            try:
                return await asyncio.wait_for(self._reply, self.answer_s)
            except TimeoutError:
                self.decoder.flush()
                raise DeviceError(f"{self.name}: no answer to a read") from None
            finally:
                self._reply = None

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_s)
            await self.check()

    async def check(self) -> None:
        """Read back once: mark offline on silence, rewrite on a mismatch."""
        if not self.line.connected:
            return  # disconnected says more than offline would
        try:
            text = await self.read_back()
        except DeviceError as exc:
            if not self.line.connected:
                return  # unplugged while it read: that is reported as such, not as silence
            if self.state != State.OFFLINE:
                self._fault(str(exc), state=State.OFFLINE, counter="timeouts")
                log.error("%s", exc)
            return
        if self.state == State.OFFLINE:
            self.state = State.READY
        if self.written is not None and text != self.written and not self._queue:
            self.counters["readback_mismatch"] += 1
            self.last_error = f"sign showed {text[:40]!r}, expected {self.written[:40]!r}"
            self._queue.append((self.written, HOLD, False))
            self._wake.set()

    async def selftest(self) -> dict[str, Any]:
        """Flash the test pattern, read it back, put the current view back."""
        if not self.started:
            return {"ok": False, "error": "not started"}
        if self.port_down is not None:
            return {"ok": False, "error": self.port_down}
        async with self._lock:
            self._write(encode_write_text(TEST_PATTERN, FLASH))
        try:
            seen = await self.read_back()
        except DeviceError as exc:
            return {"ok": False, "error": str(exc)}
        finally:
            # Back to what the game showed (blank before anything was shown).
            await self._show(self.view or MeterView("blank", ""))
        return {"ok": seen == TEST_PATTERN, "read_back": seen, "showing": self.written}
