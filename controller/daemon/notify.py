"""sd_notify for systemd (READY=1, WATCHDOG=1, STATUS=...), with a clean fallback off-Pi.

systemd-python's `systemd.daemon.notify` is used when installed; otherwise the datagram is sent to
$NOTIFY_SOCKET directly (the protocol is one datagram of newline-separated KEY=VALUE), and with no
$NOTIFY_SOCKET (not under systemd) every call is a no-op.
"""

from __future__ import annotations

import os
import socket

try:  # systemd-python: optional, present on the Pi image
    from systemd import daemon as _sd_daemon  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the machine
    _sd_daemon = None


def notify(*lines: str) -> bool:
    """Send KEY=VALUE lines to systemd; False when there is nobody to tell."""
    message = "\n".join(lines)
    if _sd_daemon is not None:
        return bool(_sd_daemon.notify(message))
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
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
