"""The technician's commands (issue 15): `tablectl logs`, `tablectl errors` with their codes,
`tablectl config show`, and the human views of status, watch and selftest (money in dollars,
no raw dicts). Each against a real daemon process, exit codes included."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from controller.codes import CODES
from controller.errorlog import LEVELS
from tests.support.daemon import REPO, ask, start_daemon, wait_for_socket

OPERATIONS = REPO / "docs" / "operations.md"


def tablectl(*args: str, env: dict[str, str] | None = None,
             timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller.cli.main", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=timeout,
                          env={**os.environ, **(env or {})})


def run_dir(state: Path) -> list[str]:
    return ["--runtime-dir", str(state / "run")]


def wait_until(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def faulty_shaker(tmp_path: Path) -> Any:
    """A Pai Gow table on pty simulators whose shaker stopped answering for a while."""
    proc = start_daemon(tmp_path, "--simulate=pty", "--game", "paigow", "--autoplay", "0",
                        "--pace", "0.05", "--quiet", "--seed", "3")
    try:
        wait_for_socket(tmp_path, proc)
        # Device commands are refused while the start-up checks run ("still starting").
        wait_until(lambda: ask(tmp_path, "status")["verification"]["state"] != "checking", 30,
                   "the start-up checks")
        ask(tmp_path, "device_fault", {"device": "shaker", "fault": "no_answer", "value": "on"})
        wait_until(lambda: any(e["code"] == "E204" for e in ask(tmp_path, "errors")["errors"]),
                   30, "the shaker's fault in the error history")
        ask(tmp_path, "device_fault", {"device": "shaker", "fault": "no_answer", "value": "off"})
        yield tmp_path, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)


def test_logs_and_errors_name_the_device_and_the_code(faulty_shaker: Any) -> None:
    state, proc = faulty_shaker
    run = tablectl("logs", "--level", "warning", "-n", "500", "--json", *run_dir(state))
    assert run.returncode == 0, run.stderr
    logs = json.loads(run.stdout)
    assert logs["source"] == "daemon" and logs["lines"]
    assert all(LEVELS[x["level"]] >= LEVELS["warning"] for x in logs["lines"])
    assert all(x["code"] in CODES for x in logs["lines"])
    shaker = json.loads(tablectl("logs", "--device", "shaker", "--json", *run_dir(state)).stdout)
    assert shaker["lines"] and all(x["fields"]["device"] == "shaker" for x in shaker["lines"])
    assert any("no answer" in x["message"] for x in shaker["lines"])
    rounds = json.loads(tablectl("logs", "--round", "1", "--json", *run_dir(state)).stdout)
    assert all(x["fields"].get("round") == 1 for x in rounds["lines"])
    human = tablectl("errors", *run_dir(state))
    assert human.returncode == 0
    assert re.search(r"E204 +\d+x +a device driver reported a fault", human.stdout)
    assert "{" not in human.stdout.splitlines()[1]  # a summary line, not a dict

    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    # The history outlives the daemon: read from its file.
    offline = tablectl("errors", "--state-dir", str(state), "--json")
    assert offline.returncode == 0
    codes = {e["code"] for e in json.loads(offline.stdout)["errors"]}
    assert "E204" in codes and codes <= set(CODES)
    assert tablectl("logs", "--source", "daemon", *run_dir(state)).returncode == 3


def test_bad_arguments_exit_2_and_a_stopped_daemon_3(tmp_path: Path) -> None:
    for args in (["errors", "--days", "0"], ["errors", "--days", "8"], ["logs", "-n", "0"]):
        run = tablectl(*args, *run_dir(tmp_path))
        assert run.returncode == 2 and run.stderr.count("\n") == 1, args
    for args in (["meters"], ["logs", "--source", "daemon"], ["config", "show"]):
        assert tablectl(*args, *run_dir(tmp_path), "--json",
                        env={"PATH": os.environ["PATH"]}).returncode == 3, args


def test_logs_from_journald_when_the_daemon_logs_there(tmp_path: Path) -> None:
    """journalctl's JSON (a stand-in that records how it was asked) as logbook lines."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    asked = tmp_path / "asked"
    entries = [
        {"__REALTIME_TIMESTAMP": "1764144000000000", "PRIORITY": "3", "MESSAGE": "shaker: jam",
         "DEVICE": "shaker", "CODE": "E204", "ROUND": "12"},
        {"__REALTIME_TIMESTAMP": "1764144001000000", "PRIORITY": "6", "MESSAGE": "round 12",
         "ROUND": "12"},
    ]
    fake = bin_dir / "journalctl"
    fake.write_text("#!/bin/sh\n"
                    f"echo \"$@\" > {asked}\n"
                    f"cat <<'EOF'\n{chr(10).join(json.dumps(e) for e in entries)}\nnot json\nEOF\n")
    fake.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    run = tablectl("logs", "--source", "journald", "--round", "12", "--json", env=env)
    assert run.returncode == 0, run.stderr
    lines = json.loads(run.stdout)["lines"]
    assert [x["level"] for x in lines] == ["error", "info"]
    assert lines[0] == {"utc": "2025-11-26T08:00:00.000Z", "level": "error", "code": "E204",
                        "message": "shaker: jam", "fields": {"round": 12, "device": "shaker"}}
    assert "SYSLOG_IDENTIFIER=tablectld" in asked.read_text() and "ROUND=12" in asked.read_text()
    # With the daemon down, auto asks journald too.
    run = tablectl("logs", "--level", "error", *run_dir(tmp_path), env=env)
    assert run.returncode == 0 and "E204 shaker: jam" in run.stdout
    assert "-p 3" in asked.read_text()


