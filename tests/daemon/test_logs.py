"""controller/logs.py's three routes, and the daemon's start and stop lines.

- stderr is journald's stream, no systemd-python: `<N>` sd-daemon priority prefixes, checked
  byte for byte in a real file whose device:inode is put in JOURNAL_STREAM;
- stderr is journald's stream, systemd-python present: JournalHandler entries with PRIORITY
  and the event's fields, received on a stand-in of journald's native socket
  (tests/support/journald_sink.py); skipped only when systemd-python is not installed (the `journal`
  extra; CI installs it);
- otherwise plain lines.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller import logs
from controller.about import program_version
from tests.support import journald_sink
from tests.support.signed_install import signed_install

REPO = Path(__file__).resolve().parents[2]

try:
    import systemd.journal  # type: ignore[import-not-found]  # noqa: F401

    HAVE_SYSTEMD = True
except ImportError:
    HAVE_SYSTEMD = False

needs_sink = pytest.mark.skipif(
    not journald_sink.available(), reason="needs root and unshare for a private /run"
)
needs_systemd = pytest.mark.skipif(
    not HAVE_SYSTEMD, reason="systemd-python not installed (pip install -e '.[journal]')"
)


@pytest.fixture
def restore_logger() -> Iterator[None]:
    yield
    log = logging.getLogger("tablectl")
    for h in log.handlers:
        h.close()
    log.handlers.clear()
    log.propagate = True
    log.setLevel(logging.NOTSET)


def _stream_env(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    st = os.stat(path)
    monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")


def test_prefixed_lines_when_stderr_is_journald(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_logger: None
) -> None:
    monkeypatch.setattr(logs, "JournalHandler", None)  # as on a machine without systemd-python
    path = tmp_path / "stderr"
    with path.open("w") as stream:
        _stream_env(monkeypatch, path)
        log = logs.setup(stream=stream)
        assert logs.route(log) == "prefixed"
        logs.event(log, logging.WARNING, "link down: refused", kind="link", round=12)
        log.critical("OUT OF SERVICE: journal")
        log.info("round 3 completed")
        log.debug("not shown at INFO")
        log.error("from outside:\n<0>pretending to be an emergency")
    assert path.read_bytes() == (
        b"<4>link down: refused kind=link round=12\n"
        b"<2>OUT OF SERVICE: journal\n"
        b"<6>round 3 completed\n"
        b"<3>from outside:\n"
        b"<3><0>pretending to be an emergency\n"
    )


@pytest.mark.parametrize("stream_env", ["other", "1:2:3", "garbage", ""])
def test_plain_lines_when_stderr_is_not_journald(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_logger: None, stream_env: str
) -> None:
    monkeypatch.setattr(logs, "JournalHandler", None)
    other = tmp_path / "other"
    other.write_text("")
    path = tmp_path / "stderr"
    with path.open("w") as stream:
        if stream_env == "other":  # systemd's stream is not our stderr (redirected, a pipe)
            _stream_env(monkeypatch, other)
        else:
            monkeypatch.setenv("JOURNAL_STREAM", stream_env)
        log = logs.setup(stream=stream)
        assert logs.route(log) == "plain"
        logs.event(log, logging.WARNING, "link down", kind="link")
    text = path.read_text()
    assert not text.startswith("<") and text.rstrip().endswith("WARNING link down kind=link")


def test_journal_field_names_are_valid_and_bounded() -> None:
    fields = logs.journal_fields(
        {"round": 7, "kind": "deal", "bad-name": 1, "message": "x", "_trusted": 2,
         "code": "x" * 10_000, "none": None}
    )
    assert fields["ROUND"] == "7" and fields["KIND"] == "deal"
    assert fields["BAD_NAME"] == "1"
    assert fields["F_MESSAGE"] == "x"  # never overwrites the record's own MESSAGE
    assert fields["F__TRUSTED"] == "2"  # journald's trusted fields start with "_"
    assert len(fields["CODE"]) == logs.MAX_FIELD_BYTES
    assert fields["NONE"] == "None"


def test_priorities_follow_syslog() -> None:
    got = [logs.priority(level) for level in (50, 40, 30, 20, 10, 45, 25)]
    assert got == [2, 3, 4, 6, 7, 3, 6]


CHILD = """
import logging
from controller import logs
log = logs.setup()
print(logs.route(log), flush=True)
logs.event(log, logging.WARNING, "device shaker did not start", device="shaker", code="E42",
           round=12, kind="shake")
