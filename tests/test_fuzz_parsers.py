"""Property-based fuzzing of every parser that reads bytes or levels from outside.

Random bytes, truncated, corrupted and replayed frames: no exception escapes, state stays
usable (a good frame after garbage still decodes), and what was thrown away is counted.
"""

from __future__ import annotations

import asyncio
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.config import SerialConfig
from devices.alpha import (
    FLASH,
    HOLD,
    ROTATE,
    AlphaDecoder,
    encode_text_reply,
    encode_write_text,
)
from devices.arq import FramedLink
from devices.base import State
from devices.debounce import CHATTER, LEVEL, Debouncer
from devices.framing import (
    ACK,
    DATA,
    MAX_FRAME,
    MAX_PAYLOAD,
    NAK,
    SYNC,
    Frame,
    FrameDecoder,
    MessageError,
    encode,
    parse_message,
)
from devices.serial_shaker import SerialShaker
from devices.serial_shuffler import SerialShuffler

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

frames = st.builds(
    lambda seq, t, p: (seq, t, p),
    st.integers(0, 255),
    st.sampled_from([DATA, ACK, NAK]),
    st.binary(max_size=MAX_PAYLOAD),
)


def chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, last = [], 0
    for p in [*points, len(data)]:
        out.append(data[last:p])
        last = p
    return out


# --- framed codec -------------------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=2000), st.lists(st.integers(0, 5000), max_size=8))
def test_random_bytes_never_raise_and_the_buffer_stays_bounded(
    data: bytes, cuts: list[int]
) -> None:
    dec = FrameDecoder()
    for part in chunks(data, cuts):
        for frame in dec.feed(part):
            assert frame.type in (DATA, ACK, NAK) and len(frame.payload) <= MAX_PAYLOAD
        assert dec.pending < MAX_FRAME


@FUZZ
@given(st.binary(max_size=600), frames, st.lists(st.integers(0, 1000), max_size=6))
def test_a_good_frame_after_garbage_and_a_quiet_line_decodes(
    garbage: bytes, f: tuple[int, int, bytes], cuts: list[int]
) -> None:
    dec = FrameDecoder()
    dec.feed(garbage)
    dec.flush()  # the line went quiet (the link does this on its retransmit timer)
    out: list[Frame] = []
    for part in chunks(encode(*f), cuts):
        out += dec.feed(part)
    assert out == [Frame(*f)]


@FUZZ
@given(st.binary(max_size=600).map(lambda b: b.replace(bytes([SYNC]), b"")), frames)
def test_a_good_frame_right_after_sync_free_noise_decodes(
    noise: bytes, f: tuple[int, int, bytes]
) -> None:
    dec = FrameDecoder()
    assert dec.feed(noise + encode(*f)) == [Frame(*f)]
    assert dec.counters["bytes_skipped"] == len(noise)


@FUZZ
@given(frames, st.data())
def test_any_single_bit_error_is_caught(f: tuple[int, int, bytes], data: st.DataObject) -> None:
    raw = bytearray(encode(*f))
    bit = data.draw(st.integers(0, len(raw) * 8 - 1))
    raw[bit // 8] ^= 1 << (bit % 8)
    dec = FrameDecoder()
    assert dec.feed(bytes(raw)) == []  # CRC-16 detects every single-bit error
    # ...and the decoder is not wedged: the next good frame still decodes.
    dec.flush()
    assert dec.feed(encode(*f)) == [Frame(*f)]


@FUZZ
@given(frames, st.integers(1, 300))
def test_a_truncated_frame_yields_nothing_and_is_counted_when_flushed(
    f: tuple[int, int, bytes], cut: int
) -> None:
    raw = encode(*f)
    cut = min(cut, len(raw) - 1)
    dec = FrameDecoder()
    assert dec.feed(raw[:cut]) == []
    dec.flush()
    assert dec.counters["truncated"] == 1 and dec.pending == 0


@FUZZ
@given(st.binary(max_size=300))
def test_parse_message_raises_only_message_error(payload: bytes) -> None:
    try:
        verb, args = parse_message(payload)
    except MessageError:
        return
    assert verb.isalpha() and verb.isupper() and all(a and " " not in a for a in args)


# --- the link: replayed and random frames -------------------------------------------------------


@FUZZ
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=80),
            frames.map(lambda f: encode(*f)),
            st.builds(lambda s, p: encode(s, DATA, p), st.integers(0, 255), st.binary(max_size=20)),
        ),
        max_size=30,
    )
)
def test_the_link_survives_any_stream_and_never_delivers_a_replay_twice(
    chunks_: list[bytes],
) -> None:
    async def run() -> None:
        delivered: list[bytes] = []
        written: list[bytes] = []
        link = FramedLink(written.append, delivered.append, retransmit_s=10)
        for chunk in chunks_:
            link.data_received(chunk)
            link.data_received(chunk)  # every chunk replayed at once
        # Every delivery is a data frame that was next in sequence: a replay adds nothing.
        assert link.counters["messages"] == len(delivered)
        seen_twice = Counter(chunks_)
        assert len(delivered) <= sum(seen_twice.values())
        link.close()

    asyncio.run(run())


# --- Alpha sign -----------------------------------------------------------------------------------

texts = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=125)


@FUZZ
@given(st.binary(max_size=2000), st.lists(st.integers(0, 5000), max_size=6))
def test_alpha_decoder_never_raises_and_stays_bounded(data: bytes, cuts: list[int]) -> None:
    dec = AlphaDecoder()
    for part in chunks(data, cuts):
        dec.feed(part)
        assert len(dec.buffer) < 256


