"""The whole chain verified in the background (a niced child process) and offline with
progress: what start-up from a checkpoint leaves out is still checked."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from controller import logs
from controller.config.journal import JournalConfig
from controller.config.machine import build_machine
from controller.daemon.build import simulation_config
from controller.journal import Entry, Journal, background, checkpoint, segments, verify_dir
from controller.journal.background import (
    DEFAULT_DELAY_S,
    DELAY_ENV,
    UPKEEP_ENV,
    UPKEEP_EVERY_S,
    delay_s,
    look_after_journal,
    upkeep,
    upkeep_every_s,
    verify_in_background,
)
from controller.rounds.base import Event
from tests.support.daemon import ask, start_daemon, wait_for_socket
from tests.support.journal import GAME, TABLE, fill, now, raw


@pytest.fixture
def jdir(tmp_path: Path) -> Path:
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=4)
    return tmp_path


def run(j: Journal, caplog: pytest.LogCaptureFixture) -> list[str]:
    failures: list[str] = []
    log = logging.getLogger("test.background")
    with caplog.at_level(logging.INFO, logger="test.background"):
        asyncio.run(verify_in_background(j, failures.append, log, delay=0))
    return failures


def test_a_good_journal_verifies_beside_its_writer(jdir: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    with Journal.open(jdir, table_id=TABLE, game=GAME, fast=True) as j:
        assert run(j, caplog) == []
    assert "journal verified in the background (the whole chain)" in caplog.messages


def test_what_a_fast_start_left_out_is_caught(jdir: Path, caplog: pytest.LogCaptureFixture,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with raw(jdir) as c:
        c.execute("UPDATE commits SET hash = zeroblob(32) WHERE seq = 13")
    monkeypatch.setattr(checkpoint, "WALK_WHOLE_BELOW", 0)
    with Journal.open(jdir, table_id=TABLE, game=GAME, fast=True) as j:
        assert j.verified_from == 40  # started from the checkpoint: seq 13 not walked
        failures = run(j, caplog)
    assert len(failures) == 1
    assert failures[0].startswith("journal background verification failed: seq 13: hash "
                                  "mismatch")
    assert failures[0] in caplog.messages


def test_the_delay_comes_from_the_environment_within_bounds(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("test.background")
    monkeypatch.setenv(DELAY_ENV, "2.5")
    assert delay_s(log) == 2.5
    for bad in ("-1", "nan", "1e9", "soon"):
        monkeypatch.setenv(DELAY_ENV, bad)
        with caplog.at_level(logging.WARNING, logger="test.background"):
            assert delay_s(log) == DEFAULT_DELAY_S
        assert caplog.messages[-1].startswith(f"{DELAY_ENV}={bad!r} is not 0..")


def test_the_upkeep_interval_comes_from_the_environment_within_bounds(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    log = logging.getLogger("test.background")
    assert upkeep_every_s(log) == UPKEEP_EVERY_S == 3600
    monkeypatch.setenv(UPKEEP_ENV, "5")
    assert upkeep_every_s(log) == 5
    for bad in ("0", "0.5", "-1", "nan", "1e9", "hourly"):  # 0 would archive in a busy loop
        monkeypatch.setenv(UPKEEP_ENV, bad)
        with caplog.at_level(logging.WARNING, logger="test.background"):
            assert upkeep_every_s(log) == UPKEEP_EVERY_S
        assert caplog.messages[-1].startswith(f"{UPKEEP_ENV}={bad!r} is not 1..")


def test_offline_verify_reports_progress(jdir: Path) -> None:
    seen: list[tuple[int, int]] = []
    rep = verify_dir(jdir, progress=lambda seq, last: seen.append((seq, last)))
    assert rep.ok
    assert seen[0] == (1, 40) and seen[-1] == (40, 40)


def aged_journal(state: Path) -> None:
    """A journal a fast start begins late in: 20,400 records, then the machine's initial state
    as a snapshot (with its checkpoint), as `tablectld --simulate --game paigow` opens it."""
    cfg = simulation_config("paigow", "nsw", state, state / "run")
    initial = build_machine(cfg).to_json(build_machine(cfg).initial())
    with Journal.open(state, table_id=cfg.table_id, game=cfg.game) as j:
        for b in range(51):
            j.append_batch([Entry(Event("tick", {"n": b * 400 + n}), now(b * 400 + n), 0)
                            for n in range(400)])
        j.append(Event("tick", {}), now(20_401), round=0, snapshot=initial)
        assert j.last_seq > checkpoint.WALK_WHOLE_BELOW


def test_the_daemon_goes_out_of_service_when_the_background_pass_fails(tmp_path: Path) -> None:
    aged_journal(tmp_path)
    with raw(tmp_path) as c:  # an edit long before the checkpoint a fast start begins from
        c.execute("UPDATE commits SET hash = zeroblob(32) WHERE seq = 800")
    proc = start_daemon(tmp_path, "--game", "paigow", env={DELAY_ENV: "0"})
    try:
        assert wait_for_socket(tmp_path, proc).get("out_of_service") is None  # READY, fast
        deadline = time.monotonic() + 60
        while (status := ask(tmp_path, "status")).get("out_of_service") is None:
            assert time.monotonic() < deadline, "the background pass never reported"
            time.sleep(0.2)
        assert "journal background verification failed: seq 401..800: hash mismatch" in (
            status["out_of_service"])
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def test_upkeep_archives_and_prunes_what_head_office_holds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(segments, "SEGMENT_ROUNDS", 2)
    monkeypatch.setenv(DELAY_ENV, "0")
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=6)  # segments 1..3 closed
        j.archive()
        st = j.retention.states()[0]  # head office acknowledged segment 1 only
        assert j.ack_segment(1, st.segment.head, str(st.digest))
        failures: list[str] = []

        async def run_once() -> None:
            task = asyncio.create_task(look_after_journal(
                j, failures.append, logging.getLogger("test.upkeep"),
                JournalConfig(keep_rounds=2)))
            for _ in range(600):
                await asyncio.sleep(0.05)
                if j.reader.pruned[0]:
                    break
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        asyncio.run(run_once())
        assert failures == []
        states = j.retention.states()
        assert [s.pruned_utc is not None for s in states] == [True, False, False]
        assert all(s.archive for s in states)
        assert j.reader.pruned[0] == states[0].segment.last
    assert verify_dir(tmp_path).ok


def test_upkeep_moves_what_head_office_holds_out_of_the_file_without_retention(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(segments, "SEGMENT_ROUNDS", 2)
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=6)  # segments 1..3 closed
        assert upkeep(j, JournalConfig()) == ([1, 2, 3], [], [], [])  # archived: none held
        for st in j.retention.states()[:2]:
            assert j.ack_segment(st.segment.number, st.segment.head, str(st.digest))
        assert upkeep(j, JournalConfig()) == ([], [], [], [])  # their messages not acked yet
        j.ack_outbox(j._next_outbox_id - 1)
        # Moved (no retention is set: nothing is pruned, every archive stays).
        assert upkeep(j, JournalConfig()) == ([], [1, 2], [], [])
        states = j.retention.states()
        assert [(s.moved_utc is not None, s.pruned_utc is not None) for s in states] == [
            (True, False), (True, False), (False, False)]
        assert j.reader.pruned[0] == states[1].segment.last
    assert verify_dir(tmp_path).ok


def test_a_close_or_an_ack_brings_the_upkeep_within_seconds_not_the_hour(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(segments, "SEGMENT_ROUNDS", 2)
    monkeypatch.setattr(background, "DUE_POLL_S", 0.05)
    monkeypatch.setenv(DELAY_ENV, "0")
    monkeypatch.setenv(UPKEEP_ENV, "3600")
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=1)
        failures: list[str] = []

        async def main() -> None:
            task = asyncio.create_task(look_after_journal(
                j, failures.append, logging.getLogger("test.upkeep")))

            async def until(what: str, cond: Callable[[], bool]) -> None:
                for _ in range(400):
                    if cond():
                        return
                    await asyncio.sleep(0.025)
                raise AssertionError(f"no upkeep within 10 s after {what}")

            await asyncio.sleep(0.5)  # the first upkeep ran: nothing closed yet
            fill(j, rounds=1)  # closes segment 1
            await until("a close", lambda: j.retention.states()[0].archive is not None)
            st = j.retention.states()[0]
            j.ack_outbox(j._next_outbox_id - 1)
            assert j.ack_segment(1, st.segment.head, str(st.digest))
            await until("an ack", lambda: j.retention.states()[0].moved_utc is not None)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        asyncio.run(main())
        assert failures == []
    assert verify_dir(tmp_path).ok


def test_the_daemon_logs_and_counts_each_refused_checkpoint(tmp_path: Path) -> None:
    aged_journal(tmp_path)
    with raw(tmp_path) as c:  # the checkpoint a fast start would begin from, forged
        top = c.execute("SELECT max(seq) FROM checkpoints").fetchone()[0]
        c.execute("UPDATE checkpoints SET mac = zeroblob(16) WHERE seq = ?", (top,))
    proc = start_daemon(tmp_path, "--game", "paigow", env={DELAY_ENV: "3600"})
    try:
        assert wait_for_socket(tmp_path, proc).get("out_of_service") is None  # an older one
        summary = ask(tmp_path, "journal_summary")
        assert (summary["refused_checkpoints"], summary["verified_from_seq"]) == (1, 0)
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    refused = [line for line in err.splitlines() if "E104" in line]
    assert len(refused) == 1, err[-2000:]
    assert f"checkpoint at seq {top} refused: MAC mismatch" in refused[0]


def test_the_pass_runs_at_the_lowest_priority_and_says_so(
        jdir: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Read back in the child, not assumed: a unit's syscall filter once refused both quietly.
    with Journal.open(jdir, table_id=TABLE, game=GAME, fast=True) as j:
        assert run(j, caplog) == []
    (rec,) = [r for r in caplog.records
              if r.getMessage() == "journal verified in the background (the whole chain)"]
    fields = getattr(rec, logs.FIELDS_ATTR)
    assert fields["nice"] == 19
    assert fields["io_class"] in {"idle", "unknown"}  # "unknown": no ioprio_get on this machine
    assert not [r for r in caplog.records if "could not lower its priority" in r.getMessage()]


def test_a_pass_left_at_the_daemons_priority_is_reported(
        jdir: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    # The child as a sandbox that refuses setpriority/ioprio_set leaves it: the journal still
    # verifies, and the log says the pass competed with the rounds.
    child = tmp_path / "refused.py"
    child.write_text(
        "import json, sys\n"
        "from controller.journal import background\n"
        "background.lowest_priority = lambda: {'nice': 0, 'io_class': 'best-effort',"
        " 'lowest': False}\n"
        "sys.exit(background.main(sys.argv[-2:]))\n")
    real = sys.executable
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    (tmp_path / "python").write_text(f"#!/bin/sh\nexec {real} {child} \"$@\"\n")
    (tmp_path / "python").chmod(0o755)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    with Journal.open(jdir, table_id=TABLE, game=GAME, fast=True) as j:
        assert run(j, caplog) == []
    assert ("journal background verification could not lower its priority (nice 0, I/O class "
            "best-effort): it competes with the table's rounds") in caplog.messages


def test_an_archive_altered_or_missing_alarms_and_the_table_plays_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 27: the background pass checks every archive; one altered or missing is an alarm
    (E106, `status`'s archive_faults), not a failure of the journal: play goes on."""
    monkeypatch.setattr(segments, "SEGMENT_ROUNDS", 2)
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=6)  # segments 1..3 closed
        j.archive()
        for st in j.retention.states()[:2]:
            assert j.ack_segment(st.segment.number, st.segment.head, str(st.digest))
        assert [p.number for p in j.prune(0) if p.prune] == [1, 2]
        one = j.archive_dir / "segment-000001.sqlite3.z"
        good = one.read_bytes()
        one.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
        (j.archive_dir / "segment-000003.sqlite3.z").unlink()
        assert run(j, caplog) == []  # not out of service
        assert len(j.retention.archive_faults) == 2
        assert "segment 1 (rounds 1..2, out of the journal file): altered: archive" in (
            j.retention.archive_faults[0])
        assert j.retention.archive_faults[1].endswith(
            "segment-000003.sqlite3.z is missing (not deleted by retention)")
        alarm = [r for r in caplog.records if getattr(r, "code", None) == "E106"
                 or "E106" in str(getattr(r, "__dict__", {}))]
        assert alarm and alarm[0].levelno == logging.ERROR
        assert alarm[0].getMessage().startswith("ALARM journal archives missing or altered (2): "
                                                "segment 1 (rounds 1..2")
        one.write_bytes(good)  # put back from a copy: the next pass finds one fault
        caplog.clear()
        assert run(j, caplog) == []
        assert len(j.retention.archive_faults) == 1
        # A fault of the journal itself still takes the table out of service, archives or not.
        with raw(tmp_path) as c:
            c.execute("UPDATE commits SET mac = x'00' WHERE seq = (SELECT max(seq) FROM "
                      "commits)")
        failures = run(j, caplog)
    assert len(failures) == 1 and "MAC mismatch" in failures[0], failures


