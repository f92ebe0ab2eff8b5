"""Reliable delivery over the framed codec: ACK/NAK, retransmit on timeout, replay protection.

One `FramedLink` per serial line and per side: the driver and the pty simulator use the same
class, so both ends of the wire follow one implementation of docs/protocols.md.

Stop-and-wait: one data frame in flight per direction; the next waits for its ACK. A frame that
is not acknowledged within `retransmit_s` is sent again (counted `retries`), a NAK resends at
once, and after `max_retries` resends the link gives up: the frame and everything queued behind
it are dropped (a shake must never reach a shaker that comes back late) and `on_give_up` tells
the driver, which reports the device. The next send then starts a new session.

Sequence numbers: each side numbers its data frames 1..255 and wraps to 1. Sequence 0 is the
session start: a data frame `HELLO` that resets the receiver's expectation and is never
delivered. A receiver delivers a data frame only when its sequence number is the next one
(or any number before the first frame it hears); the same number again is a retransmission or
a replay: acknowledged again, counted `frames_duplicate`, never delivered twice. Anything else
is counted `frames_out_of_order` and ignored.

Everything runs on the loop that calls it; timers use `loop.call_later`. No method raises on
what arrives from the wire.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Callable

from devices.proto.framing import ACK, DATA, NAK, Frame, FrameDecoder, encode

HELLO = b"HELLO"
MAX_QUEUE = 64  # frames waiting behind the one in flight; more means the peer is gone


def next_seq(seq: int) -> int:
    return 1 if seq >= 255 else seq + 1


class FramedLink:
    def __init__(
        self,
        write: Callable[[bytes], None],
        on_message: Callable[[bytes], None],
        *,
        retransmit_s: float = 0.25,
        max_retries: int = 3,
        on_give_up: Callable[[str], None] | None = None,
        counters: Counter[str] | None = None,
    ) -> None:
        self._write = write
        self._on_message = on_message
        self._on_give_up = on_give_up or (lambda _reason: None)
        self.retransmit_s = retransmit_s
        self.max_retries = max_retries
        self.counters: Counter[str] = counters if counters is not None else Counter()
        self.decoder = FrameDecoder(self.counters)
        self._tx_seq = 0  # the last sequence number sent; 0: the next send starts a session
        self._session = False  # our HELLO has been acknowledged
        self._rx_last: int | None = None
        self._queue: deque[bytes] = deque()
        self._in_flight: tuple[int, bytes] | None = None  # (seq, encoded frame)
        self._tries = 0
        self._timer: asyncio.TimerHandle | None = None
        self.last_write_error: str | None = None
        self.closed = False

    # --- sending --------------------------------------------------------------------------------

    def send(self, payload: bytes) -> None:
        """Queue one message; it goes out when the frame before it is acknowledged."""
        if self.closed:
            self.counters["send_dropped"] += 1
            return
        if len(self._queue) >= MAX_QUEUE:
            self.counters["send_dropped"] += 1
            return
        if not self._session and self._in_flight is None and not self._queue:
            self._queue.append(HELLO)
        self._queue.append(payload)
        self._pump()

    def start_session(self) -> None:
        """Send HELLO now (at open), so the peer hears from us before the first command."""
        if not self._session and self._in_flight is None and not self._queue:
            self._queue.append(HELLO)
            self._pump()

    def abort(self) -> None:
        """Drop the frame in flight and the queue; the next send starts a new session."""
        dropped = len(self._queue) + (self._in_flight is not None)
        if dropped:
            self.counters["send_dropped"] += dropped
        self._queue.clear()
        self._in_flight = None
        self._cancel_timer()
        self._session = False
        self._tx_seq = 0
        self.decoder.flush()

    def close(self) -> None:
        self.abort()
        self.closed = True

    @property
    def idle(self) -> bool:
        return self._in_flight is None and not self._queue

    def _pump(self) -> None:
        if self._in_flight is not None or not self._queue or self.closed:
            return
        payload = self._queue.popleft()
        seq = 0 if payload == HELLO and not self._session else next_seq(self._tx_seq)
        self._tx_seq = seq
        frame = encode(seq, DATA, payload)
        self._in_flight = (seq, frame)
        self._tries = 0
        self._transmit(frame)

    def _transmit(self, frame: bytes) -> None:
        self.counters["frames_sent"] += 1
        try:
            self._write(frame)
        except OSError as exc:  # the port went away: the timer below reports it
            self.counters["write_errors"] += 1
            self.last_write_error = str(exc)
        self._cancel_timer()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self.retransmit_s, self._expired)

    def _expired(self) -> None:
        self._timer = None
        if self._in_flight is None:
            return
        self.decoder.flush()  # whatever half-frame sat in the buffer will not complete now
        if self._tries >= self.max_retries:
            self.counters["send_failed"] += 1
            self.abort()
            self._on_give_up("no acknowledgement")
            return
        self._retry()

    def _retry(self) -> None:
        assert self._in_flight is not None
        self._tries += 1
        self.counters["retries"] += 1
        self._transmit(self._in_flight[1])

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # --- receiving ------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        bad_before = self.decoder.counters["frames_bad"]
        for frame in self.decoder.feed(data):
            self._frame(frame)
        if self.decoder.counters["frames_bad"] > bad_before:
            # One NAK per read, however much garbage: the peer resends what it has in flight.
            self._send_control(NAK, next_seq(self._rx_last) if self._rx_last is not None else 0)

    def _frame(self, frame: Frame) -> None:
        if frame.type == DATA:
            self._data(frame)
        elif frame.type == ACK:
            if self._in_flight is not None and frame.seq == self._in_flight[0]:
                if self._in_flight[0] == 0:
                    self._session = True
                self._in_flight = None
                self._cancel_timer()
                self._pump()
            else:
                self.counters["acks_unexpected"] += 1
        elif frame.type == NAK:
            self.counters["naks_received"] += 1
            if self._in_flight is not None and self._tries < self.max_retries:
                self._retry()

    def _data(self, frame: Frame) -> None:
        if frame.seq == 0:
            if frame.payload != HELLO:
                self.counters["frames_out_of_order"] += 1
                return
            if self._rx_last == 0:
                self.counters["frames_duplicate"] += 1
            else:
                self.counters["sessions"] += 1
            self._rx_last = 0
            self._send_control(ACK, 0)
            return
        if self._rx_last is not None and frame.seq == self._rx_last:
            self.counters["frames_duplicate"] += 1
            self._send_control(ACK, frame.seq)
            return
        if self._rx_last is not None and frame.seq != next_seq(self._rx_last):
            self.counters["frames_out_of_order"] += 1
            return
        self._rx_last = frame.seq
        self._send_control(ACK, frame.seq)
        self.counters["messages"] += 1
        self._on_message(frame.payload)

    def _send_control(self, type_: int, seq: int) -> None:
        if self.closed:
            return
        try:
            self._write(encode(seq, type_))
        except OSError:
            self.counters["write_errors"] += 1
