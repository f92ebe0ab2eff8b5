"""image/overlay/usr/local/sbin/tablectl-slot health-commit, run as the image runs it.

The script is run as a subprocess against a fake root: the firmware's tryboot flag and booted
partition as device-tree files, autoboot.txt in a fake /bootfs, a fake /opt/tablectl whose
`python` is a Python 3.11 (the image's interpreter) and whose `tablectl` is this checkout's
CLI, and a real simulated tablectld (with a signed manifest, so it is `verified`) whose journal
is in the fake data partition. `systemctl` is a stub on PATH that records what it was asked.
"""

from __future__ import annotations

import configparser
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.daemon import ask, start_daemon, wait_for_socket
from tests.support.signed_install import signed_install

REPO = Path(__file__).resolve().parent.parent
SLOT = REPO / "image/overlay/usr/local/sbin/tablectl-slot"
DROPIN = REPO / "image/overlay/etc/systemd/system/tablectld.service.d/persistent.conf"
PY311 = Path("/usr/bin/python3.11") if Path("/usr/bin/python3.11").exists() else None
if PY311 is None and shutil.which("python3.11"):
    PY311 = Path(str(shutil.which("python3.11")))

pytestmark = pytest.mark.skipif(PY311 is None, reason="no python3.11 (the image's interpreter)")

AUTOBOOT = "[all]\ntryboot_a_b=1\nboot_partition=2\n[tryboot]\nboot_partition=3\n"
COMMITTED_3 = "[all]\ntryboot_a_b=1\nboot_partition=3\n[tryboot]\nboot_partition=2\n"


def _dt(root: Path, partition: int, tryboot: int) -> Path:
    """The firmware's /proc/device-tree/chosen/bootloader: big-endian 32-bit integers."""
    base = root / "proc/device-tree"
    node = base / "chosen/bootloader"
    node.mkdir(parents=True, exist_ok=True)
    (node / "partition").write_bytes(partition.to_bytes(4, "big"))
    (node / "tryboot").write_bytes(tryboot.to_bytes(4, "big"))
    return base


