"""The write-ahead log made at its full size before SQLite opens the journal (docs/daemon.md,
"What reaches the card").

SQLite deletes `journal.sqlite3-wal` when the last connection closes cleanly, and a new WAL
then grows with every commit until the first checkpoint wraps it (WAL_CHECKPOINT_PAGES frames,
~320 UTH rounds). On ext4 each fsync that grows a file also commits the file system's journal
(the new size and blocks): measured on an ext4 loop device (bench/bench_card.py), a UTH round
wrote ~101-107 KB to the device while the WAL grew and ~22-23 KB once it had wrapped.

So the writer, holding the journal's lock, puts a file of zeros of the WAL's full size in its
place when there is none. SQLite reads a WAL whose header is not valid (zeros) as an empty one:
the first commit writes a new header at offset 0 and the frames after it, into blocks already
allocated. Never done when a WAL exists: that one may hold commits (a crash, a power cut).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from controller.journal.schema import PAGE_SIZE, WAL_CHECKPOINT_PAGES

_WAL_HEADER = 32
_FRAME_HEADER = 24
# Autocheckpoint runs after the commit that crosses WAL_CHECKPOINT_PAGES: room for that commit.
_SLACK_FRAMES = 64
WAL_BYTES = _WAL_HEADER + (WAL_CHECKPOINT_PAGES + _SLACK_FRAMES) * (_FRAME_HEADER + PAGE_SIZE)
# One page a write: on kernels whose ext4 caches files in large folios (Linux 6.16+), bigger
# writes make bigger folios, and a commit's 536-byte write into one is then counted whole in the
# process's write_bytes (measured: ~1 MB "written" a round for 23 KB at the device; what the
# device gets is the same either way). 4 KiB writes keep the counter (bench_daemon.py) true.
_CHUNK = 4096


def prefill_wal(db: Path) -> bool:
    """Make `db`'s WAL, zero-filled, at its full size if it has none; True if made.

    Call with the writer lock held and before any connection opens `db`. The file gets the
    journal's owner and mode, as SQLite gives the WAL it makes (a root CLI must not leave a WAL
    the daemon's user cannot open). A failure (a full card) leaves no file: SQLite then makes
    its own, as before."""
    wal = Path(f"{db}-wal")
    st = os.stat(db)
    try:
        fd = os.open(wal, os.O_WRONLY | os.O_CREAT | os.O_EXCL, st.st_mode & 0o666)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, st.st_mode & 0o666)  # as SQLite does: the journal's mode, not the umask's
        if os.geteuid() == 0:
            os.fchown(fd, st.st_uid, st.st_gid)
        zeros = bytes(_CHUNK)
        left = WAL_BYTES
        while left > 0:
            left -= os.write(fd, zeros[:min(left, _CHUNK)])
        # Allocated and on the card now, so no later commit's fsync grows or allocates it.
        os.fsync(fd)
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(wal)
        return False
    os.close(fd)
    return True