log.critical("OUT OF SERVICE: journal")
log.info("a line\\nwith a newline")
"""


@needs_sink
@needs_systemd
def test_journal_handler_sends_priority_and_fields(tmp_path: Path) -> None:
    rc, entries, stderr = journald_sink.run_with_journald(
        [sys.executable, "-c", CHILD], tmp_path
    )
    assert rc == 0, stderr
    assert stderr == b""  # everything went to the journal socket, nothing to the stream
    assert [e["PRIORITY"] for e in entries] == ["4", "2", "6"]
    warn = entries[0]
    assert warn["MESSAGE"] == "device shaker did not start"
    assert (warn["DEVICE"], warn["CODE"], warn["ROUND"], warn["KIND"]) == (
        "shaker", "E42", "12", "shake"
    )
    assert warn["SYSLOG_IDENTIFIER"] == "tablectld" and warn["LOGGER"] == "tablectl"
    assert entries[2]["MESSAGE"] == "a line\nwith a newline"  # one entry, binary-safe
    for entry in entries:  # only valid journal field names were sent
        assert all(k.isupper() and not k.startswith("_") for k in entry), sorted(entry)


@needs_sink
@needs_systemd
def test_a_script_entry_point_still_logs_as_tablectld(tmp_path: Path) -> None:
    # The VM runs `python vm_table.py`: without an explicit identifier JournalHandler takes
    # sys.argv[0] and `journalctl -t tablectld` (and `tablectl logs`) would miss every line.
    script = tmp_path / "vm_table.py"
    script.write_text(CHILD)
    rc, entries, stderr = journald_sink.run_with_journald([sys.executable, str(script)], tmp_path)
    assert rc == 0, stderr
    assert entries and {e["SYSLOG_IDENTIFIER"] for e in entries} == {logs.IDENTIFIER}
    assert logs.IDENTIFIER == "tablectld"


def test_the_handler_carries_the_identifier_whatever_argv0(
    monkeypatch: pytest.MonkeyPatch, restore_logger: None
) -> None:
    # Without a journald stand-in: what the handler would send, as fields.
    if not HAVE_SYSTEMD:
        pytest.skip("systemd-python not installed")
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(sys, "argv", ["/usr/local/lib/tablectl-vm/vm_table.py"])
    log = logs.setup(journald=True)
    (handler,) = log.handlers
    monkeypatch.setattr(handler, "send", lambda message, **fields: sent.append(fields))
    logs.event(log, logging.WARNING, "link down", kind="link")
    assert sent[0]["SYSLOG_IDENTIFIER"] == "tablectld" and sent[0]["KIND"] == "link"


def _table_config(tmp_path: Path) -> Path:
    """The shipped Pai Gow example with simulated devices, runnable by this user."""
    text = (REPO / "examples/paigow-nsw.toml").read_text()
    text = text.replace("simulate = false", "simulate = true")
    text = text.replace('socket_group = "tablectl"', 'socket_group = "root"')
    text = text.replace("watchdog = true", "watchdog = false")
    path = tmp_path / "table.toml"
    path.write_text(text)
    return path


# Starts tablectld on its config (not --simulate: the table's own logging), waits until the
# software check has finished, then stops it as systemd would (SIGTERM).
WRAPPER = """
import signal, subprocess, sys, time
from pathlib import Path
from controller.control import request
state = Path(sys.argv[2])
p = subprocess.Popen([sys.executable, "-m", "controller.daemon", "--config", sys.argv[1],
                      "--state-dir", str(state), "--runtime-dir", str(state / "run")])
deadline = time.monotonic() + 60
while time.monotonic() < deadline and p.poll() is None:
    try:
        if request(state / "run" / "control.sock", "status")["verification"]["state"] != "checking":
            break
    except Exception:
        pass
    time.sleep(0.1)