def _exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class Table:
    """The fake root, a running simulated table in it, and a way to run tablectl-slot."""

    def __init__(self, tmp: Path) -> None:
        self.root = tmp / "root"
        self.state = self.root / "persistent/tablectl"
        self.state.mkdir(parents=True)
        self.settings = signed_install(self.root, tmp / "keys")
        venv_bin = self.root / "opt/tablectl/bin"
        venv_bin.mkdir(parents=True)
        os.symlink(PY311, venv_bin / "python")
        _exe(
            venv_bin / "tablectl",
            f'#!/bin/sh\ncd "{REPO}" && exec "{sys.executable}" -m controller.cli.main "$@"\n',
        )
        self.stubs = tmp / "stubs"
        self.stubs.mkdir()
        self.calls = tmp / "systemctl.calls"
        _exe(self.stubs / "systemctl", f'#!/bin/sh\necho "$*" >>"{self.calls}"\n')
        _exe(self.stubs / "logger", "#!/bin/sh\nexit 0\n")
        (self.root / "bootfs").mkdir()
        self.autoboot = self.root / "bootfs/autoboot.txt"
        self.autoboot.write_text(AUTOBOOT)
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> dict:
        env = {"TABLECTL_VERIFICATION": str(self.settings)}
        self.proc = start_daemon(
            self.state, "--game", "paigow", "--autoplay", "0", "--pace", "0.05", env=env
        )
        status = wait_for_socket(self.state, self.proc)
        deadline = time.monotonic() + 30
        while status["verification"]["state"] == "checking" and time.monotonic() < deadline:
            time.sleep(0.05)
            status = ask(self.state, "status")
        return status

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.communicate(timeout=30)

    def slot(
        self, *args: str, tryboot: int = 1, state_dir: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "PATH": f"{self.stubs}:{os.environ['PATH']}",
            "TABLECTL_AUTOBOOT": str(self.autoboot),
            "TABLECTL_DEVICE_TREE": str(_dt(self.root, partition=3, tryboot=tryboot)),
            "TABLECTL_VENV": str(self.root / "opt/tablectl"),
            "TABLECTL_STATE_DIR": str(state_dir or self.state),
            "TABLECTL_RUNTIME_DIR": str(self.state / "run"),
            "TABLECTL_HEALTH_WAIT_S": "10",  # one failed check, then roll back
        }
        return subprocess.run(
            ["sh", str(SLOT), *args], env=env, capture_output=True, text=True, timeout=120
        )

    def systemctl_calls(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []


@pytest.fixture
def table() -> Iterator[Table]:
    # A short fake root: the daemon's control socket lies deep in it
    # (root/persistent/tablectl/run/control.sock), and pytest's own tmp_path under xdist
    # (/tmp/pytest-of-USER/pytest-N/popen-gwK/<test name>0/) would take it past the 107 bytes
    # of a Unix socket's path, which the daemon refuses (controller/control.py).
    tmp = Path(tempfile.mkdtemp(prefix="slot-"))
    t = Table(tmp)
    try:
        yield t
    finally:
        t.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_healthy_tried_slot_is_committed(table: Table) -> None:
    status = table.start()
    assert status["verification"]["state"] == "verified"
    time.sleep(0.5)  # a few rounds in the journal
    result = table.slot("health-commit")
    assert result.returncode == 0, result.stderr
    assert "health: state=" in result.stderr and "verification=verified" in result.stderr
    # The booted (tried) partition 3 is now the default; the old one is the next try.
    assert table.autoboot.read_text() == (
        "[all]\ntryboot_a_b=1\nboot_partition=3\n[tryboot]\nboot_partition=2\n"
    )
    assert table.systemctl_calls() == []
    assert "partition 3 is healthy: committed" in result.stderr


def test_tried_slot_out_of_service_is_rolled_back(table: Table) -> None:
    # The program was changed after signing: the table refuses to play (out of service).
    rules = table.root / "opt/tablectl/lib/python3.11/site-packages/controller/rules.py"
    rules.write_text("PAYOUT = 99\n")
    table.start()
    result = table.slot("health-commit")
    assert result.returncode == 1
    assert "unhealthy" in result.stderr
    assert table.systemctl_calls() == ["reboot"]  # the firmware falls back to the committed slot
    assert table.autoboot.read_text() == AUTOBOOT  # nothing committed


def test_tried_slot_whose_journal_does_not_verify_is_rolled_back(table: Table) -> None:
    """A table that plays but whose journal (where the script checks it) does not verify:
    here the slot's own /var/lib/tablectl, empty, which is where main's script looked."""
    table.start()
    empty = table.root / "var/lib/tablectl"
    empty.mkdir(parents=True)
    result = table.slot("health-commit", state_dir=empty)
    assert result.returncode == 1
    assert "verification=verified" in result.stderr  # status passed; the journal did not
    assert table.systemctl_calls() == ["reboot"]
    assert table.autoboot.read_text() == AUTOBOOT


def test_not_a_tryboot_commits_nothing(table: Table) -> None:
    result = table.slot("health-commit", tryboot=0)
    assert result.returncode == 0
    assert "not a tryboot" in result.stderr
    assert table.autoboot.read_text() == AUTOBOOT
    assert table.systemctl_calls() == []


def test_rollback_gives_the_journal_back_to_the_software_before_schema_4(table: Table) -> None:
    """`tablectl-slot rollback` stops tablectld and downgrades the journal (schema 4 -> 3,
    docs/journal.md "Schema 4") before it makes the other slot the default and reboots."""
    import sqlite3

    table.autoboot.write_text(COMMITTED_3)  # the update on partition 3 was committed
    table.start()
    time.sleep(0.5)  # a few rounds in the journal, stored as schema 4 (no tryboot here)
    table.stop()  # what the stubbed `systemctl stop tablectld.service` stands for
    db = table.state / "journal.sqlite3"

    def schema_and_empty_hashes() -> tuple[str, int]:
        with sqlite3.connect(db) as c:
            return (c.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0],
                    c.execute("SELECT count(*) FROM commits WHERE hash = x''").fetchone()[0])

    schema, empty = schema_and_empty_hashes()
    assert schema == "4" and empty > 0
    result = table.slot("rollback", tryboot=0)
    assert result.returncode == 0, result.stderr
    assert f"downgraded to schema 3: {empty} rows given their chain hash" in result.stderr
    assert schema_and_empty_hashes() == ("3", 0)
    assert table.systemctl_calls() == ["stop tablectld.service", "reboot"]
    assert table.autoboot.read_text() == AUTOBOOT  # partition 2 the default again


def test_a_rollback_whose_journal_cannot_be_downgraded_changes_nothing(table: Table) -> None:
    table.autoboot.write_text(COMMITTED_3)
    table.state.joinpath("journal.sqlite3").write_bytes(b"not a journal")
    result = table.slot("rollback", tryboot=0)
    assert result.returncode == 1
    assert "journal downgrade failed: not rolled back" in result.stderr
    assert table.systemctl_calls() == ["stop tablectld.service"]
    assert table.autoboot.read_text() == COMMITTED_3


def test_script_looks_for_the_journal_where_the_daemon_keeps_it() -> None:
    """The default state directory is the data-partition side of the daemon's BindPaths=."""
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(DROPIN)
    source, target = unit["Service"]["BindPaths"].split(":")
    assert target == "/var/lib/tablectl"
    default = re.search(r"^STATE_DIR=\$\{TABLECTL_STATE_DIR:-([^}]+)\}$", SLOT.read_text(), re.M)
    assert default is not None and default.group(1) == source
    tmpfiles = (REPO / "image/overlay/usr/lib/tmpfiles.d/tablectl-image.conf").read_text()
    assert re.search(rf"^d {re.escape(source)} ", tmpfiles, re.M)


def test_script_python_parses_on_311() -> None:
    """Every inline Python program in the script compiles on the image's Python 3.11."""
    programs = re.findall(r"python\" -c '(.*?)'", SLOT.read_text(), re.S)
    assert programs
    for program in programs:
        check = subprocess.run(
            [str(PY311), "-c", "import sys; compile(sys.stdin.read(), 'slot', 'exec')"],
            input=program,
            capture_output=True,
            text=True,
        )
        assert check.returncode == 0, check.stderr
