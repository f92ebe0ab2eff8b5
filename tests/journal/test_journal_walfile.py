"""The daemon's WAL is made at its full size before SQLite opens the journal (walfile.py;
`Journal.open(full_wal=True)`):
commits then never grow the file, so ext4 does not commit its own journal at every fsync
(docs/daemon.md, "What reaches the card"). A WAL that exists is never touched: it may hold the
last commits."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from controller.journal import JOURNAL_FILE, Journal, JournalLossError, verify_dir
from controller.journal.walfile import WAL_BYTES, prefill_wal
from controller.rounds.base import Event
from tests.support.journal import GAME, TABLE, fill, now


def wal(d: Path) -> Path:
    return d / (JOURNAL_FILE + "-wal")


def test_a_reopened_journal_writes_into_a_wal_of_full_size(tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, full_wal=True) as j:
        fill(j)
    assert not wal(tmp_path).exists()  # SQLite deleted it at the clean close
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, full_wal=True) as j:
        assert wal(tmp_path).stat().st_size == WAL_BYTES
        fill(j, rounds=5)  # 50 commits
        assert wal(tmp_path).stat().st_size == WAL_BYTES  # written into, never grown
        assert stat.S_IMODE(wal(tmp_path).stat().st_mode) == stat.S_IMODE(
            (tmp_path / JOURNAL_FILE).stat().st_mode)
        last = j.last_seq
    rep = verify_dir(tmp_path)
    assert rep.ok and rep.records == last == 80
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, full_wal=True) as j:
        assert j.last_seq == 80


def test_only_a_writer_that_asks_makes_it(tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j)
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:  # a technician's command
        j.append(Event("x", {}), now(31), round=4)
        assert wal(tmp_path).stat().st_size < WAL_BYTES


def test_a_new_journal_gets_one_too(tmp_path: Path) -> None:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, full_wal=True) as j:
        j.append(Event("x", {}), now(1), round=1)
        assert wal(tmp_path).stat().st_size == WAL_BYTES


def crash_copy(tmp_path: Path) -> Path:
    """A journal of 31 records as a power cut leaves it: its files copied while the writer
    that made the last commit is still open (a clean close of the first 30 before it)."""
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, full_wal=True) as j:
        fill(j)
    crashed = tmp_path / "crashed"
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, full_wal=True) as j:
        j.append(Event("last", {}), now(31), round=4)
        shutil.copytree(tmp_path, crashed, ignore=shutil.ignore_patterns("crashed"))
    return crashed


def test_a_wal_left_by_a_crash_is_kept_with_its_commits(tmp_path: Path) -> None:
    crashed = crash_copy(tmp_path)
    before = wal(crashed).read_bytes()
    assert not prefill_wal(crashed / JOURNAL_FILE)
    assert wal(crashed).read_bytes() == before
    with Journal.open(crashed, table_id=TABLE, game=GAME, full_wal=True) as j:
        assert j.last_seq == 31


def test_a_lost_wal_is_still_a_loss(tmp_path: Path) -> None:
    crashed = crash_copy(tmp_path)
    wal(crashed).unlink()  # the commit after the clean close is gone; the mark names it
    (crashed / (JOURNAL_FILE + "-shm")).unlink()
    with pytest.raises(JournalLossError) as exc:
        Journal.open(crashed, table_id=TABLE, game=GAME, full_wal=True)
    assert (exc.value.mark_seq, exc.value.journal_seq) == (31, 30)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_made_by_root_it_belongs_to_the_journals_owner(tmp_path: Path) -> None:
    # A technician's `sudo tablectl journal ...` must not leave a WAL the daemon cannot open.
    db = tmp_path / JOURNAL_FILE
    with Journal.open(tmp_path, table_id=TABLE, game=GAME, full_wal=True) as j:
        fill(j)
    os.chown(db, 65534, 65534)
    assert prefill_wal(db)
    st = wal(tmp_path).stat()
    assert (st.st_uid, st.st_gid, st.st_size) == (65534, 65534, WAL_BYTES)
