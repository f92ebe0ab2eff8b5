"""The framed serial codec of the dice shaker and the shuffler (docs/protocols.md).

Neither device has a public protocol, so they speak ours, shaped like Klipper's:

    SYNC 0x7E | LEN | SEQ | TYPE | PAYLOAD (LEN bytes) | CRC-16/CCITT-FALSE (big-endian)

LEN counts the payload only (0..MAX_PAYLOAD); the CRC covers LEN, SEQ, TYPE and PAYLOAD
(`binascii.crc_hqx` with initial value 0xFFFF: poly 0x1021, no reflection, no final xor).
TYPE is b"D" (data: one message), b"A" (ACK of the data frame SEQ) or b"N" (NAK: resend, SEQ is
the sequence number the receiver expects next). A data payload is printable ASCII, a verb and
its space-separated arguments ("SHAKE", "DICE 3 5 6 -"), so a technician can read a capture.

This module is pure: `encode` builds a frame, `FrameDecoder.feed(bytes)` returns the frames found
and counts what it threw away. It never raises on input, and its buffer never grows past one
frame: garbage is skipped a byte at a time until a SYNC starts a frame whose CRC is good
(resynchronisation), so a corrupted frame costs that frame and nothing after it.
"""

from __future__ import annotations

import binascii
from dataclasses import dataclass

from devices.errors import FrameError, MessageError
from devices.proto.stream import StreamDecoder

SYNC = 0x7E
HEADER = 4  # SYNC LEN SEQ TYPE
TRAILER = 2  # CRC
MAX_PAYLOAD = 240
MAX_FRAME = HEADER + MAX_PAYLOAD + TRAILER

DATA = ord("D")
ACK = ord("A")
NAK = ord("N")
TYPES = frozenset((DATA, ACK, NAK))


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE (check value of b"123456789" is 0x29B1)."""
    return binascii.crc_hqx(data, 0xFFFF)


@dataclass(frozen=True)
class Frame:
    seq: int
    type: int
    payload: bytes = b""

    @property
    def kind(self) -> str:
        return chr(self.type)


def encode(seq: int, type_: int, payload: bytes = b"") -> bytes:
    if not 0 <= seq <= 255:
        raise FrameError(f"sequence number {seq} outside 0..255")
    if type_ not in TYPES:
        raise FrameError(f"frame type {type_!r} is not D, A or N")
    if len(payload) > MAX_PAYLOAD:
        raise FrameError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    body = bytes((len(payload), seq, type_)) + payload
    return bytes((SYNC,)) + body + crc16(body).to_bytes(2, "big")


class FrameDecoder(StreamDecoder):
    """Bytes in, frames out; never raises. Counters: `frames` (good), `frames_bad` (a SYNC whose
    frame failed its length, type or CRC check), `bytes_skipped` (garbage between frames),
    `truncated` (a partial frame dropped by `flush`)."""

    START = SYNC
    BAD = "frames_bad"

    def feed(self, data: bytes) -> list[Frame]:
        self.buffer += data
        frames: list[Frame] = []
        buf = self.buffer
        while buf and self._to_start():
            if len(buf) < HEADER:
                break
            length, seq, type_ = buf[1], buf[2], buf[3]
            if length > MAX_PAYLOAD or type_ not in TYPES:
                self._reject()
                continue
            end = HEADER + length + TRAILER
            if len(buf) < end:
                break
            body = bytes(buf[1 : HEADER + length])
            if crc16(body) != int.from_bytes(buf[end - TRAILER : end], "big"):
                self._reject()
                continue
            frames.append(Frame(seq, type_, bytes(buf[HEADER : HEADER + length])))
            self.counters["frames"] += 1
            del buf[:end]
        return frames


# --- messages -----------------------------------------------------------------------------------


def message(verb: str, *args: object) -> bytes:
    text = " ".join([verb, *(str(a) for a in args)])
    data = text.encode("ascii", "replace")
    printable = all(0x20 <= b < 0x7F for b in data)
    if not text.isascii() or not data or not printable or len(data) > MAX_PAYLOAD:
        raise MessageError(f"cannot send {text!r} as a message")
    return data


def parse_message(payload: bytes) -> tuple[str, list[str]]:
    """b"DICE 3 5 6 -" -> ("DICE", ["3", "5", "6", "-"]); MessageError if it is not one."""
    if not payload or not all(0x20 <= b < 0x7F for b in payload):
        raise MessageError(f"payload {payload[:32]!r} is not a printable ASCII message")
    tokens = payload.decode("ascii").split()
    if not tokens:
        raise MessageError("blank message")
    verb, *args = tokens
    if not verb.isalpha() or not verb.isupper():
        raise MessageError(f"bad verb {verb[:16]!r}")
    return verb, args