def test_an_archive_gone_after_the_pass_is_an_alarm_within_the_upkeep(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass runs once a start; an archive deleted after it is found by the upkeep's look
    (every UPKEEP_ENV seconds): E106, status's archive_faults, and play goes on."""
    monkeypatch.setattr(segments, "SEGMENT_ROUNDS", 2)
    monkeypatch.setenv(DELAY_ENV, "0")
    monkeypatch.setenv(UPKEEP_ENV, "1")
    with Journal.open(tmp_path, table_id=TABLE, game=GAME) as j:
        fill(j, rounds=4)  # segments 1, 2 closed (archived by the upkeep)
        failures: list[str] = []
        log = logging.getLogger("test.look")

        async def main() -> None:
            task = asyncio.create_task(look_after_journal(j, failures.append, log,
                                                          JournalConfig()))
            try:
                for _ in range(400):  # the pass done and both segments archived
                    await asyncio.sleep(0.05)
                    if all(st.archive for st in j.retention.states()):
                        break
                await asyncio.sleep(0.2)
                assert j.retention.archive_faults == []
                (j.archive_dir / "segment-000002.sqlite3.z").unlink()
                for _ in range(100):
                    await asyncio.sleep(0.05)
                    if j.retention.archive_faults:
                        break
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

        with caplog.at_level(logging.INFO, logger="test.look"):
            asyncio.run(main())
        assert failures == []
        assert j.retention.archive_faults == [
            f"segment 2 (rounds 3..4): archive {j.archive_dir / 'segment-000002.sqlite3.z'} is "
            "missing (not deleted by retention)"]
        alarms = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert alarms == ["ALARM journal archives missing or altered (1 more): "
                          + j.retention.archive_faults[0]]