p.send_signal(signal.SIGTERM)
sys.exit(p.wait(60))
"""


@needs_sink
@pytest.mark.parametrize(
    "journal",
    [pytest.param(True, id="journalhandler", marks=pytest.mark.skipif(
        not HAVE_SYSTEMD, reason="systemd-python is not installed (./dev setup installs it)")),
     pytest.param(False, id="prefixed")],
)
def test_daemon_start_and_stop_lines(tmp_path: Path, journal: bool) -> None:
    from controller.control import SOCKET_NAME

    settings = signed_install(tmp_path / "root", tmp_path / "keys")
    manifest = tmp_path / "root/opt/tablectl/share/tablectl/manifest.json"
    import hashlib

    digest = hashlib.sha256(manifest.read_bytes()).hexdigest()
    env = {"TABLECTL_VERIFICATION": str(settings)}
    if not journal:  # hide systemd-python: the route of an image without it
        blocker = tmp_path / "nosystemd"
        (blocker / "systemd").mkdir(parents=True)
        (blocker / "systemd/__init__.py").write_text("raise ImportError('hidden by the test')\n")
        env["PYTHONPATH"] = f"{blocker}{os.pathsep}{REPO}"
    wrapper = WRAPPER.replace("control.sock", SOCKET_NAME)
    rc, entries, stderr = journald_sink.run_with_journald(
        [sys.executable, "-c", wrapper, str(_table_config(tmp_path)), str(tmp_path / "state")],
        tmp_path,
        env=env,
    )
    assert rc == 0, stderr.decode(errors="replace")
    version = program_version()
    if journal:
        messages = [(e["PRIORITY"], e["MESSAGE"], e) for e in entries]
        assert stderr == b""
    else:
        assert entries == []
        messages = [
            (line[1:2].decode(), line[3:].decode(), {})
            for line in stderr.splitlines()
            if line[:1] == b"<"
        ]
        assert all(line[:1] == b"<" for line in stderr.splitlines()), stderr
    started = [m for m in messages if m[1].startswith(f"tablectld {version} started")]
    assert len(started) == 1, messages
    prio, text, fields = started[0]
    assert prio == "6"
    assert f"software verified, manifest sha256 {digest}" in text
    if journal:
        assert fields["VERSION"] == version and fields["MANIFEST_SHA256"] == digest
        assert fields["VERIFICATION"] == "verified"
    stopped = [m for m in messages if m[1].startswith(f"tablectld {version} stopped (exit 0)")]
    assert len(stopped) == 1 and stopped[0][0] == "6", messages
    assert messages.index(stopped[0]) == len(messages) - 1  # the last line


def test_version_option_says_unverified_and_why(tmp_path: Path) -> None:
    import subprocess

    env = {**os.environ, "TABLECTL_VERIFICATION": str(tmp_path / "absent.toml")}
    run = subprocess.run(
        [sys.executable, "-m", "controller.cli.main", "--version"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60,
    )
    assert run.returncode == 0
    assert run.stdout == (
        f"tablectl {program_version()} (unverified: no manifest installed (a development tree)), "
        "no build record (a development tree)\n"
    )


def test_version_option_prints_the_verified_digest(tmp_path: Path) -> None:
    import hashlib
    import subprocess

    settings = signed_install(tmp_path / "root", tmp_path / "keys")
    manifest = tmp_path / "root/opt/tablectl/share/tablectl/manifest.json"
    digest = hashlib.sha256(manifest.read_bytes()).hexdigest()
    env = {**os.environ, "TABLECTL_VERIFICATION": str(settings)}
    run = subprocess.run(
        [sys.executable, "-m", "controller.cli.main", "--version"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60,
    )
    assert run.stdout == (
        f"tablectl {program_version()} (manifest sha256 {digest}), no build record installed\n"
    )
    # A changed file: the digest is no longer vouched for.
    (tmp_path / "root/opt/tablectl/lib/python3.11/site-packages/controller/rules.py").write_text(
        "PAYOUT = 99\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "controller.cli.main", "--version"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60,
    )
    assert run.stdout.startswith(f"tablectl {program_version()} (unverified: ")
    assert "rules.py" in run.stdout
    assert json.dumps(run.stdout)  # one line
    assert run.stdout.count("\n") == 1


def test_version_option_names_the_installed_build_record(tmp_path: Path) -> None:
    """An image build installs its record beside the manifest (image/buildrecord.py, issue
    32): --version names its id (the sha256 of the file, the build_id of the record published
    beside the image) and its commit."""
    import hashlib
    import subprocess

    settings = signed_install(tmp_path / "root", tmp_path / "keys")
    record = tmp_path / "root/opt/tablectl/share/tablectl/build.json"
    record.write_text('{"commit": "0123456789abcdef0123456789abcdef01234567", "format": 1}\n')
    build_id = hashlib.sha256(record.read_bytes()).hexdigest()
    env = {**os.environ, "TABLECTL_VERIFICATION": str(settings)}
    run = subprocess.run(
        [sys.executable, "-m", "controller.cli.main", "--version"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.endswith(f", build {build_id[:16]} of commit 0123456789ab\n")
    record.write_text("not json")
    run = subprocess.run(
        [sys.executable, "-m", "controller.cli.main", "--version"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60,
    )
    assert run.returncode == 0 and run.stdout.endswith(f", build record {record} malformed\n")


def test_round_lines_carry_their_round_as_a_field(tmp_path: Path, restore_logger: None) -> None:
    """What `journalctl -o json` shows as ROUND= and STATUS= (the fields journald gets)."""
    import asyncio
    import random

    from controller.config.machine import build_machine
    from controller.daemon.build import build_devices, build_policy, simulation_config
    from controller.daemon.service import TableService

    state = tmp_path / "state"
    cfg = simulation_config("paigow", "nsw", state, state / "run")
    rng = random.Random(3)
    log = logs.setup(journald=False, stream=(tmp_path / "stderr").open("w"))
    seen: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = seen.append  # type: ignore[method-assign]
    log.addHandler(handler)
    service = TableService(cfg, build_machine(cfg), build_devices(cfg, rng), log,
                           policy=build_policy(cfg, rng), autoplay=2)
    asyncio.run(service.run())
    rounds = [
        logs.journal_fields(getattr(r, logs.FIELDS_ATTR))
        for r in seen
        if re.fullmatch(r"round \d+ (completed|voided)", r.getMessage())
    ]
    assert [f.get("ROUND") for f in rounds] == ["1", "2"]
    assert all(f["STATUS"] in ("completed", "voided") for f in rounds)
