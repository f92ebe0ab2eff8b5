"""The log a `dm-log-writes` target records, read and replayed on the host (no device-mapper
needed): the VM test's power cut at every flush point (issue 27; image/vm/README.md).

Format (the kernel's drivers/md/dm-log-writes.c and Documentation/admin-guide/device-mapper/
log-writes.rst): at byte 0 a super block (le64 magic, le64 version, le64 nr_entries, le32
sectorsize); from byte `sectorsize` on, `nr_entries` entries, each one sector holding
`log_write_entry` (le64 sector, le64 nr_sectors, le64 flags, le64 data_len; a MARK's text
follows it in the same sector), then, unless it is a DISCARD, `nr_sectors` sectors of the data
written. `sector` and `nr_sectors` count sectors of `sectorsize` bytes of the logged device.
Entries are in the order the writes completed, each flush after the writes it made durable:
the device as it was after entry N (a FLUSH or FUA) is the base image with entries 0..N
applied, a state a power cut right then could leave.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from shared.errors import TablectlError

MAGIC = 0x6A736677736872
VERSION = 1
FLUSH, FUA, DISCARD, MARK, METADATA = 1, 2, 4, 8, 16
SUPER = struct.Struct("<QQQI")
ENTRY = struct.Struct("<QQQQ")


class LogFormatError(TablectlError):
    """Not a dm-log-writes log, or one this reader cannot follow (named)."""


@dataclass(frozen=True, slots=True)
class Entry:
    index: int  # 0-based, in log order
    sector: int  # on the logged device, in units of the log's sectorsize
    nr_sectors: int
    flags: int
    mark: str  # a MARK's text, else ""
    data_at: int  # byte offset of the data in the log file (nr_sectors * sectorsize bytes)

    @property
    def is_flush_point(self) -> bool:
        """A FLUSH or FUA: what was written before it is durable."""
        return bool(self.flags & (FLUSH | FUA))

    def describe(self) -> str:
        names = [
            n
            for bit, n in (
                (FLUSH, "FLUSH"),
                (FUA, "FUA"),
                (DISCARD, "DISCARD"),
                (MARK, "MARK"),
                (METADATA, "META"),
            )
            if self.flags & bit
        ]
        what = f"mark {self.mark!r}" if self.mark else f"sector {self.sector}+{self.nr_sectors}"
        return f"#{self.index} {'|'.join(names) or 'WRITE'} {what}"


@dataclass(frozen=True, slots=True)
class Log:
    path: Path
    sectorsize: int
    entries: tuple[Entry, ...]

    def flush_points(self) -> list[Entry]:
        return [e for e in self.entries if e.is_flush_point]


def read_log(path: Path) -> Log:
    """Every entry the super block counts (the log device may hold stale data after them)."""
    with path.open("rb") as f:
        head = f.read(SUPER.size)
        if len(head) < SUPER.size:
            raise LogFormatError(f"{path}: {len(head)} bytes, no dm-log-writes super block")
        magic, version, nr_entries, sectorsize = SUPER.unpack(head)
        if magic != MAGIC:
            raise LogFormatError(
                f"{path}: magic {magic:#x}, not dm-log-writes' {MAGIC:#x} (the "
                "target never logged a FUA or mark, or this is another file)"
            )
        if version != VERSION:
            raise LogFormatError(f"{path}: version {version}, this reader knows {VERSION}")
        if sectorsize < ENTRY.size or sectorsize & (sectorsize - 1):
            raise LogFormatError(f"{path}: sectorsize {sectorsize}")
        size = os.fstat(f.fileno()).st_size
        entries: list[Entry] = []
        at = sectorsize
        for index in range(nr_entries):
            f.seek(at)
            raw = f.read(sectorsize)
            if len(raw) < sectorsize:
                raise LogFormatError(
                    f"{path}: entry {index} of {nr_entries} at byte {at} is "
                    f"past the end ({size} bytes)"
                )
            sector, nr_sectors, flags, data_len = ENTRY.unpack_from(raw)
            mark = ""
            if flags & MARK:
                mark = raw[ENTRY.size : ENTRY.size + data_len].decode("utf-8", "replace")
            elif data_len:
                # Inline data (the DAX path, since removed from the kernel): not followed here.
                raise LogFormatError(
                    f"{path}: entry {index} has {data_len} bytes of inline "
                    "data (DAX), which this reader does not replay"
                )
            data_at = at + sectorsize
            nbytes = 0 if flags & DISCARD else nr_sectors * sectorsize
            if data_at + nbytes > size:
                raise LogFormatError(
                    f"{path}: entry {index}'s {nbytes} bytes of data at byte "
                    f"{data_at} are past the end ({size} bytes)"
                )
            entries.append(Entry(index, sector, nr_sectors, flags, mark, data_at))
            at = data_at + nbytes
    return Log(path, sectorsize, tuple(entries))


class Replayer:
    """Applies a log's entries, in order, to an image of the logged device (a copy of its
    contents when logging began). `upto(n)` leaves the image as the device was after entry n."""

    CHUNK = 1 << 20

    def __init__(self, log: Log, image: Path) -> None:
        self.log, self.image = log, image
        self.applied = 0  # entries applied so far
        self._img = os.open(image, os.O_RDWR)
        self._src = os.open(log.path, os.O_RDONLY)

    def upto(self, index: int) -> None:
        if index < self.applied - 1:
            raise ValueError(f"entry {index} is already behind (applied {self.applied})")
        for e in self.log.entries[self.applied : index + 1]:
            self._apply(e)
        self.applied = max(self.applied, index + 1)
        os.fsync(self._img)

    def _apply(self, e: Entry) -> None:
        ss = self.log.sectorsize
        if e.flags & MARK or not e.nr_sectors:
            return
        dest = e.sector * ss
        if e.flags & DISCARD:  # what a discard leaves is unspecified: zeros, as the kernel's
            for off, n in _chunks(e.nr_sectors * ss, self.CHUNK):  # replay-log writes
                os.pwrite(self._img, bytes(n), dest + off)
            return
        for off, n in _chunks(e.nr_sectors * ss, self.CHUNK):
            os.pwrite(self._img, os.pread(self._src, n, e.data_at + off), dest + off)

    def close(self) -> None:
        os.close(self._img)
        os.close(self._src)

    def __enter__(self) -> Replayer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _chunks(total: int, size: int) -> Iterator[tuple[int, int]]:
    for off in range(0, total, size):
        yield off, min(size, total - off)


def spread(points: list[Entry], at_most: int) -> list[Entry]:
    """Every point if there are at most `at_most`, else `at_most` of them evenly spread over
    the log, the first and the last always among them."""
    if len(points) <= at_most:
        return list(points)
    if at_most < 2:
        return points[-1:]
    step = (len(points) - 1) / (at_most - 1)
    picked = sorted({round(i * step) for i in range(at_most)})
    return [points[i] for i in picked]
