"""A failing SD card (issue 12 item 7): a full disk takes the table out of service without
flooding the log with a line per ignored event; a read-only disk is named as such, not as a
lock held by another process. Real file systems: a small tmpfs, filled or remounted read-only
(needs root, as the daemon's tests run on the build machine)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import random
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.config.machine import build_machine
from controller.daemon.build import build_devices, build_policy, simulation_config
from controller.daemon.ignored import IGNORED_SUMMARY_S
from controller.daemon.service import TableService
from controller.journal import Journal, JournalError
from controller.logs import setup as log_setup
from controller.rounds.base import Event
from tests.support.daemon import REPO

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "fs"
    mnt.mkdir()
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], check=True)
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _fill(path: Path) -> None:
    """Write until the file system says ENOSPC, to its last byte (a failed 64 KB write leaves up
    to 64 KB free)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for chunk in (65536, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


def test_a_full_disk_ignores_events_counted_not_logged_one_by_one(small_fs: Path) -> None:
    state = small_fs / "state"
    cfg = simulation_config("paigow", "nsw", state, state / "run")
    rng = random.Random(5)
    log = log_setup(journald=False)
    lines = Lines()
    log.addHandler(lines)
    service = TableService(
        cfg,
        build_machine(cfg),
        build_devices(cfg, rng),
        log,
        policy=build_policy(cfg, rng),
        autoplay=None,
        mode="simulation",
    )

    async def scenario() -> None:
        run = asyncio.create_task(service.run())
        while sum(service.stats.rounds.values()) < 2:
            await asyncio.sleep(0.01)
        # Journal creation leaves a 2 MB WAL that SQLite reuses: on a disk filled now the table
        # played on into it for ~20 s until the next checkpoint. Truncated first, the disk is
        # full for the next append (the same failure, reached at once).
        with contextlib.closing(sqlite3.connect(state / "journal.sqlite3", timeout=10)) as db:
            assert db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0  # not busy
        assert (state / "journal.sqlite3-wal").stat().st_size == 0
        await asyncio.to_thread(_fill, small_fs / "filler")
        while service.out_of_service is None:
            await asyncio.sleep(0.01)
        # Devices go on sending (a chung button, a shuffler): 10,000 events in ~2 s.
        for burst in range(100):
            for n in range(100):
                service.emit(Event("chung.pressed", {"box": 1 + n % 8, "burst": burst}))
            await asyncio.sleep(0.02)
        while not service.queue.empty():
            await asyncio.sleep(0.01)
        service.stop()
        await run

    try:
        asyncio.run(asyncio.wait_for(scenario(), 120))
    finally:
        log.removeHandler(lines)
    assert "journal write failed" in (service.out_of_service or "")
    assert service.stats.ignored >= 10_000  # counted...
    ignored_lines = [m for m in lines.messages if "ignored" in m]
    # ...and logged as the first one, then one summary per IGNORED_SUMMARY_S (here the one
    # written at stop, ~2 s < IGNORED_SUMMARY_S), with the count. On main: 10,000 lines.
    assert IGNORED_SUMMARY_S > 2.0
    assert len(ignored_lines) == 2, ignored_lines[:5]
    assert ignored_lines[0].startswith("event ignored: out of service")
    assert ignored_lines[1].startswith(f"{service.stats.ignored - 1} events ignored in ")


def test_a_read_only_state_directory_is_named_read_only(small_fs: Path) -> None:
    state = small_fs / "state"
    Journal.open(state, table_id="RO-1", game="uth").close()
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    with pytest.raises(JournalError) as info:
        Journal.open(state, table_id="RO-1", game="uth")
    assert "read-only file system" in str(info.value)
    assert "locked by another process" not in str(info.value)
    # The daemon says the same in its status line and log, and does not start playing.
    run_dir = small_fs.parent / "run"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "controller.daemon", "--simulate", "--game", "uth"),
            *("--state-dir", str(state), "--runtime-dir", str(run_dir), "--autoplay", "1"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "OUT OF SERVICE: journal unusable" in proc.stderr
    assert "read-only file system" in proc.stderr
    assert "locked by another" not in proc.stderr
