"""The subset of the Alpha Sign Communications Protocol the progressive meter speaks.

Public protocol (Adaptive Micro Systems, "Alpha Sign Communications Protocol", 9708-8061),
9600 baud 7E1. One packet:

    NUL x5 | SOH | type code | address (2) | STX | command | data | ETX | checksum (4) | EOT

The five NULs let the sign find the baud rate. The checksum is the 16-bit sum of every byte from
STX through ETX inclusive, as four upper-case ASCII hex digits. The subset (docs/protocols.md):

    write TEXT file   command "A", data = label, ESC, position, mode code, text
    read TEXT file    command "B", data = label        (the sign answers with type "0",
                      address "00" and command "A": the label and the text it holds)

Mode codes used: "b" hold (pool, OFFLINE, CLOSED, short announcements), "c" flash (WIN),
"a" rotate (announcements longer than the sign's line). Text is 7-bit printable ASCII; anything
else is replaced by "?" (counted by the caller).

`encode_*` build packets; `AlphaDecoder.feed` parses a byte stream into packets and never raises.
Both the meter driver and the pty simulator use them.
"""

from __future__ import annotations

from dataclasses import dataclass

from devices.errors import AlphaError
from devices.proto.stream import StreamDecoder

NUL, SOH, STX, ETX, EOT, ESC = 0x00, 0x01, 0x02, 0x03, 0x04, 0x1B
PREAMBLE = bytes(5)
TYPE_ALL = "Z"  # every sign type
TYPE_REPLY = "0"  # what a sign puts in the type field of its answers
BROADCAST = "00"
WRITE_TEXT, READ_TEXT = "A", "B"
HOLD, FLASH, ROTATE = "b", "c", "a"
MODES = frozenset((HOLD, FLASH, ROTATE))
POSITION_MIDDLE = " "
LABEL = "A"
MAX_TEXT = 125  # what the sign's default TEXT file holds
MAX_PACKET = 256  # SOH .. EOT: anything longer without an EOT is garbage


def checksum(block: bytes) -> bytes:
    """STX..ETX inclusive -> 4 upper-case hex digits of the 16-bit sum."""
    return f"{sum(block) & 0xFFFF:04X}".encode("ascii")


def printable(text: str) -> tuple[str, int]:
    """Text the sign can show: 7-bit printable ASCII; returns (text, characters replaced)."""
    out = [c if " " <= c <= "~" else "?" for c in text]
    return "".join(out), sum(1 for a, b in zip(out, text, strict=True) if a != b)


def _packet(type_code: str, address: str, command: str, data: bytes) -> bytes:
    if len(type_code) != 1 or len(address) != 2 or len(command) != 1:
        raise AlphaError("type code, address and command are 1, 2 and 1 characters")
    block = bytes((STX,)) + command.encode("ascii") + data + bytes((ETX,))
    return (
        PREAMBLE
        + bytes((SOH,))
        + (type_code + address).encode("ascii")
        + block
        + checksum(block)
        + bytes((EOT,))
    )


def encode_write_text(
    text: str, mode: str = HOLD, *, label: str = LABEL, address: str = BROADCAST
) -> bytes:
    if mode not in MODES:
        raise AlphaError(f"mode code {mode!r} is not one of {sorted(MODES)}")
    if len(text) > MAX_TEXT or printable(text)[1]:
        raise AlphaError(f"text {text[:20]!r}... is not up to {MAX_TEXT} printable characters")
    data = (label + chr(ESC) + POSITION_MIDDLE + mode + text).encode("ascii")
    return _packet(TYPE_ALL, address, WRITE_TEXT, data)


def encode_read_text(*, label: str = LABEL, address: str = BROADCAST) -> bytes:
    return _packet(TYPE_ALL, address, READ_TEXT, label.encode("ascii"))


def encode_text_reply(text: str, *, label: str = LABEL) -> bytes:
    """The sign's answer to a read: label and the text it holds (no mode bytes)."""
    return _packet(TYPE_REPLY, BROADCAST, WRITE_TEXT, (label + text).encode("ascii"))


@dataclass(frozen=True)
class AlphaPacket:
    type_code: str
    address: str
    command: str
    data: bytes

    def text(self) -> tuple[str, str, str] | None:
        """A write-TEXT packet's (label, mode, text); None for anything else."""
        if self.command != WRITE_TEXT or not self.data:
            return None
        label, rest = chr(self.data[0]), self.data[1:]
        mode = ""
        if len(rest) >= 3 and rest[0] == ESC:
            mode, rest = chr(rest[2]), rest[3:]
        return label, mode, rest.decode("ascii", "replace")


class AlphaDecoder(StreamDecoder):
    """Bytes in, packets out; never raises. Counters: `packets`, `packets_bad` (bad structure or
    checksum), `bytes_skipped` (preamble NULs and noise between packets), `truncated`."""

    START = SOH
    BAD = "packets_bad"

    def feed(self, data: bytes) -> list[AlphaPacket]:
        self.buffer += data
        buf = self.buffer
        packets: list[AlphaPacket] = []
        while buf and self._to_start():
            end = buf.find(EOT, 1, MAX_PACKET)
            if end < 0:
                if len(buf) >= MAX_PACKET:
                    self._reject()
                    continue
                break
            packet = _parse(bytes(buf[: end + 1]))
            if packet is None:
                self._reject()
                continue
            packets.append(packet)
            self.counters["packets"] += 1
            del buf[: end + 1]
        return packets


def _parse(raw: bytes) -> AlphaPacket | None:
    """SOH type addr(2) STX cmd data ETX sum(4) EOT -> packet, or None if malformed."""
    if len(raw) < 1 + 3 + 1 + 1 + 1 + 4 + 1 or raw[0] != SOH or raw[-1] != EOT:
        return None
    if raw[4] != STX or raw[-6] != ETX:
        return None
    head = raw[1:4]
    block = raw[4:-5]
    if not all(0x20 < b < 0x7F for b in head) or checksum(block) != raw[-5:-1]:
        return None
    data = block[2:-1]
    if any(b in (SOH, STX, ETX, EOT) or b > 0x7F for b in data):
        return None
    return AlphaPacket(chr(head[0]), head[1:].decode("ascii"), chr(block[1]), data)
