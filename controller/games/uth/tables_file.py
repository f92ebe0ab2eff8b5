"""The hand evaluator's tables as a file, computed once when the package is built.

`setup.py`'s build step writes `evaluator_tables.bin` beside this module (into the wheel, so on
the image it is under /opt/tablectl and in the signed manifest, docs/verification.md; into the
source tree for an editable install). A UTH table loads it at start (~200 KB, about a millisecond)
instead of computing the tables (~0.6 s, ~1.4 s under load, tens of seconds under the VM's TCG).

The tables are a pure function of rule 8, so their bytes are fixed: `SHA256` below is their
digest, and a file with any other digest is refused (`TablesFileError`), never used. An absent
file is not an error: the evaluator computes the tables as before and says so in the log.

Format `tablectl-uth-eval/1`: the magic line, then seven little-endian arrays, each as a u32
count and its items: the low and high rank-part keys (u32) and their offsets (u32), the
non-flush ranks (u16), the flush ranks by 13-bit mask (u16) and the categories' first ranks
(u16). See evaluator.py's docstring for what each holds.
"""

from __future__ import annotations

import hashlib
import logging
import struct
import sys
from array import array
from pathlib import Path

from controller.games.uth.tables_compute import Tables, compute_tables
from shared.errors import TablectlError

FILE_NAME = "evaluator_tables.bin"
FILE = Path(__file__).with_name(FILE_NAME)
MAGIC = b"tablectl-uth-eval/1\n"
# SHA-256 of the only correct file: tests/games/uth/test_uth_tables_file.py computes the tables
# and checks that their bytes have this digest (change both together, with the format's name).
SHA256 = "6afb7ef0d77e38b20d5aac4a385a6cdf965bd62ccbe76b6aca14fc6e1e331650"

_TYPES = ("I", "I", "I", "I", "H", "H", "H")  # the seven arrays' item types, in file order

log = logging.getLogger(__name__)



class TablesFileError(TablectlError):
    """The evaluator's tables file is not the one this program was built with."""


def _array(typecode: str, items: object) -> array[int]:
    a = array(typecode, items)  # type: ignore[arg-type]
    if sys.byteorder == "big":
        a.byteswap()
    return a


def encode(tables: Tables) -> bytes:
    """The file's bytes for the tables `compute_tables` returns (tables_compute.py)."""
    low, high, nonflush, flush, starts = tables
    parts = [
        list(low),
        list(low.values()),
        list(high),
        list(high.values()),
        nonflush,
        flush,
        starts,
    ]
    out = bytearray(MAGIC)
    for typecode, items in zip(_TYPES, parts, strict=True):
        a = _array(typecode, items)
        out += struct.pack("<I", len(a)) + a.tobytes()
    return bytes(out)


def decode_parts(data: bytes) -> list[array[int]]:
    """The file's seven arrays, in file order (the module's docstring), from its bytes (whose
    digest the caller has checked)."""
    if not data.startswith(MAGIC):
        raise TablesFileError("not a tablectl-uth-eval/1 file")
    pos = len(MAGIC)
    parts: list[array[int]] = []
    view = memoryview(data)
    for typecode in _TYPES:
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        a = array(typecode)
        end = pos + n * a.itemsize
        a.frombytes(view[pos:end])
        if sys.byteorder == "big":
            a.byteswap()
        parts.append(a)
        pos = end
    return parts


def decode(data: bytes) -> Tables:
    """The tables from a file's bytes (whose digest the caller has checked)."""
    low_keys, low_values, high_keys, high_values, nonflush, flush, starts = decode_parts(data)
    return (
        dict(zip(low_keys, low_values, strict=True)),
        dict(zip(high_keys, high_values, strict=True)),
        nonflush,
        flush,
        starts.tolist(),
    )


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load(path: Path | None = None, expected: str = SHA256) -> Tables | None:
    """The tables from `path` (default: `FILE`), or None when there is no such file. Any other
    digest than `expected` raises `TablesFileError` naming the file and both digests."""
    data = _read(FILE if path is None else path, expected)
    return None if data is None else decode(data)


def load_parts(path: Path | None = None, expected: str = SHA256) -> list[array[int]] | None:
    """As `load`, the same checks, but the file's seven arrays (`decode_parts`): the evaluator
    keeps its tables in arrays, and dicts of the keys built on the way are ~0.3 MB of a table's
    resident memory that Python's allocator keeps once they are freed (issue 31)."""
    data = _read(FILE if path is None else path, expected)
    return None if data is None else decode_parts(data)


def _read(path: Path, expected: str) -> bytes | None:
    """The file's bytes, checked: None when absent, `TablesFileError` for any other digest."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        log.warning("uth evaluator: no tables file at %s; computing the tables (~0.6 s)", path)
        return None
    except OSError as exc:
        raise TablesFileError(f"uth evaluator tables {path}: cannot read: {exc}") from exc
    found = digest(data)
    if found != expected:
        raise TablesFileError(
            f"uth evaluator tables {path}: SHA-256 {found}, expected {expected}: refusing a "
            "file this program was not built with (reinstall the package)"
        )
    return data


def write(path: Path) -> str:
    """Compute the tables and write them to `path` (the build step); returns their digest."""
    data = encode(compute_tables())
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return digest(data)


def main(argv: list[str] | None = None) -> int:
    """`python -m controller.games.uth.tables_file [PATH]`: write the file (default: beside
    this module) and print its digest."""
    args = sys.argv[1:] if argv is None else argv
    print(write(Path(args[0]) if args else FILE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
