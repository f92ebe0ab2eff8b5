"""Property-based fuzzing of every parser that reads bytes or levels from outside.

Random bytes, truncated, corrupted and replayed frames: no exception escapes, state stays
usable (a good frame after garbage still decodes), and what was thrown away is counted. The MQTT
contract, the control socket's request line and both config files: random input and real
messages and configs with one field mangled raise only the parser's documented error.
bench/fuzz_parsers.py runs a million coverage-guided inputs per parser outside CI.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import fuzz_parsers as fuzz_bench
from controller.config import ConfigError, SerialConfig
from controller.config import load_config as load_table_config
from controller.config import validate_text as validate_table_config
from controller.control import parse_request
from devices.base import State
from devices.proto.alpha import (
    FLASH,
    HOLD,
    ROTATE,
    AlphaDecoder,
    encode_text_reply,
    encode_write_text,
)
from devices.proto.arq import FramedLink
from devices.proto.framing import (
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
from devices.sensors.debounce import CHATTER, LEVEL, Debouncer
from devices.shaker.driver import SerialShaker
from devices.shuffler.driver import SerialShuffler
from headoffice.config import HeadOfficeConfigError
from headoffice.config import validate_text as validate_ho_config
from shared.link import contract, patron
from tests.fuzz_seeds import TABLE, contract_seeds, ho_config_seeds, table_config_seeds

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


# --- the MQTT contract, both sides (shared/link/contract.py) ---------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12,
)


def _parse_outbox(raw: bytes) -> dict:
    body = contract.parse_outbox(raw, TABLE)
    return contract.check_outbox_payload(body["type"], body["payload"])


CONTRACT_PARSERS = {
    "outbox": _parse_outbox,
    "birth": lambda raw: contract.parse_birth(raw, TABLE),
    "status": lambda raw: contract.parse_status(raw, TABLE),
    "ack": lambda raw: contract.parse_ack(raw, TABLE),
    "pool": contract.parse_pool,
    "award": lambda raw: contract.parse_award(raw, TABLE),
    "segment": lambda raw: contract.parse_segment(raw, TABLE),
    "segment_ack": lambda raw: contract.parse_segment_ack(raw, TABLE),
    "card_request": lambda raw: patron.parse_card_request(raw, TABLE),
    "card_answer": lambda raw: patron.parse_card_answer(raw, TABLE),
}


def _whole(value: object, lo: int = 0) -> bool:
    return type(value) is int and value >= lo  # not bool, not float


def _money_checked(name: str, got: Any) -> None:
    """What a parser accepted carries its money and numbers as integers (cents), never float
    or bool: the fields each parser promises to check (birth and status carry no money)."""
    if name == "outbox" and "card" in got:  # Player Cards: a restriction has no round
        assert got.get("round") is None or _whole(got["round"], 1)
        assert all(_whole(got[k]) for k in ("amount", "reserved", "wagered", "returned")
                   if k in got)
        assert "net" not in got or type(got["net"]) is int
    elif name == "outbox":
        assert _whole(got["round"], 1)
        if "amount" in got and "hits" not in got:  # an increment or a cancellation
            assert _whole(got["amount"]) and got["amount"] == got["wager"] * got["wagers"]
        for e in got.get("entries", []):
            assert _whole(e["box"], 1) and _whole(e["wager"], 1)
    elif name == "pool":
        assert _whole(got["amount"]) and _whole(got["version"], 1)
    elif name == "award":
        assert _whole(got["round"], 1)
        assert all(_whole(p["amount"]) and _whole(p["box"], 1) for p in got["payouts"])
    elif name == "ack":
        assert _whole(got)
    elif name == "segment":  # seqs and sizes whole, in order; the hashes 64 hex digits
        assert _whole(got["first"], 1) and _whole(got["last"], got["first"])
        assert _whole(got["size"], 1) and _whole(got["segment"], 1)
        assert all(len(got[k]) == 64 for k in ("prev", "head", "digest"))
    elif name == "card_request":  # a reservation's round and amount whole
        assert got["type"] != "card_reserve" or (_whole(got["round"], 1)
                                                 and _whole(got["amount"]))
    elif name == "card_answer":
        assert all(got[k] is None or _whole(got[k]) for k in ("limit", "remaining", "granted"))
        assert type(got["valid"]) is bool and type(got["restricted"]) is bool
    elif name == "segment_ack":
        assert _whole(got["segment"], 1) and got["status"] in ("held", "refused")


@FUZZ
@given(st.sampled_from(sorted(CONTRACT_PARSERS)), st.binary(max_size=400))
def test_contract_parsers_raise_only_schema_error_on_random_bytes(name: str, raw: bytes) -> None:
    with contextlib.suppress(contract.SchemaError):
        CONTRACT_PARSERS[name](raw)


@FUZZ
@given(st.sampled_from(sorted(CONTRACT_PARSERS)), st.sampled_from(contract_seeds()), st.data())
def test_contract_parsers_on_valid_messages_with_a_field_mangled(
    name: str, seed: bytes, data: st.DataObject
) -> None:
    """One field of a real message replaced by any JSON value or removed, at the top or in the
    payload: refused with SchemaError, or accepted with integer cents."""
    message = json.loads(seed)
    where = message["payload"] if "payload" in message and data.draw(st.booleans()) else message
    if isinstance(where, dict) and where:
        key = data.draw(st.sampled_from(sorted(where)))
        if data.draw(st.booleans()):
            where[key] = data.draw(json_values)
        else:
            del where[key]
    raw = json.dumps(message, allow_nan=True).encode()
    try:
        got = CONTRACT_PARSERS[name](raw)
    except contract.SchemaError:
        return
    _money_checked(name, got)


@pytest.mark.parametrize("name", sorted(CONTRACT_PARSERS))
@pytest.mark.parametrize("raw", [b"[" * 100_000, b'{"v": 1, "x": ' + b"{\"a\": " * 50_000,
                                 b"\xff\xfe", b'{"v": 1}' * 2, b"", b"9" * 5000])
def test_contract_parsers_refuse_deep_nesting_and_junk(name: str, raw: bytes) -> None:
    with pytest.raises(contract.SchemaError):
        CONTRACT_PARSERS[name](raw)


def test_contract_parsers_refuse_a_payload_over_the_bound() -> None:
    big = json.dumps({"v": 1, "table": TABLE, "pad": "x" * contract.MAX_PAYLOAD}).encode()
    for parse in CONTRACT_PARSERS.values():
        with pytest.raises(contract.SchemaError, match="more than"):
            parse(big)


@FUZZ
@given(st.text(max_size=80))
def test_table_of_topic_raises_only_schema_error(topic: str) -> None:
    try:
        table, _leaf = contract.table_of_topic(topic)
    except contract.SchemaError:
        return
    assert contract.TABLE_ID.fullmatch(table)


# --- the control socket's request line (controller/control.py) -----------------------------------


@FUZZ
@given(st.one_of(st.binary(max_size=300), json_values.map(lambda v: json.dumps(v).encode())))
def test_control_request_parser_raises_only_value_error(line: bytes) -> None:
    try:
        request = parse_request(line)
    except ValueError:
        return
    assert isinstance(request["cmd"], str) and isinstance(request.get("args", {}), dict)


def test_control_request_parser_refuses_deep_nesting() -> None:
    with pytest.raises(ValueError):
        parse_request(b'{"cmd": "status", "args": ' + b"[" * 60_000)


# --- config files (controller/config.py, headoffice/config.py) ----------------------------------

toml_scalars = st.one_of(
    st.integers(-(2**70), 2**70).map(str), st.floats().map(lambda f: repr(f).replace("nan", "nan")
                                                           .replace("inf", "inf")),
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters='"\\'),
            max_size=12).map(lambda s: f'"{s}"'),
    st.sampled_from(["true", "false", "[]", "{}", "[1, 2]", '""', "1979-05-27T07:32:00Z",
                     "inf", "-inf", "nan", "0x7fffffffffffffff", "1e400"]),
)


def _mangled(text: str, data: st.DataObject) -> str:
    """One `key = value` line of a real config given another value."""
    lines = text.splitlines()
    keyed = [i for i, line in enumerate(lines) if re.match(r"\s*[a-z_]+\s*=", line)]
    i = data.draw(st.sampled_from(keyed))
    lines[i] = lines[i].split("=", 1)[0] + "= " + data.draw(toml_scalars)
    return "\n".join(lines) + "\n"


@FUZZ
@given(st.sampled_from(table_config_seeds()), st.data())
def test_table_config_with_any_value_is_loaded_or_refused_with_config_error(
    seed: bytes, data: st.DataObject
) -> None:
    with contextlib.suppress(ConfigError):
        validate_table_config(_mangled(seed.decode(), data))


@FUZZ
@given(st.text(max_size=300))
def test_table_config_random_text_is_a_config_error(text: str) -> None:
    with contextlib.suppress(ConfigError):
        validate_table_config(text)


def test_a_table_config_file_that_is_not_utf8_is_a_config_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "table.toml"
    path.write_bytes(table_config_seeds()[0] + b"# \xff\xfe\n")
    with pytest.raises(ConfigError, match="cannot read"):
        load_table_config(path)


@FUZZ
@given(st.sampled_from(ho_config_seeds()), st.data())
def test_headoffice_config_with_any_value_is_loaded_or_refused_with_its_error(
    seed: bytes, data: st.DataObject
) -> None:
    with contextlib.suppress(HeadOfficeConfigError):
        validate_ho_config(_mangled(seed.decode(), data))


def test_table_config_refuses_deep_nesting() -> None:
    with pytest.raises(ConfigError):
        validate_table_config("a = " + "[" * 5000)


@pytest.mark.parametrize("text", ["a = " + "[" * 5000,
                                  '[database]\nurl = "x"\n[service]\nheartbeat_s = ' + "9" * 400])
def test_headoffice_config_refuses_deep_nesting_and_huge_numbers(text: str) -> None:
    with pytest.raises(HeadOfficeConfigError):
        validate_ho_config(text)


def test_headoffice_config_refuses_an_infinite_heartbeat() -> None:
    with pytest.raises(HeadOfficeConfigError):
        validate_ho_config('[database]\nurl = "x"\n[service]\nheartbeat_s = inf\n')


# --- the fuzz bench itself (bench/fuzz_parsers.py) -----------------------------------------------

REPO = Path(__file__).resolve().parents[1]


def test_the_fuzz_bench_runs_every_parser_and_reports(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "bench/fuzz_parsers.py", "--engine", "mutational", "--runs", "100",
         "--jobs", "4", "--artifacts", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    for name in fuzz_bench.TARGETS:
        assert re.search(rf"^{re.escape(name)} +100 inputs .* findings: none$", out.stdout,
                         re.M), name


def test_the_fuzz_bench_reports_an_undocumented_exception_and_a_hang(tmp_path: Path) -> None:
    """The mutational engine (in a child: it sets RLIMIT_AS) finds what a parser must not do."""
    code = f"""
import time
from bench import fuzz_parsers as fz
def run(data):
    if b"q" in data:
        raise KeyError("not the documented error")
    if b"w" in data:
        time.sleep(30)
    raise ValueError("documented")
t = fz.Target(run, (ValueError,), lambda: [b"abcdefgh"], "test")
got = fz.mutational(t, 2000, 0.1, 2048, 1, fz.Path({str(tmp_path)!r}), "t")
print(sorted(f.split(":")[0] for f in got["findings"]))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         timeout=300, check=False)
    assert out.stdout.strip().splitlines()[-1] == "['Hang', 'KeyError']", out.stderr[-3000:]
    assert (tmp_path / "t-1.bin").exists() and (tmp_path / "t-2.bin").exists()