@FUZZ
@given(texts, st.sampled_from([HOLD, FLASH, ROTATE]), st.binary(max_size=200))
def test_alpha_write_round_trips_after_noise(text: str, mode: str, noise: bytes) -> None:
    dec = AlphaDecoder()
    dec.feed(noise)
    dec.flush()
    packets = dec.feed(encode_write_text(text, mode))
    assert [p.text() for p in packets] == [("A", mode, text)]


@FUZZ
@given(texts, st.data())
def test_a_corrupted_alpha_reply_is_never_read_as_other_text(
    text: str, data: st.DataObject
) -> None:
    raw = bytearray(encode_text_reply(text))
    i = data.draw(st.integers(0, len(raw) - 1))
    raw[i] ^= 1 << data.draw(st.integers(0, 6))
    dec = AlphaDecoder()
    for p in dec.feed(bytes(raw)):
        assert p.text() is None or p.text()[2] == text  # a flip in the preamble is harmless


# --- debounce -------------------------------------------------------------------------------------


@FUZZ
@given(st.lists(st.tuples(st.booleans(), st.floats(0, 0.5)), max_size=60), st.booleans())
def test_debounce_reports_only_levels_that_held(
    edges: list[tuple[bool, float]], initial: bool
) -> None:
    deb = Debouncer(0.02, initial=initial, now=0.0, chatter_edges=6, quiet_s=0.2, stuck_s=1.0)
    now = 0.0
    for value, gap in edges:
        now += gap
        for change in deb.poll(now):
            if change.what == LEVEL:
                assert change.value == deb.raw  # never a level the input has already left
                assert now - deb.changed_at >= 0.02
        deb.feed(value, now)
    chatter = [c.value for c in deb.poll(now + 10) if c.what == CHATTER]
    assert chatter in ([], [False], [True, False])  # any chattering has ended
    assert deb.stable == deb.raw and not deb.chattering  # quiet long enough: settled


@FUZZ
@given(st.lists(st.floats(0, 0.0199), min_size=1, max_size=40))
def test_bounces_shorter_than_the_debounce_never_show(gaps: list[float]) -> None:
    deb = Debouncer(0.02, initial=False, now=0.0, chatter_edges=1000, quiet_s=0.02)
    now, level = 0.0, False
    for gap in gaps:
        now += gap
        assert all(c.what != LEVEL for c in deb.poll(now))
        level = not level
        deb.feed(level, now)
    deb.feed(False, now)  # the contact settles where it started
    assert [c for c in deb.poll(now + 1) if c.what == LEVEL] == []


# --- the drivers' message handlers ----------------------------------------------------------------

messages = st.tuples(
    st.sampled_from(
        ["DICE", "NOTFLAT", "FAULT", "SHAKING", "STATUS", "TEST", "READY", "CARD", "DECK", "JAM",
         "SHUFFLING", "HELLO", "ZZZ"]
    ),
    st.lists(
        st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=5), max_size=6
    ),
)  # fmt: skip


@FUZZ
@given(st.lists(messages, max_size=40), st.booleans())
def test_random_messages_never_break_the_shaker(
    msgs: list[tuple[str, list[str]]], shaking: bool
) -> None:
    async def run() -> None:
        shaker = SerialShaker(SerialConfig(port="/dev/null", baud=115200), cut_die=True, poll_s=0)
        events: list = []
        shaker._emit, shaker._loop = events.append, asyncio.get_running_loop()
        shaker.state = State.READY
        for verb, args in msgs:
            if shaking and shaker.channel.waiting is None:
                shaker.state, shaker.channel.waiting = State.BUSY, "SHAKE"
            shaker.channel._payload(" ".join([verb, *args]).encode())
        await asyncio.sleep(0)
        shaker.channel._stop_timer()
        for e in events:
            if e.kind == "dice.result":
                assert all(1 <= d <= 6 for d in e.data["box_dice"]) and 1 <= e.data["cut_die"] <= 6
            else:
                assert e.kind in ("dice.not_flat", "shaker.fault")
        assert shaker.state in (State.READY, State.BUSY, State.FAULT, State.OFFLINE)

    asyncio.run(run())


@FUZZ
@given(st.lists(messages, max_size=40), st.sampled_from(["SHUFFLE", "DEAL", "CHECK", None]))
def test_random_messages_never_break_the_shuffler(
    msgs: list[tuple[str, list[str]]], waiting: str | None
) -> None:
    async def run() -> None:
        shuffler = SerialShuffler(SerialConfig(port="/dev/null", baud=115200), decks=2, poll_s=0)
        events: list = []
        shuffler._emit, shuffler._loop = events.append, asyncio.get_running_loop()
        shuffler.state = State.READY
        if waiting:
            shuffler._request(waiting, 1 if waiting != "DEAL" else 5)
        for verb, args in msgs:
            shuffler.channel._payload(" ".join([verb, *args]).encode())
        await asyncio.sleep(0)
        shuffler.channel._stop_timer()
        shuffler.channel.link.close()
        indexes = [e.data["index"] for e in events if e.kind == "card.dispensed"]
        assert indexes == list(range(len(indexes)))  # cards only in order, none twice
        for e in events:
            assert e.kind in shuffler.EVENTS

    asyncio.run(run())
