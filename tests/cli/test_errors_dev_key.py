"""The development journal key is a notice off play, a fault in production (issue 28, second
pass, 5): under --simulate `tablectl errors` counted "JOURNAL KEY IS A DEVELOPMENT KEY" as an
error (E900) beside the simulation notices (E801) it belongs with."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from controller.daemon.build import simulation_config
from controller.daemon.opening import open_journal
from controller.logs import FIELDS_ATTR
from tests.support.daemon import REPO, start_daemon, wait_ready


@pytest.mark.parametrize(("mode", "code"), [("simulation", "E801"), ("development", "E801"),
                                            ("production", "E107")])
def test_the_development_key_line_is_a_notice_only_off_play(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, mode: str, code: str) -> None:
    cfg = simulation_config("paigow", "nsw", tmp_path / "state", tmp_path / "run")
    caplog.set_level(logging.WARNING)
    open_journal(cfg, logging.getLogger("test.devkey"), bootloader=tmp_path / "none",
                 mode=mode).close()
    said = [r for r in caplog.records if "DEVELOPMENT KEY" in r.getMessage()]
    assert len(said) == 1 and getattr(said[0], FIELDS_ATTR)["code"] == code


@pytest.mark.slow
def test_errors_under_simulation_counts_no_error_for_the_development_key(tmp_path: Path) -> None:
    proc = start_daemon(tmp_path, "--game", "paigow", "--no-players", "--quiet")
    try:
        wait_ready(tmp_path, proc)
        run = subprocess.run([sys.executable, "-m", "controller.cli.main", "errors", "--json",
                              "--runtime-dir", str(tmp_path / "run")],
                             cwd=REPO, capture_output=True, text=True, timeout=60)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert run.returncode == 0, run.stderr
    lines = json.loads(run.stdout)
    lines = lines.get("errors", lines) if isinstance(lines, dict) else lines
    key = [x for x in lines if "DEVELOPMENT KEY" in x["message"]]
    assert [x["code"] for x in key] == ["E801"], key
    human = subprocess.run([sys.executable, "-m", "controller.cli.main", "errors",
                            "--state-dir", str(tmp_path)], cwd=REPO, capture_output=True,
                           text=True, timeout=60)
    assert human.stdout.startswith("no errors in the last 7 days"), human.stdout
    assert "E900" not in human.stdout and "notices (E801)" in human.stdout, human.stdout
