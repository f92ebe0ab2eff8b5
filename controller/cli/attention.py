"""What needs a person, as `tablectl status`, `selftest` and `devices list` all print it (from
the daemon's `attention`: controller/daemon/attention.py), a device's state and counters as
`status` and `devices list` both print them, and the exit codes of `status`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# `tablectl status` exit codes (docs/operations.md "Exit codes of tablectl"): `tablectl status
# && ...` in a script goes on only when the table is in service and nothing needs a person.
EXIT_HEALTHY = 0
EXIT_OUT_OF_SERVICE = 1
EXIT_NOT_RUNNING = 3
EXIT_NEEDS_ATTENTION = 4  # in service, with an active alarm, a device in fault or a stuck round
EXIT_STARTING = 5  # the daemon answers but its devices and journal are not up yet: not healthy

# Device counters a technician would not know by name: what each one counts.
COUNTER_MEANING: dict[str, str] = {
    "bytes_skipped": "bytes of line noise between messages: a loose cable or a wrong baud rate"
                     " if it keeps growing",
    "frames_bad": "messages that failed their checksum or length",
    "truncated": "messages cut off when the port closed",
    "events_dropped": "device events that arrived after the daemon stopped listening",
}


def attention_lines(att: Mapping[str, Any] | None) -> list[str]:
    """The attention block: nothing when the table needs nobody."""
    if not att or att.get("healthy", True):
        return []
    lines = ["NEEDS ATTENTION:"]
    stuck = att.get("stuck")
    if stuck:
        lines.append(f"  round {stuck.get('round')} is stuck in {stuck.get('state')}:"
                     f" {stuck.get('why')}; next:")
        lines += [f"    - {step}" for step in stuck.get("next") or []]
    for fault in att.get("device_faults") or []:
        error = f" ({fault['error']})" if fault.get("error") else ""
        lines.append(f"  device {fault['device']} {fault.get('state')}{error}: {fault.get('next')}")
    for alarm in att.get("alarms") or []:
        lines.append("  " + alarm_line(alarm))
        if alarm.get("clears"):
            lines.append(f"      to clear: {alarm['clears']}")
    if att.get("alarms"):
        lines.append("  (an alarm also clears when its round ends; tablectl alarms lists them,"
                     " tablectl logs --level warning)")
    return lines


def alarm_line(alarm: Mapping[str, Any]) -> str:
    """`alarm 3 (round 1, <utc>) [12.1]: <text> (2 times, last <utc>)`."""
    times = f" ({alarm['times']} times, last {alarm.get('last_utc')})" \
        if alarm.get("times", 1) > 1 else ""
    where = f"round {alarm['round']}, " if alarm.get("round") is not None else ""
    rule = f" [{alarm['rule']}]" if alarm.get("rule") else ""
    number = f" {alarm['id']}" if alarm.get("id") is not None else ""
    return f"alarm{number} ({where}{alarm.get('utc')}){rule}: {alarm.get('text')}{times}"


def state_text(d: Mapping[str, Any]) -> str:
    """A device's state as `tablectl status` and `tablectl devices list` both print it, from
    the same `Device.status()` answer: `disconnected FAULT`, `ready        ok   `."""
    return f"{d['state']:<12} {'ok' if d['ok'] else 'FAULT':<5}"


def counters_text(counters: Mapping[str, int]) -> str:
    """A device's non-zero counters, each one a technician would not know by name explained."""
    shown = []
    for key, value in sorted(counters.items()):
        if not value:
            continue
        meaning = COUNTER_MEANING.get(key)
        shown.append(f"{key}={value}" + (f" [{meaning}]" if meaning else ""))
    return ", ".join(shown) or "-"
