"""Every `tablectl` command run by a technician (issue 28, second pass, 6): a real tablectld
--simulate=pty and the CLI's own `main()` in a child that dropped to uid nobody in the
technician group (`users`, as tests/daemon/test_control_access.py: groups every Debian has).
Each command either works or says in one line why it cannot: a supervisor's command names the
group it needs and the command as typed, never the daemon's request (`'verify_run'`); a user in
neither group is told the socket's groups and exits 77; no traceback, no blank answer."""

from __future__ import annotations

import io
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import tests.daemon.test_control_access as acl
from controller.cli.main import main
from controller.control import request
from controller.daemon.build import SIM_LIMITS
from tests.daemon.test_control_access import NEITHER, NOBODY, SUPER, TECH, _daemon, _gid

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another uid needs root")


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield from _ready(tmp_path_factory.mktemp("astech"))


@pytest.fixture
def uth_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The same access set-up, a UTH table (its shuffler can raise a surveillance alarm)."""
    paigow = acl.config_text

    def uth(state: Path, run: Path, extra: str = "") -> str:
        text = paigow(state, run, extra).replace('game = "paigow"', 'game = "uth"')
        return text.split("[paigow]")[0] + "[uth]\n" + SIM_LIMITS["uth"] + \
            "[devices]\nsimulate = true\n"

    monkeypatch.setattr(acl, "config_text", uth)
    yield from _ready(tmp_path)


def _ready(tmp: Path) -> Iterator[Path]:
    for path, _proc in _daemon(tmp, "--simulate=pty", "--no-players", "--quiet"):
        deadline = time.monotonic() + 30
        while not request(path, "status")["ready"]:  # status exits 5 until then
            assert time.monotonic() < deadline, "the daemon did not become ready"
            time.sleep(0.05)
        yield path.parent


def as_user(run: Path, groups: list[int], *argv: str) -> tuple[int, str, str]:
    """`tablectl ARGV --runtime-dir RUN` in a child running as uid nobody with `groups` (the
    first the primary one): (exit code, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False))
                sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False))
                os.setgroups(groups)
                os.setgid(groups[0])
                os.setuid(NOBODY)
                try:
                    code = main([*argv, "--runtime-dir", str(run)])
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
                except BaseException:  # a traceback is what the test looks for: printed
                    import traceback

                    traceback.print_exc()
            finally:
                for stream in (sys.stdout, sys.stderr):
                    stream.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), out.read().decode(), err.read().decode()


# What a technician may use: each answers (exit 0, or 4 from status when something needs a
# person, 1 from `logs` when no line matched is not expected here: the start lines are there).
WORKS = [
    ["status"], ["round", "show", "1"], ["config", "show"], ["journal", "tail"],
    ["journal", "summary"], ["devices", "list"], ["devices", "watch", "--count", "1"],
    ["meters"], ["logs"], ["errors"], ["alarms"], ["alarms", "ack", "--all"],
]
# What needs the supervisor group: refused, naming the group and the command as typed.
SUPERVISORS = [
    ["selftest"], ["dealer", "void", "reason=test"], ["table", "close"],
    ["devices", "test", "shaker"], ["devices", "fault", "shaker", "unplug"],
    ["devices", "input", "chung1", "on"], ["verify"], ["meters", "close-shift"],
]


def test_every_command_works_for_a_technician_or_says_why_not(table: Path) -> None:
    tech = [_gid(TECH)]
    for argv in WORKS:
        code, out, err = as_user(table, tech, *argv)
        assert code in (0, 4) and out.strip(), (argv, code, out, err)
        assert "Traceback" not in out + err, (argv, err)
    watched = as_user(table, tech, "devices", "watch", "--count", "1")[1]
    assert "{" not in watched and watched.startswith("inputs "), watched  # words, not JSON
    for argv in SUPERVISORS:
        code, out, err = as_user(table, tech, *argv)
        typed = " ".join(["tablectl", *[a for a in argv if "=" not in a][:3]])
        assert code == 2 and out == "", (argv, code, out, err)
        assert err.count("\n") == 1 and f"needs group {SUPER}" in err, (argv, err)
        assert typed in err and "_" not in err.split("needs group")[0].replace(
            "permission denied", ""), (argv, err)  # `tablectl verify`, not 'verify_run'
    # The lamp walk is the technician's: answered by the test itself (no lamps on Pai Gow).
    code, _, err = as_user(table, tech, "devices", "lamps", "--step-ms", "100")
    assert code == 2 and "no lamps wired" in err and "permission" not in err, err


def test_a_user_in_neither_group_is_told_which_groups_and_exits_77(table: Path) -> None:
    for argv in (["status"], ["logs"], ["errors"], ["watch"], ["alarms"]):
        code, out, err = as_user(table, [_gid(NEITHER)], *argv)
        assert code == 77 and out == "", (argv, code, out, err)
        assert "permission denied on" in err and f"the socket's group ({TECH})" in err, err
        assert "technician or supervisor group" in err, err
        assert err.count("\n") == 1, err


def test_a_technician_acknowledges_a_technician_alarm_not_a_surveillance_one(
        uth_table: Path) -> None:
    """docs/operations.md "Alarms": a bad deck check's alarm (11.7.4) is surveillance's; a
    technician's acknowledgement is refused naming the supervisor group, a supervisor's taken."""
    request(uth_table / "control.sock", "device_fault", {"device": "shuffler", "fault": "missing"})
    request(uth_table / "control.sock", "dealer", {"action": "deck_check"})
    deadline = time.monotonic() + 30
    while not (active := request(uth_table / "control.sock", "alarms")["active"]):
        assert time.monotonic() < deadline, "no alarm"
        time.sleep(0.05)
    number = str(active[0]["id"])
    assert active[0]["severity"] == "surveillance"
    code, out, err = as_user(uth_table, [_gid(TECH)], "alarms")
    assert code == 0 and "to clear: a supervisor acknowledges it" in out, out
    code, out, err = as_user(uth_table, [_gid(TECH)], "alarms", "ack", number)
    assert code == 2 and out == "", (code, out, err)
    assert f"alarm {number} is a surveillance alarm; acknowledging it needs group {SUPER}" in err
    code, out, _ = as_user(uth_table, [_gid(TECH)], "alarms", "ack", "--all")
    assert code == 0 and "nothing acknowledged" in out, out  # --all leaves it to a supervisor
    code, out, err = as_user(uth_table, [_gid(SUPER), _gid(TECH)], "alarms", "ack", number,
                             "--note", "surveillance called")
    assert code == 0 and f"acknowledged alarm {number}" in out, (out, err)
    cleared = request(uth_table / "control.sock", "alarms")["cleared"][-1]["cleared"]
    assert cleared == "acknowledged by nobody (uid 65534): surveillance called"
