"""The two byte-stream parsers (devices/proto/framing.py, alpha.py) share one base,
devices/proto/stream.py: noise before a start byte is counted and dropped, a unit that fails its
checks costs only its start byte (a real unit inside it is still found), and `flush` forgets a
partial unit as `truncated`. Each property runs on both parsers."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from devices.proto import alpha, framing
from devices.proto.stream import StreamDecoder

# (decoder class, a valid unit, the good-units counter)
PARSERS: list[tuple[Callable[[], StreamDecoder], bytes, str]] = [
    (framing.FrameDecoder, framing.encode(0, framing.DATA, b"DICE 3 5 6 -"), "frames"),
    (alpha.AlphaDecoder, alpha.encode_write_text("POOL $1,234.00"), "packets"),
]
IDS = ["framing", "alpha"]


@pytest.mark.parametrize(("make", "unit", "good"), PARSERS, ids=IDS)
@given(noise=st.binary(max_size=300))
def test_noise_is_counted_and_the_unit_after_it_found(
    make: Callable[[], StreamDecoder], unit: bytes, good: str, noise: bytes
) -> None:
    decoder = make()
    noise = bytes(b for b in noise if b != decoder.START)
    found = decoder.feed(noise) + decoder.feed(unit)
    assert len(found) == 1 and decoder.counters[good] == 1
    # alpha's five NUL preamble is noise before SOH too
    assert decoder.counters["bytes_skipped"] == len(noise) + unit.index(decoder.START)
    assert decoder.pending == 0


@pytest.mark.parametrize(("make", "unit", "good"), PARSERS, ids=IDS)
def test_a_false_start_costs_one_byte_and_the_real_unit_is_kept(
    make: Callable[[], StreamDecoder], unit: bytes, good: str
) -> None:
    decoder = make()
    found = decoder.feed(bytes((decoder.START,)) + unit[unit.index(decoder.START):])
    assert len(found) == 1
    assert decoder.counters[decoder.BAD] == 1 and decoder.counters[good] == 1


@pytest.mark.parametrize(("make", "unit", "good"), PARSERS, ids=IDS)
@given(cut=st.integers(min_value=1, max_value=8))
def test_flush_forgets_a_partial_unit_as_truncated(
    make: Callable[[], StreamDecoder], unit: bytes, good: str, cut: int
) -> None:
    decoder = make()
    start = unit.index(decoder.START)
    assert decoder.feed(unit[: start + cut]) == []
    assert decoder.pending == cut
    decoder.flush()
    assert decoder.pending == 0 and decoder.counters["truncated"] == 1
    decoder.flush()  # nothing pending: nothing counted
    assert decoder.counters["truncated"] == 1
    assert len(decoder.feed(unit)) == 1
