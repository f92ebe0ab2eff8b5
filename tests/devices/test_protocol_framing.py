"""The framed serial protocol: codec, ACK/NAK link, retransmission, replay (docs/protocols.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from devices.proto.arq import HELLO, MAX_QUEUE, FramedLink, next_seq
from devices.proto.framing import (
    ACK,
    DATA,
    MAX_PAYLOAD,
    NAK,
    SYNC,
    Frame,
    FrameDecoder,
    FrameError,
    MessageError,
    crc16,
    encode,
    message,
    parse_message,
)


def test_crc_is_ccitt_false() -> None:
    assert crc16(b"123456789") == 0x29B1  # the catalogued check value of CRC-16/CCITT-FALSE


def test_frame_layout() -> None:
    frame = encode(7, DATA, b"SHAKE")
    assert frame[0] == SYNC and frame[1] == 5 and frame[2] == 7 and frame[3] == DATA
    assert frame[4:9] == b"SHAKE"
    assert int.from_bytes(frame[9:], "big") == crc16(frame[1:9])


@pytest.mark.parametrize(
    ("seq", "type_", "payload"),
    [(256, DATA, b""), (-1, DATA, b""), (1, ord("X"), b""), (1, DATA, b"x" * (MAX_PAYLOAD + 1))],
)
def test_unbuildable_frames_are_refused(seq: int, type_: int, payload: bytes) -> None:
    with pytest.raises(FrameError):
        encode(seq, type_, payload)


def test_decoder_splits_joins_and_resynchronises() -> None:
    a, b = encode(1, DATA, b"DICE 1 2 3 -"), encode(2, ACK)
    dec = FrameDecoder()
    # Noise (with a stray SYNC), a frame split across reads, a corrupted frame, a good one.
    bad = bytearray(encode(3, DATA, b"NOTFLAT"))
    bad[6] ^= 0x10
    stream = b"\x00\x7e\x05zz" + a + bytes(bad) + b
    out: list[Frame] = []
    for i in range(0, len(stream), 3):
        out += dec.feed(stream[i : i + 3])
    assert out == [Frame(1, DATA, b"DICE 1 2 3 -"), Frame(2, ACK)]
    assert dec.counters["frames_bad"] >= 2 and dec.pending == 0


def test_messages_round_trip_and_bad_ones_are_named() -> None:
    assert parse_message(message("DICE", 3, 5, 6, "-")) == ("DICE", ["3", "5", "6", "-"])
    for payload in (b"", b"   ", b"dice 1", b"DI\x00CE", b"1234"):
        with pytest.raises(MessageError):
            parse_message(payload)
    with pytest.raises(MessageError):
        message("CARD", "\u00e9")


def test_sequence_numbers_skip_zero() -> None:
    assert next_seq(1) == 2 and next_seq(254) == 255 and next_seq(255) == 1


# --- two links on an in-memory wire ---------------------------------------------------------


class Wire:
    """Two FramedLinks joined back to back; `tamper` may drop or change what one side sends."""

    def __init__(self, retransmit_s: float = 0.02, max_retries: int = 3) -> None:
        self.got_a: list[bytes] = []
        self.got_b: list[bytes] = []
        self.gave_up: list[str] = []
        self.tamper_a: Callable[[bytes], bytes | None] = lambda b: b
        self.sent_a: list[bytes] = []
        self.a = FramedLink(
            self._to_b,
            self.got_a.append,
            retransmit_s=retransmit_s,
            max_retries=max_retries,
            on_give_up=self.gave_up.append,
        )
        self.b = FramedLink(self._to_a, self.got_b.append, retransmit_s=retransmit_s)

    def _to_b(self, data: bytes) -> None:
        self.sent_a.append(data)
        data2 = self.tamper_a(data)
        if data2 is not None:
            asyncio.get_running_loop().call_soon(self.b.data_received, data2)

    def _to_a(self, data: bytes) -> None:
        asyncio.get_running_loop().call_soon(self.a.data_received, data)


async def settle(wire: Wire, s: float = 0.3) -> None:
    await asyncio.sleep(s)


def test_messages_arrive_once_in_order() -> None:
    async def run() -> None:
        w = Wire()
        for i in range(300):  # past the 255 wrap
            w.a.send(message("CARD", i, "As"))
            while len(w.a._queue) >= MAX_QUEUE - 1:
                await asyncio.sleep(0.001)
        while not w.a.idle:
            await asyncio.sleep(0.01)
        assert w.got_b == [message("CARD", i, "As") for i in range(300)]
        assert w.b.counters["sessions"] == 1

    asyncio.run(run())


def test_a_queue_that_cannot_drain_is_bounded_and_counted() -> None:
    async def run() -> None:
        w = Wire()
        w.tamper_a = lambda data: None
        for i in range(MAX_QUEUE + 10):
            w.a.send(message("CARD", i, "As"))
        assert len(w.a._queue) == MAX_QUEUE
        assert w.a.counters["send_dropped"] >= 10
        w.a.close()

    asyncio.run(run())


def test_a_dropped_frame_is_resent_and_a_corrupted_one_nakked() -> None:
    async def run() -> None:
        w = Wire()
        faults = ["drop", "corrupt"]

        def tamper(data: bytes) -> bytes | None:
            if data[3] == DATA and data[4:] != HELLO + data[-2:] and faults:
                what = faults.pop(0)
                if what == "drop":
                    return None
                return data[:5] + bytes([data[5] ^ 0x01]) + data[6:]
            return data

        w.tamper_a = tamper
        w.a.send(b"SHAKE")
        w.a.send(b"STATUS")
        await settle(w)
        assert w.got_b == [b"SHAKE", b"STATUS"]
        assert w.a.counters["retries"] >= 2
        assert w.b.counters["frames_bad"] == 1 and w.a.counters["naks_received"] == 1

    asyncio.run(run())


def test_a_replayed_frame_is_acknowledged_but_not_delivered_twice() -> None:
    async def run() -> None:
        w = Wire()
        w.a.send(b"SHAKE")
        await settle(w, 0.1)
        shake = next(f for f in w.sent_a if f[4:9] == b"SHAKE")
        for _ in range(3):
            w.b.data_received(shake)
        await settle(w, 0.1)
        assert w.got_b == [b"SHAKE"]
        assert w.b.counters["frames_duplicate"] == 3

    asyncio.run(run())


def test_an_old_frame_out_of_order_is_ignored() -> None:
    async def run() -> None:
        w = Wire()
        w.a.send(b"SHAKE")
        w.a.send(b"STATUS")
        await settle(w, 0.1)
        first = next(f for f in w.sent_a if f[4:9] == b"SHAKE")
        w.b.data_received(first)  # seq 1 after seq 2: neither next nor a repeat
        await settle(w, 0.1)
        assert w.got_b == [b"SHAKE", b"STATUS"]
        assert w.b.counters["frames_out_of_order"] == 1

    asyncio.run(run())


def test_a_silent_peer_makes_the_link_give_up_and_drop_the_queue() -> None:
    async def run() -> None:
        w = Wire(retransmit_s=0.01, max_retries=2)
        w.tamper_a = lambda data: None  # the wire is cut
        w.a.send(b"SHAKE")
        w.a.send(b"STATUS")
        await settle(w, 0.2)
        assert w.gave_up == ["no acknowledgement"]
        assert w.a.idle and w.got_b == []
        # The wire is mended: the next message starts a new session and gets through, and the
        # dropped SHAKE is never delivered late.
        w.tamper_a = lambda data: data
        w.a.send(b"TEST")
        await settle(w, 0.2)
        assert w.got_b == [b"TEST"]

    asyncio.run(run())


def test_nak_and_control_frames_carry_no_payload() -> None:
    for t in (ACK, NAK):
        assert len(encode(9, t)) == 6
