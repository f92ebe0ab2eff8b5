"""Software verification fails closed (issue 12 item 5): without verification settings a table
is out of service -- status, meter, log -- unless it runs in an explicit mode that may play
unverified (simulation, development), which it then shows; development mode is refused on an
installed table (docs/verification.md)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from controller.config import validate_text
from controller.config.machine import build_machine
from controller.control import SOCKET_NAME, NotRunning, request
from controller.daemon.build import build_devices, run_mode
from controller.daemon.service import TableService
from controller.extensions import verify as verify_service
from controller.extensions.verify import (
    INSTALLED_MARKER,
    METER_TEXT,
    SoftwareVerification,
    installed_layout,
)
from controller.logs import setup as log_setup
from tests.support.daemon import REPO


def config_text(state: Path, development: bool) -> str:
    """A table as installed tables are configured (no --simulate), devices simulated."""
    return (
        'table_id = "VM-1"\ngame = "paigow"\n'
        f'[service]\nstate_dir = "{state}"\nruntime_dir = "{state / "run"}"\n'
        f'socket_group = "root"\nwatchdog = false\ndevelopment = {str(development).lower()}\n'
        '[paigow]\nrules = "nsw"\n[paigow.limits]\nminimum = 1000\n[devices]\nsimulate = true\n'
    )


def run_daemon(tmp_path: Path, development: bool) -> tuple[dict[str, Any], str]:
    """Start tablectld on the config (no verification settings anywhere), return its status
    once started and its log after SIGTERM."""
    state = tmp_path / "state"
    toml = tmp_path / "table.toml"
    toml.write_text(config_text(state, development))
    env = {**os.environ, "TABLECTL_VERIFICATION": str(tmp_path / "deleted-verification.toml")}
    err = tmp_path / "daemon.err"
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller.daemon", "--config", str(toml)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err.open("w"),
    )
    try:
        deadline = time.monotonic() + 30
        status: dict[str, Any] | None = None
        while time.monotonic() < deadline:
            assert proc.poll() is None, err.read_text()
            try:
                status = request(state / "run" / SOCKET_NAME, "status", timeout=2)
                if status["verification"]["state"] != "checking" and status["state"]:
                    break
            except (NotRunning, OSError):
                pass
            time.sleep(0.05)
        assert status is not None
        return status, err.read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_a_table_without_verification_settings_is_out_of_service(tmp_path: Path) -> None:
    status, log = run_daemon(tmp_path, development=False)
    assert status["mode"] == "production"
    assert status["state"] == "out_of_service"
    assert "no software verification settings" in status["out_of_service"]
    assert status["verification"]["state"] == "missing"
    assert "OUT OF SERVICE: software verification: no software verification settings" in log


def test_development_mode_runs_unverified_and_says_so(tmp_path: Path) -> None:
    status, log = run_daemon(tmp_path, development=True)
    assert status["out_of_service"] is None and status["state"] != "out_of_service"
    assert status["mode"] == "development"
    assert status["config"]["service"]["development"] is True
    assert status["verification"] == {
        "state": "not_configured",
        "detail": "no manifest configured: the installed program is not verified"
        " (development mode)",
        "mode": "development",
    }
    assert "running in development mode" in log


def _service(tmp_path: Path, mode: str) -> tuple[TableService, SoftwareVerification]:
    state = tmp_path / "state"
    cfg = validate_text(config_text(state, mode == "development"))
    ext = SoftwareVerification(log_setup(journald=False), None, mode=mode)
    service = TableService(
        cfg,
        build_machine(cfg),
        build_devices(cfg, random.Random(1)),
        logging.getLogger("tablectl"),
        extensions=[ext],
        mode=mode,
    )
    return service, ext


async def _started(service: TableService) -> asyncio.Task[int]:
    """Run the service until it has shown something on the meter after starting."""
    run = asyncio.create_task(service.run())
    meter = service.devices["meter"]
    while not (
        getattr(meter.view, "mode", None) == "announce"
        or (service.out_of_service and getattr(meter.view, "mode", None) == "closed")
    ):
        await asyncio.sleep(0.01)
    return run


@pytest.mark.parametrize(
    ("mode", "meter", "out_of_service"),
    [
        ("production", METER_TEXT, True),
        ("development", "DEVELOPMENT MODE", False),
        ("simulation", "SIMULATION MODE", False),
    ],
)
def test_the_meter_shows_the_mode_or_the_refusal(
    tmp_path: Path, mode: str, meter: str, out_of_service: bool
) -> None:
    service, _ext = _service(tmp_path, mode)

    async def scenario() -> None:
        run = await _started(service)
        service.stop()
        await run

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert service.devices["meter"].view.text == meter  # type: ignore[attr-defined]
    assert (service.out_of_service is not None) is out_of_service
    assert service._status_line().endswith("" if mode == "production" else f"[{mode.upper()} MODE]")


def test_installed_layout_is_the_image_prefix_or_its_marker(tmp_path: Path) -> None:
    assert not installed_layout(tmp_path)
    (tmp_path / INSTALLED_MARKER).parent.mkdir(parents=True)
    (tmp_path / INSTALLED_MARKER).touch()
    assert installed_layout(tmp_path)
    assert installed_layout(Path("/opt/tablectl"))


def test_development_is_refused_on_an_installed_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = validate_text(config_text(tmp_path, development=True))
    args = argparse.Namespace(simulate=None)
    assert run_mode(cfg, args) == "development"  # a development tree
    monkeypatch.setattr(verify_service, "INSTALL_PREFIX", Path(sys.prefix))  # as if in /opt
    assert run_mode(cfg, args) == "production"
    # --simulate is not a table taking wagers: it stays allowed and shown everywhere.
    assert run_mode(cfg, argparse.Namespace(simulate="inproc")) == "simulation"
