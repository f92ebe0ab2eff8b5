"""The dm-log-writes reader and replayer (image/vm/logwrites.py) on logs built here in the
kernel's format (drivers/md/dm-log-writes.c): super block, then per entry one sector of
`log_write_entry` (and a mark's text) followed by its data."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from image.vm.logwrites import (
    DISCARD,
    FLUSH,
    FUA,
    MAGIC,
    MARK,
    LogFormatError,
    Replayer,
    read_log,
    spread,
)


def build_log(
    path: Path,
    entries: list[tuple[int, int, bytes | str]],
    sectorsize: int = 512,
    nr_entries: int | None = None,
    stale: bytes = b"",
) -> None:
    """entries: (sector, flags, data) with data a whole number of sectors, or a mark's text."""
    out = bytearray(sectorsize)
    struct.pack_into(
        "<QQQI", out, 0, MAGIC, 1, len(entries) if nr_entries is None else nr_entries, sectorsize
    )
    for sector, flags, data in entries:
        head = bytearray(sectorsize)
        if isinstance(data, str):
            text = data.encode()
            struct.pack_into("<QQQQ", head, 0, 0, 0, flags | MARK, len(text))
            head[32 : 32 + len(text)] = text
            out += head
            continue
        assert len(data) % sectorsize == 0
        n = len(data) // sectorsize
        struct.pack_into("<QQQQ", head, 0, sector, n, flags, 0)
        out += head
        if not flags & DISCARD:
            out += data
    path.write_bytes(bytes(out) + stale)


def sectors(byte: int, n: int = 1, size: int = 512) -> bytes:
    return bytes([byte]) * (size * n)


def test_entries_flags_marks_and_flush_points(tmp_path: Path) -> None:
    log = tmp_path / "log"
    build_log(
        log,
        [
            (2, 0, sectors(1)),
            (0, FLUSH, b""),
            (3, FUA, sectors(2, 2)),
            (0, 0, "segment closed"),
            (5, DISCARD, sectors(0, 4)),
            (1, 0, sectors(3)),
        ],
    )
    parsed = read_log(log)
    assert parsed.sectorsize == 512
    assert [(e.sector, e.nr_sectors, e.flags) for e in parsed.entries] == [
        (2, 1, 0),
        (0, 0, FLUSH),
        (3, 2, FUA),
        (0, 0, MARK),
        (5, 4, DISCARD),
        (1, 1, 0),
    ]
    assert parsed.entries[3].mark == "segment closed"
    assert [e.index for e in parsed.flush_points()] == [1, 2]
    assert parsed.entries[2].describe() == "#2 FUA sector 3+2"


def test_replay_leaves_the_device_as_it_was_after_each_entry(tmp_path: Path) -> None:
    log, image = tmp_path / "log", tmp_path / "img"
    image.write_bytes(sectors(9, 8))
    build_log(
        log,
        [
            (1, 0, sectors(1)),
            (0, FLUSH, b""),
            (2, FUA, sectors(2, 2)),
            (1, 0, sectors(4)),
            (4, DISCARD, sectors(0, 2)),
            (0, FLUSH, b""),
        ],
    )
    parsed = read_log(log)
    with Replayer(parsed, image) as rep:
        rep.upto(1)
        assert image.read_bytes() == sectors(9) + sectors(1) + sectors(9, 6)
        rep.upto(2)
        assert image.read_bytes() == sectors(9) + sectors(1) + sectors(2, 2) + sectors(9, 4)
        rep.upto(5)  # a later write over an earlier one; a discard leaves zeros
        assert image.read_bytes() == (
            sectors(9) + sectors(4) + sectors(2, 2) + sectors(0, 2) + sectors(9, 2)
        )
        with pytest.raises(ValueError):
            rep.upto(0)


def test_4k_sectors_count_in_the_logs_sectorsize(tmp_path: Path) -> None:
    log, image = tmp_path / "log", tmp_path / "img"
    image.write_bytes(bytes(4096 * 4))
    build_log(log, [(2, FUA, sectors(7, 1, 4096))], sectorsize=4096)
    with Replayer(read_log(log), image) as rep:
        rep.upto(0)
    assert image.read_bytes()[8192:12288] == sectors(7, 1, 4096)
    assert image.read_bytes()[:8192] == bytes(8192)


def test_only_the_entries_the_super_block_counts(tmp_path: Path) -> None:
    """The log device may hold stale bytes past the last entry logged."""
    log = tmp_path / "log"
    build_log(
        log, [(1, FUA, sectors(1)), (2, FUA, sectors(2))], nr_entries=1, stale=sectors(0xFF, 4)
    )
    assert [e.sector for e in read_log(log).entries] == [1]


@pytest.mark.parametrize("damage", ["magic", "short", "truncated data", "version"])
def test_a_log_it_cannot_follow_is_refused_by_name(tmp_path: Path, damage: str) -> None:
    log = tmp_path / "log"
    build_log(log, [(1, FUA, sectors(1, 4))])
    raw = bytearray(log.read_bytes())
    if damage == "magic":
        raw[0] ^= 1
    elif damage == "version":
        raw[8] = 2
    elif damage == "short":
        raw = raw[:10]
    else:
        raw = raw[:-512]
    log.write_bytes(bytes(raw))
    with pytest.raises(LogFormatError, match=str(log)):
        read_log(log)


def test_spread_keeps_first_and_last(tmp_path: Path) -> None:
    log = tmp_path / "log"
    build_log(log, [(i, FLUSH, b"") for i in range(10)])
    points = read_log(log).flush_points()
    assert spread(points, 20) == points
    picked = spread(points, 4)
    assert len(picked) == 4 and picked[0] is points[0] and picked[-1] is points[-1]
    assert [p.index for p in picked] == sorted({p.index for p in picked})
