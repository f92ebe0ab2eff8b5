"""sd_notify for systemd (READY=1, WATCHDOG=1, STATUS=...), with a clean fallback off-Pi.

systemd-python's `systemd.daemon.notify` is used when installed; otherwise the datagram is sent to
$NOTIFY_SOCKET directly (the protocol is one datagram of newline-separated KEY=VALUE), and with no
$NOTIFY_SOCKET (not under systemd) every call is a no-op.
"""

from __future__ import annotations

import os
import socket
from typing import Any

_NOT_LOADED: Any = object()
# systemd-python's `systemd.daemon` (optional, on the Pi image), imported by the first notify
# that has a $NOTIFY_SOCKET to send to, not at import (issue 31); None when not installed.
_sd_daemon: Any = _NOT_LOADED


def _systemd_daemon() -> Any:
    global _sd_daemon
    if _sd_daemon is _NOT_LOADED:
        try:
            from systemd import daemon  # type: ignore[import-not-found]
        except ImportError:  # pragma: no cover - depends on the machine
            daemon = None
        _sd_daemon = daemon
    return _sd_daemon


def notify(*lines: str) -> bool:
    """Send KEY=VALUE lines to systemd; False when there is nobody to tell."""
    message = "\n".join(lines)
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:  # what systemd.daemon.notify answers too, without importing it
        return False
    sd = _systemd_daemon()
    if sd is not None:
        return bool(sd.notify(message))
    if address.startswith("@"):  # abstract namespace
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(message.encode(), address)
    except OSError:
        return False
    return True


def watchdog_interval_s() -> float | None:
    """Half of WatchdogSec (systemd's own advice), or None when no watchdog is set for us."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return int(usec) / 2_000_000
    except ValueError:
        return None
