"""A control socket's path that a Unix socket cannot hold (sun_path: 107 bytes and a NUL) is
refused at start with the path and the limit named, before anything else starts; not a
traceback from bind() saying only "AF_UNIX path too long"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller.control import SOCKET_NAME, SOCKET_PATH_MAX, SocketPathTooLong, control_socket

REPO = Path(__file__).resolve().parents[2]


def test_a_path_that_fits_is_the_runtime_dirs_socket(tmp_path: Path) -> None:
    assert control_socket(tmp_path) == tmp_path / SOCKET_NAME
    fits = Path("/") / ("r" * (SOCKET_PATH_MAX - len(SOCKET_NAME) - 2))
    assert len(str(control_socket(fits)).encode()) == SOCKET_PATH_MAX


def test_one_byte_over_is_refused_naming_the_path_and_the_limit() -> None:
    over = Path("/") / ("r" * (SOCKET_PATH_MAX - len(SOCKET_NAME) - 1))
    with pytest.raises(SocketPathTooLong) as err:
        control_socket(over)
    assert str(over / SOCKET_NAME) in str(err.value)
    assert f"at most {SOCKET_PATH_MAX}" in str(err.value)


def test_the_daemon_refuses_to_start_with_a_clear_message(tmp_path: Path) -> None:
    runtime = tmp_path / ("d" * 120)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.daemon",
            "--simulate",
            "--game",
            "paigow",
            "--state-dir",
            str(tmp_path / "state"),
            "--runtime-dir",
            str(runtime),
            "--autoplay",
            "1",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert str(runtime / SOCKET_NAME) in done.stderr
    assert f"at most {SOCKET_PATH_MAX}" in done.stderr
    assert not (tmp_path / "state").exists() or not any((tmp_path / "state").iterdir())
