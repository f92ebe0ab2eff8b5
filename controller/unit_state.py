"""What systemd says about tablectld's unit when its control socket is not there: a unit that
hit its start limit stays down until someone clears it, and a person told only "not running"
restarts it and gets `start-limit-hit` again. The CLI adds systemd's reason and the way out to
its "not running" line (issue 28 item 7). Only for the installed table's socket path: a daemon
run by hand elsewhere is not the unit's business."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

UNIT = "tablectld.service"
UNIT_SOCKET = Path("/run/tablectl/control.sock")  # RuntimeDirectory=tablectl
SYSTEMCTL_TIMEOUT_S = 3.0


def unit_properties(unit: str = UNIT) -> dict[str, str]:
    """`systemctl show` of the unit, {} where there is no systemd to ask."""
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        return {}
    try:
        out = subprocess.run(
            [systemctl, "show", unit,
             "--property=ActiveState,Result,StartLimitBurst,StartLimitIntervalUSec"],
            capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if out.returncode != 0:
        return {}
    return dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)


def not_running_hint(socket_path: Path) -> str:
    """"" or "; <what systemd says, and what to type>" for the CLI's not-running line."""
    if socket_path != UNIT_SOCKET:
        return ""
    props = unit_properties()
    if props.get("Result") == "start-limit-hit":
        burst = props.get("StartLimitBurst", "?")
        within = props.get("StartLimitIntervalUSec", "?")
        return (f"; systemd stopped starting it: {burst} starts within {within} "
                "(StartLimitBurst=, every start counts, by hand too). Clear it: "
                "sudo systemctl reset-failed tablectld && sudo systemctl start tablectld")
    if props.get("ActiveState") == "failed":
        return (f"; its unit failed ({props.get('Result', '?')}): "
                "journalctl -u tablectld -n 50 says why; then sudo systemctl start tablectld")
    return ""