def test_every_error_code_is_documented() -> None:
    text = OPERATIONS.read_text(encoding="utf-8")
    documented = set(re.findall(r"\| (E\d{3}) \|", text))
    assert documented == set(CODES)
    used = set(re.findall(r'"(E\d{3})"', "\n".join(
        p.read_text() for p in (REPO / "controller").rglob("*.py"))))
    assert used <= set(CODES)


def test_config_show_in_dollars_and_json(tmp_path: Path) -> None:
    example = REPO / "examples" / "uth-nsw.toml"
    run = tablectl("config", "show", str(example))
    assert run.returncode == 0, run.stderr
    assert re.search(r"^uth\.limits\.ante_min = \d+  # \$[\d,]+\.\d\d$", run.stdout, re.M)
    assert re.search(r"^uth\.jackpot\.seed = \d+  # \$", run.stdout, re.M)
    as_json = json.loads(tablectl("config", "show", str(example), "--json").stdout)
    assert as_json["table_id"] and isinstance(as_json["uth"]["limits"]["ante_min"], int)
    bad = tmp_path / "bad.toml"
    bad.write_text('table_id = "T1"\ngame = "craps"\n')
    run = tablectl("config", "show", str(bad))
    assert run.returncode == 1 and "game" in run.stdout
    proc = start_daemon(tmp_path, "--game", "uth", "--autoplay", "0", "--pace", "1", "--quiet")
    try:
        wait_for_socket(tmp_path, proc)
        run = tablectl("config", "show", *run_dir(tmp_path))
        assert run.returncode == 0 and run.stdout.startswith("# the running tablectld")
        assert 'table_id = "SIM-UTH-NSW"' in run.stdout
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def test_human_views_show_dollars_and_readable_rounds(tmp_path: Path) -> None:
    proc = start_daemon(tmp_path, "--game", "uth", "--autoplay", "0", "--pace", "0.01",
                        "--quiet", "--seed", "2")
    try:
        wait_for_socket(tmp_path, proc)
        watch = subprocess.Popen(
            [sys.executable, "-m", "controller.cli.main", "watch", *run_dir(tmp_path)],
            stdout=subprocess.PIPE, text=True, cwd=REPO)
        assert watch.stdout is not None
        first = watch.stdout.readline()  # watching: the stream is open
        assert first.startswith("watching SIM-UTH-NSW")
        played = ask(tmp_path, "status")["meters"]["shift"]["rounds_played"]
        wait_until(lambda: ask(tmp_path, "status")["meters"]["shift"]["rounds_played"]
                   >= played + 3, 60, "three rounds")
        watch.send_signal(signal.SIGINT)
        seen, _ = watch.communicate(timeout=30)
        status = tablectl("status", *run_dir(tmp_path)).stdout
        selftest = tablectl("selftest", *run_dir(tmp_path)).stdout
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    lines = seen.splitlines()
    assert not [x for x in lines if x.endswith("->") or "log:" in x]  # no empty effect lists
    summaries = [x for x in lines if re.match(r"    round \d+ (completed|voided)", x)]
    assert summaries and all("{" not in x for x in summaries)
    assert any("house $" in x or "-$" in x for x in summaries)
    assert re.search(r"^pool +sim-pool \(standalone\) \$[\d,]+\.\d\d; seed \$50,000\.00", status,
                     re.M)
    assert re.search(r"^shift +1: \d+ rounds played", status, re.M)
    assert "'amount'" not in status and "{'" not in selftest
