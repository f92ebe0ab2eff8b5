"""`tablectl logs` finds things (issue 28, the technician's item 3): `-f` streams the new lines,
`--since` as journalctl's habit, nothing matched says so (exit 1); `tablectl errors` does not
count the simulation's notices as errors. A real tablectld --simulate=pty."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from controller.cli.logs_cmd import EXIT_NO_MATCH, errors_text, since_utc
from shared.errors import InputError
from tests.support.daemon import REPO, ask, start_daemon, wait_ready

CLI = [sys.executable, "-m", "controller.cli.main"]


def tablectl(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args, "--runtime-dir", str(tmp_path / "run")], cwd=REPO,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def test_since_takes_a_utc_time_or_an_age() -> None:
    now = datetime(2026, 11, 28, 21, 40, tzinfo=UTC)
    assert since_utc("10m", now) == "2026-11-28T21:30:00.000Z"
    assert since_utc("-2h", now) == since_utc("2 hours ago", now) == "2026-11-28T19:40:00.000Z"
    assert since_utc("1d", now) == "2026-11-27T21:40:00.000Z"
    assert since_utc("2026-11-28 21:00", now) == "2026-11-28T21:00:00.000Z"
    assert since_utc("2026-11-28T21:00:05Z", now) == "2026-11-28T21:00:05.000Z"
    with pytest.raises(InputError, match="give a UTC time"):
        since_utc("yesterday-ish", now)


def test_errors_count_refusals_and_notices_apart() -> None:
    def line(code: str, message: str) -> dict[str, object]:
        return {"utc": "2026-11-28T01:00:00.000Z", "level": "warning", "code": code,
                "message": message, "fields": {}}

    text = errors_text([
        line("E701", "permission denied: 'meters_close_shift' needs group tablectl-super"),
        line("E701", "permission denied: 'dealer' needs group tablectl-super"),
        line("E801", "running in simulation mode"),
        line("E204", "shaker: no answer"),
    ], 7)
    assert text.startswith("1 errors in the last 7 days:\n  E204      1x")
    assert "permission denied" not in text and "simulation mode" not in text
    assert text.endswith("not counted as errors: 2 refused requests (E701); 1 notices (E801)"
                         " (--json lists them)")
    assert errors_text([line("E801", "running in simulation mode")], 7) == (
        "no errors in the last 7 days\nnot counted as errors: 1 notices (E801) (--json lists"
        " them)")


@pytest.mark.slow
def test_logs_follow_since_and_nothing_matched(tmp_path: Path) -> None:
    proc = start_daemon(tmp_path, "--simulate=pty", "--game", "paigow", "--autoplay", "0",
                        "--pace", "0.05", "--quiet", "--seed", "3")  # fmt: skip
    follow = None
    try:
        wait_ready(tmp_path, proc)
        # Nothing matched: said, and exit 1 (a script can tell), not a blank line and 0.
        none = tablectl(tmp_path, "logs", "--device", "no_such_device")
        assert none.returncode == EXIT_NO_MATCH and none.stdout == ""
        assert none.stderr == "no lines matched\n"
        # --since: an age and a time; a future time matches nothing.
        assert tablectl(tmp_path, "logs", "--since", "10m").returncode == 0
        assert tablectl(tmp_path, "logs", "--since", "2999-01-01").returncode == EXIT_NO_MATCH
        bad = tablectl(tmp_path, "logs", "--since", "soonish")
        assert bad.returncode == 2 and "give a UTC time" in bad.stderr

        # -f: the lines logged after it started, as they come.
        follow = subprocess.Popen(
            [*CLI, "logs", "-f", "--device", "shaker", "--runtime-dir", str(tmp_path / "run")],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)  # (its first answer: the shaker's lines so far, maybe none)
        ask(tmp_path, "device_fault", {"device": "shaker", "fault": "unplug"})
        assert follow.stdout is not None
        deadline = time.monotonic() + 20
        seen = ""
        while "disconnected" not in seen and time.monotonic() < deadline:
            seen += follow.stdout.readline()
        assert "disconnected" in seen, seen

        # The simulation's notices are not errors.
        errors = tablectl(tmp_path, "errors")
        assert errors.returncode == 0
        assert "not counted as errors:" in errors.stdout and "notices (E801)" in errors.stdout
        assert "running in simulation mode" not in errors.stdout
    finally:
        if follow is not None:
            follow.terminate()
            follow.communicate(timeout=10)
        proc.terminate()
        proc.communicate(timeout=30)


def test_logs_follow_from_journald_streams_and_passes_since(tmp_path: Path) -> None:
    """On a table the daemon logs to journald: `-f` runs `journalctl --follow` and prints each
    matching line as it comes; `--since` reaches journalctl (a stand-in that records how it
    was asked, prints one entry, then another a moment later, then waits)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    asked = tmp_path / "asked"
    first = json.dumps({"__REALTIME_TIMESTAMP": "1764144000000000", "PRIORITY": "4",
                        "MESSAGE": "ALARM shuffler: jam", "DEVICE": "shuffler", "CODE": "E601"})
    later = json.dumps({"__REALTIME_TIMESTAMP": "1764144001000000", "PRIORITY": "4",
                        "MESSAGE": "ALARM shuffler: jam again", "DEVICE": "shuffler",
                        "CODE": "E601"})
    fake = bin_dir / "journalctl"
    fake.write_text("#!/bin/sh\n"
                    f"echo \"$@\" >> {asked}\n"
                    'case "$*" in *--follow*) ;; *) exit 0 ;; esac\n'
                    f"echo '{first}'\nsleep 0.5\necho '{later}'\nexec sleep 30\n")
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    follow = subprocess.Popen(
        [*CLI, "logs", "--source", "journald", "--device", "shuffler", "--since", "10m", "-f"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # Ctrl-C as at a terminal, whatever this run inherited (a job started in the background
        # by a non-interactive shell ignores SIGINT, and so would the CLI).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert follow.stdout is not None
        lines = [follow.stdout.readline(), follow.stdout.readline()]
    finally:
        follow.send_signal(signal.SIGINT)
        _, err = follow.communicate(timeout=30)
    assert "WARNING E601 ALARM shuffler: jam device=shuffler" in lines[0], lines
    assert "ALARM shuffler: jam again" in lines[1], lines
    assert follow.returncode == 0 and "Traceback" not in err, err
    calls = asked.read_text().splitlines()
    assert "--follow" in calls[-1] and "DEVICE=shuffler" in calls[-1]
    assert all("--since=@" in c for c in calls), calls


@pytest.mark.slow
def test_an_unplugged_shuffler_is_found_by_device_and_by_round(tmp_path: Path) -> None:
    """The issue's own table (UTH, players wagering): the shuffler unplugged, its ALARM line
    (UTH 12.1) is found by `logs --device shuffler` and by the round it was raised in, and
    `status` exits 4 (in service, a person needed) with the alarm and the way to clear it."""
    from controller.cli.attention import EXIT_NEEDS_ATTENTION
    from tests.support.devices import wait_until

    proc = start_daemon(tmp_path, "--simulate=pty", "--game", "uth", "--autoplay", "0",
                        "--pace", "0.05", "--quiet", "--seed", "5")  # fmt: skip
    try:
        wait_ready(tmp_path, proc)
        ask(tmp_path, "device_fault", {"device": "shuffler", "fault": "unplug"})
        wait_until(lambda: ask(tmp_path, "status")["attention"]["alarms"] != [], 30)
        alarm = ask(tmp_path, "status")["attention"]["alarms"][0]
        assert alarm["text"].startswith("shuffler: disconnected"), alarm

        by_device = tablectl(tmp_path, "logs", "--device", "shuffler")
        assert by_device.returncode == 0, by_device.stderr
        assert "E601 ALARM shuffler: disconnected" in by_device.stdout, by_device.stdout
        by_round = tablectl(tmp_path, "logs", "--round", str(alarm["round"]))
        assert by_round.returncode == 0, by_round.stderr
        assert "ALARM shuffler: disconnected" in by_round.stdout, by_round.stdout
        assert f"round={alarm['round']} device=shuffler" in by_round.stdout

        status = tablectl(tmp_path, "status")
        assert status.returncode == EXIT_NEEDS_ATTENTION, status.stdout
        assert "device shuffler disconnected" in status.stdout
        assert f"tablectl alarms ack {alarm['id']}" in status.stdout
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
