"""What needs a person now: the active alarms, the devices in fault and a round that cannot go
on by itself, each with what to do next. `tablectl status`, `selftest` and `devices list` show
it (controller/cli/attention.py) and `status` exits 4 while there is any (docs/operations.md,
"Exit codes of tablectl").

An alarm is active from when the machine raises it until the round it was raised in ends
(settled or voided); one raised between rounds, until the next round ends. The list is the
running daemon's: a restart clears it (the alarms stay in the logs and the error history), but
not a stuck round or a device fault, which are read from the machine and the devices each time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_ALARMS = 20  # the newest kept; a fault repeating every second must not grow status

# Between rounds in both games the table waits for people (controller/extensions/service_menu.py
# FREE_PHASES); from "no more bets" to the settlement a round is in progress.
BETWEEN_ROUNDS = ("closed", "betting", "out_of_service")
VOID = "tablectl dealer void reason='...'  (supervisor): void the round, every wager returned"


@dataclass
class Alarms:
    """The active alarms, oldest first; a repeat of the same text counts, not a new line."""

    active: list[dict[str, Any]] = field(default_factory=list)

    def raised(self, data: Mapping[str, Any], round_no: int | None, utc: str) -> int:
        """Count the alarm in; how many times it has now been raised (1: a new one)."""
        text = str(data.get("text", ""))
        for alarm in self.active:
            if alarm["text"] == text and alarm["round"] == round_no:
                alarm["times"] += 1
                alarm["last_utc"] = utc
                return int(alarm["times"])
        self.active.append({
            "text": text, "severity": str(data.get("severity", "technician")),
            "rule": data.get("rule"), "round": round_no, "utc": utc, "last_utc": utc,
            "times": 1,
        })  # fmt: skip
        del self.active[:-MAX_ALARMS]
        return 1

    def round_ended(self, number: int | None) -> None:
        """Round `number` was settled or voided: its alarms, and older ones, are history."""
        if not isinstance(number, int):
            return
        self.active = [a for a in self.active
                       if isinstance(a["round"], int) and a["round"] > number]


def attention(
    game: str,
    machine: Mapping[str, Any],
    devices: Mapping[str, Mapping[str, Any]],
    alarms: list[dict[str, Any]],
    out_of_service: str | None,
    starting: bool = False,
) -> dict[str, Any]:
    """{alarms, device_faults, stuck, healthy}: `healthy` when none of them is there. While the
    daemon is `starting` its devices are not up yet: not faults (status says STARTING)."""
    faults = [] if starting else [
        {"device": name, "state": d.get("state"), "error": d.get("last_error"),
         "next": f"check {name}'s cable and power; `tablectl devices list` shows it ready once"
                 " it answers again"}
        for name, d in devices.items() if not d.get("ok")
    ]  # fmt: skip
    stuck = None if out_of_service else stuck_round(game, machine, [f["device"] for f in faults])
    return {
        "alarms": list(alarms),
        "device_faults": faults,
        "stuck": stuck,
        "healthy": not (alarms or faults or stuck),
    }


def stuck_round(game: str, machine: Mapping[str, Any], faulty: list[str]) -> dict[str, Any] | None:
    """A round in progress that cannot go on by itself: it waits for a device that is in fault
    (Pai Gow's shaker while shaking, UTH's shuffler while dealing) or the machine holds that
    device's fault. None when there is none (a device in fault the round no longer needs is
    a device fault, not a stuck round)."""
    phase = machine.get("state")
    if phase is None or phase in BETWEEN_ROUNDS:
        return None
    number = machine.get("round")
    if game == "paigow" and phase in ("shaking", "off_draw"):
        fault = machine.get("fault")
        if fault is None and "shaker" not in faulty:
            return None
        why = f"the shaker failed: {fault}" if fault else "the shaker is in fault"
        return {"round": number, "state": phase, "why": why, "next": [
            *(["reconnect the shaker (tablectl devices list: shaker ready)"]
              if "shaker" in faulty else []),
            "tablectl dealer shake  (supervisor): shake again",
            VOID,
        ]}  # fmt: skip
    if game == "uth" and phase == "dealing" and "shuffler" in faulty:
        return {"round": number, "state": phase, "why": "the shuffler is in fault mid-deal",
                "next": ["reconnect the shuffler (tablectl devices list: shuffler ready)",
                         VOID]}  # fmt: skip
    return None
