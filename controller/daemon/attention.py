"""What needs a person now: the active alarms, the devices in fault and a round that cannot go
on by itself, each with what to do next. `tablectl status`, `selftest` and `devices list` show
it (controller/cli/attention.py) and `status` exits 4 while there is any (docs/operations.md,
"Exit codes of tablectl").

An alarm is active from when the machine raises it until it is cleared, whichever comes first:
- its round ends (settled or voided); one raised between rounds, when the next round ends;
- its cause is gone: an alarm a device's event raised while that device was out of service
  clears itself once the device is back in service (`clear_recovered`), unless it is a
  surveillance alarm, which a supervisor must see;
- a person acknowledges it (`tablectl alarms ack`): a technician alarm by the technician or
  supervisor group, a surveillance alarm by the supervisor group only; logged with who.
The cleared ones are kept (the newest MAX_ALARMS) with how, for `tablectl alarms`. The list is
the running daemon's: a restart clears it (the alarms stay in the logs and the error history),
but not a stuck round or a device fault, which are read from the machine and the devices each
time.
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


SURVEILLANCE = "surveillance"  # the machines' severity that only a supervisor may acknowledge


@dataclass
class Alarms:
    """The active alarms, oldest first; a repeat of the same text counts, not a new line; and
    the cleared ones, newest last, each with `cleared` saying how."""

    active: list[dict[str, Any]] = field(default_factory=list)
    cleared: list[dict[str, Any]] = field(default_factory=list)
    last_id: int = 0

    def raised(self, data: Mapping[str, Any], round_no: int | None, utc: str,
               device: str | None = None, device_ok: bool = True) -> int:
        """Count the alarm in; how many times it has now been raised (1: a new one). `device`:
        the table's device whose event raised it; `device_ok`: whether it was in service then
        (an alarm about a device out of service clears itself once it is back)."""
        text = str(data.get("text", ""))
        for alarm in self.active:
            if alarm["text"] == text and alarm["round"] == round_no:
                alarm["times"] += 1
                alarm["last_utc"] = utc
                return int(alarm["times"])
        self.last_id += 1
        severity = str(data.get("severity", "technician"))
        recovers = device is not None and not device_ok and severity != SURVEILLANCE
        self.active.append({
            "id": self.last_id, "text": text, "severity": severity, "rule": data.get("rule"),
            "round": round_no, "device": device, "utc": utc, "last_utc": utc, "times": 1,
            "clears": clear_text(self.last_id, severity, device if recovers else None),
            "clears_when_back": device if recovers else None,
        })  # fmt: skip
        self._keep_newest()
        return 1

    def round_ended(self, number: int | None) -> None:
        """Round `number` was settled or voided: its alarms, and older ones, are history."""
        if not isinstance(number, int):
            return
        self._clear([a for a in self.active
                     if not (isinstance(a["round"], int) and a["round"] > number)],
                    f"round {number} ended")

    def clear_recovered(self, devices: Mapping[str, Mapping[str, Any]]) -> None:
        """The alarms whose device was out of service and is back in service now."""
        self._clear([a for a in self.active if a.get("clears_when_back")
                     and (devices.get(a["clears_when_back"]) or {}).get("ok")],
                    "its device is back in service")

    def acknowledge(self, ids: list[int] | None, who: str, supervisor: bool,
                    note: str = "") -> list[dict[str, Any]]:
        """Acknowledge the active alarms `ids` (None: every one this person may); the ones
        acknowledged. A surveillance alarm needs the supervisor group (Refused-worthy: the
        caller names it); an id that is not active raises KeyError naming it."""
        active = {a["id"]: a for a in self.active}
        if ids is None:
            chosen = [a for a in self.active if supervisor or a["severity"] != SURVEILLANCE]
        else:
            missing = [i for i in ids if i not in active]
            if missing:
                raise KeyError(missing[0])
            chosen = [active[i] for i in ids]
            if not supervisor and any(a["severity"] == SURVEILLANCE for a in chosen):
                raise PermissionError(next(a["id"] for a in chosen
                                           if a["severity"] == SURVEILLANCE))
        self._clear(chosen, f"acknowledged by {who}" + (f": {note}" if note else ""))
        return chosen

    def _clear(self, alarms: list[dict[str, Any]], how: str) -> None:
        if not alarms:
            return
        gone = {a["id"] for a in alarms}
        self.active = [a for a in self.active if a["id"] not in gone]
        self.cleared += [{**a, "cleared": how} for a in alarms]
        self._keep_newest()

    def _keep_newest(self) -> None:
        del self.active[:-MAX_ALARMS]
        del self.cleared[:-MAX_ALARMS]


def clear_text(number: int, severity: str, device: str | None) -> str:
    """How a person clears alarm `number` (status prints it under the alarm)."""
    if severity == SURVEILLANCE:
        return f"a supervisor acknowledges it: tablectl alarms ack {number} --note '...'"
    back = f"clears itself once {device} is back in service; or " if device else ""
    return f"{back}tablectl alarms ack {number} once seen to"


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
