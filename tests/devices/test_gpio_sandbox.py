"""GPIO under tablectld.service's sandbox.

gpiozero's lgpio pin factory finds the board by its revision before any pin opens
(PiFactory.pin -> board_info -> gpiozero.pins.local.get_pi_revision), reading
/proc/device-tree/system/linux,revision or else /proc/cpuinfo. The unit's ProtectProc= and
ProcSubset= decide which /proc it sees. Without systemd as PID 1 here, the test mounts /proc
with the options those directives stand for (systemd.exec(5): hidepid=, subset=) in fresh PID
and mount namespaces and runs gpiozero's own revision lookup there: it must see what it sees
outside, every file it opened and the outcome (on a Pi, the revision; elsewhere, "no Pi").
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devices.base import DeviceError
from devices.sensors.gpio import make_factory

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "systemd/tablectld.service"

# The child: gpiozero's board lookup through a local Pi factory, every open() it makes noted.
PROBE = r"""
import json, os, sys
opened = []
sys.addaudithook(lambda ev, args: opened.append(str(args[0])) if ev == "open" else None)
from gpiozero.pins.local import LocalPiFactory
class Probe(LocalPiFactory):
    pass
try:
    outcome = "board revision %s" % Probe().board_info.revision
except Exception as exc:
    outcome = "%s: %s" % (type(exc).__name__, exc)
proc = sorted({p for p in opened if p.startswith("/proc/")})
print(json.dumps({"outcome": outcome, "files": {p: os.path.exists(p) for p in proc}}))
"""


def proc_mount_options(unit: Path) -> str:
    """The procfs options systemd mounts for the unit's ProtectProc= and ProcSubset=."""
    values: dict[str, str] = {}
    for line in unit.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in ("ProtectProc", "ProcSubset"):
            values[key.strip()] = value.strip()
    options = []
    if values.get("ProtectProc", "default") != "default":
        options.append(f"hidepid={values['ProtectProc']}")
    if values.get("ProcSubset", "all") == "pid":
        options.append("subset=pid")
    return ",".join(options) or "defaults"


def probe(options: str | None) -> dict:
    """Run PROBE on the host's /proc (None), or on a /proc mounted with `options`."""
    if options is None:
        cmd = [sys.executable, "-c", PROBE]
    else:
        cmd = [
            "unshare", "--pid", "--mount", "--fork", "--propagation", "private", "sh", "-c",
            f'mount -t proc -o {options} proc /proc && exec "$0" -c "$1"', sys.executable, PROBE,
        ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _can_mount_proc() -> bool:
    if shutil.which("unshare") is None:
        return False
    try:
        r = subprocess.run(
            ["unshare", "--pid", "--mount", "--fork", "--propagation", "private", "sh", "-c",
             "mount -t proc -o subset=pid proc /proc"],
            capture_output=True,
            timeout=20,
        )
    except OSError:
        return False
    return r.returncode == 0


needs_namespaces = pytest.mark.skipif(
    not _can_mount_proc(), reason="cannot mount a private /proc (needs root and unshare)"
)


def test_options_follow_the_directives(tmp_path: Path) -> None:
    unit = tmp_path / "x.service"
    unit.write_text("[Service]\nProtectProc=invisible\nProcSubset=pid\n")
    assert proc_mount_options(unit) == "hidepid=invisible,subset=pid"
    unit.write_text("[Service]\nProtectProc=invisible\n")
    assert proc_mount_options(unit) == "hidepid=invisible"


@needs_namespaces
def test_gpiozero_sees_under_the_unit_what_it_sees_outside() -> None:
    host = probe(None)
    assert host["files"], "gpiozero opened nothing under /proc: the probe is not probing"
    sandboxed = probe(proc_mount_options(UNIT))
    # Every /proc file gpiozero looked for is there exactly when it is there outside...
    assert sandboxed["files"] == host["files"]
    # ...so the board lookup ends the same way (the revision on a Pi, "no Pi" elsewhere).
    assert sandboxed["outcome"] == host["outcome"]


@needs_namespaces
def test_the_probe_catches_a_hidden_proc() -> None:
    """The same probe under ProcSubset=pid: /proc/cpuinfo is gone and the lookup fails on it."""
    host = probe(None)
    hidden = probe("hidepid=invisible,subset=pid")
    assert host["files"].get("/proc/cpuinfo") is True
    assert hidden["files"].get("/proc/cpuinfo") is False
    assert hidden["outcome"] != host["outcome"]


def test_factory_selection() -> None:
    """devices.sensors.gpio.make_factory: the config's name picks gpiozero's factory; an unusable or
    unknown one is a DeviceError naming it, never an ImportError out of the daemon."""
    from gpiozero.pins.mock import MockFactory

    mock = make_factory("mock")
    try:
        assert isinstance(mock, MockFactory)
    finally:
        mock.close()
    with pytest.raises(DeviceError, match="unknown pin factory 'rpigpio'"):
        make_factory("rpigpio")
    try:
        import lgpio  # noqa: F401
    except ImportError:
        with pytest.raises(DeviceError, match="lgpio pin factory unavailable"):
            make_factory("lgpio")
    else:  # on a Pi: the real factory, or (no gpiochip, no Pi) a DeviceError, never a crash
        try:
            make_factory("lgpio").close()
        except DeviceError as exc:
            assert "lgpio pin factory unavailable" in str(exc)
