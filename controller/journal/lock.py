"""One writer per state directory: the journal's lock file, and the state of the writer that
holds it (closed, or failed after a write it cannot vouch for)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from controller.journal.errors import JournalError

LOCK_WAIT_S = 5.0


def take_lock(lock_path: Path, exclusive: bool, wait_s: float) -> int:
    """flock the lock file; one writer (the daemon) at a time, readers only when it is down."""
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o640) if exclusive else os.open(
        lock_path, os.O_RDONLY)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN) or time.monotonic() > deadline:
                os.close(fd)
                raise
            time.sleep(0.05)


@contextlib.contextmanager
def read_only_uri(path: Path, lock_path: Path) -> Iterator[str]:
    """The SQLite URI that reads the journal file at `path` without writing anything, for the
    block (`journal verify` and the offline readers). With no daemon and a clean shutdown (no
    -wal file, the lock file there) it is read as immutable: SQLite leaves no -wal/-shm files
    behind and does not want to make its -shm file in a directory a technician may read but
    not write ("attempt to write a readonly database"); the shared lock, held for the block,
    keeps a daemon from starting meanwhile."""
    lock_fd = None
    uri = f"file:{path}?mode=ro"
    wal = Path(f"{path}-wal")
    if not wal.exists() and lock_path.exists():
        with contextlib.suppress(OSError):
            lock_fd = take_lock(lock_path, exclusive=False, wait_s=0)
            if not wal.exists():
                uri += "&immutable=1"
    try:
        yield uri
    finally:
        if lock_fd is not None:
            os.close(lock_fd)


class WriteGuard:
    """Whether the writer may write: it holds the lock and no write has failed. After a failed
    commit (or fsync) the file's state is unknown to us: every later write is refused until
    the journal is reopened (which verifies it)."""

    def __init__(self, path: Path, conn: sqlite3.Connection, lock_fd: int) -> None:
        self.path = path
        self._conn = conn
        self._lock_fd: int | None = lock_fd
        self.failed: str | None = None

    @property
    def closed(self) -> bool:
        return self._lock_fd is None

    @property
    def lock_fd(self) -> int | None:
        return self._lock_fd

    def check(self) -> None:
        if self._lock_fd is None:
            raise JournalError(f"journal {self.path} is closed")
        if self.failed is not None:
            raise JournalError(f"journal {self.path} refuses writes after a failure "
                               f"({self.failed}); reopen it")

    def fail(self, why: str) -> None:
        self.failed = why
        with contextlib.suppress(sqlite3.Error):
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")

    @contextlib.contextmanager
    def transaction(self, what: str, *, fsync: bool = True) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT on the writer's connection. Any failure inside (or of the
        COMMIT itself, e.g. its fsync) fails the writer (`fail`: rolled back, later writes
        refused until reopened); an SQLite error is raised as JournalError naming `what`.
        `fsync=False`: this one commit at synchronous=NORMAL (no fsync of its own: the next
        fsync'd commit makes it durable), for what a crash may lose safely."""
        from controller.journal.schema import set_synchronous_full  # (schema imports errors)

        self.check()
        c = self._conn
        try:
            if not fsync:
                c.execute("PRAGMA synchronous=NORMAL")
            c.execute("BEGIN IMMEDIATE")
            yield c
            c.execute("COMMIT")
            if not fsync:
                set_synchronous_full(c, self.path)
        except BaseException as exc:
            self.fail(f"{what} failed: {exc}")
            if isinstance(exc, sqlite3.Error | JournalError):
                raise JournalError(f"journal {self.path}: {self.failed}") from exc
            raise

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
