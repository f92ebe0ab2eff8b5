"""Ctrl-C in a `tablectl` command that does not handle it itself ends the command with exit
130 and no traceback (controller/cli/main.py: `except KeyboardInterrupt`).

The command is a real `tablectl status` in its own process, waiting for the control socket's
answer. The socket is the test's own: it accepts the connection, reads the request and never
answers, so the command is certainly inside its wait when the signal comes (a real daemon
answers at once). SIGINT is put back to its default in the child: a test run started in the
background has it ignored, and a child inherits that."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

from controller.control import SOCKET_NAME
from tests.support.daemon import REPO

CLI = [sys.executable, "-m", "controller.cli.main"]


def test_ctrl_c_while_a_command_waits_exits_130_without_a_traceback(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(run / SOCKET_NAME))
        server.listen(1)
        server.settimeout(60)  # a command that never connects fails the test, not hangs it
        proc = subprocess.Popen(
            [*CLI, "status", "--runtime-dir", str(run)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            conn, _ = server.accept()
            with conn:
                conn.settimeout(60)
                assert conn.recv(4096)  # its request: it now waits for the answer
                proc.send_signal(signal.SIGINT)
                out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 130, (proc.returncode, err)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert out == ""
