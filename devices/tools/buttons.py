"""The guided button test: one input at a time, "press the chung button on box 3", then wait.

While it waits, the sensors' events go to the test, not to the round machine
(`Device.diverted`): a button pressed for the test is never played. The test watches the inputs'
debounced levels (what the game would act on), so a chattering or stuck input shows as such.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from devices.base import DeviceEvent
from devices.errors import DeviceError
from devices.sensors.gpio import GpioSensors

TIMEOUT_S = (1.0, 120.0)  # how long one prompt waits: bounds of the technician's choice
POLL_S = 0.02
_GROUPS = {
    "chung": "press the chung button on box {}",
    "off": "press the OFF button on box {}",
    "bet_sensor": "cover the bet sensor on box {}",
}


def prompt(name: str) -> str:
    """What the technician is asked to do for an input, by its name (`chung3`, `keypad.deal`)."""
    if name == "table_closed":
        return "turn the table key switch to closed"
    if name.startswith("keypad."):
        return f"press the dealer's {name.removeprefix('keypad.')} button"
    for group, text in _GROUPS.items():
        box = name.removeprefix(group)
        if box != name and box.isdigit():
            return text.format(int(box))
    raise DeviceError(f"no prompt for input {name!r}")


def prompts(sensors: GpioSensors) -> list[dict[str, Any]]:
    """Every wired input in the order the test walks them: name, pin, what to do."""
    return [
        {"input": name, "pin": info["pin"], "prompt": prompt(name)}
        for name, info in sensors.raw_inputs().items()
    ]


async def wait_for_press(
    sensors: GpioSensors,
    name: str,
    timeout_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Wait until input `name` goes active and then inactive again (pressed and let go).

    `ok` when both happened within `timeout_s`; `seen` names every other input that went active
    meanwhile (a miswired button shows up there), `events` what the sensors reported.
    """
    if not TIMEOUT_S[0] <= timeout_s <= TIMEOUT_S[1]:
        lo, hi = TIMEOUT_S
        raise DeviceError(f"button test: timeout {timeout_s} s outside {lo}..{hi}")
    levels = sensors.raw_inputs()
    if name not in levels:
        known = ", ".join(levels) or "none"
        raise DeviceError(f"{sensors.name}: no input {name!r} (inputs: {known})")
    result: dict[str, Any] = {
        "input": name,
        "pin": levels[name]["pin"],
        "prompt": prompt(name),
        "pressed": False,
        "released": False,
        "seen": [],
        "events": [],
    }
    if levels[name]["active"]:
        result.update(ok=False, error=f"{name} is already active: release it and start again")
        return result
    events: list[DeviceEvent] = []
    start = clock()
    with sensors.diverted(events.append):
        while clock() - start < timeout_s and not result["released"]:
            await asyncio.sleep(POLL_S)
            now = sensors.raw_inputs()
            for other, info in now.items():
                if other != name and info["active"] and other not in result["seen"]:
                    result["seen"].append(other)
            if now[name]["active"]:
                result["pressed"] = True
            elif result["pressed"]:
                result["released"] = True
        await asyncio.sleep(POLL_S)  # events of the last edge, still on their way to the loop
    result["events"] = [{"kind": e.kind, "data": dict(e.data)} for e in events]
    result["problem"] = sensors.problems.get(name)
    result["after_s"] = round(clock() - start, 3)
    result["ok"] = result["pressed"] and result["released"] and result["problem"] is None
    if result["problem"] is not None:
        result["error"] = f"{name} is {result['problem']}"
    elif not result["pressed"]:
        result["error"] = f"not pressed within {timeout_s:g} s"
    elif not result["released"]:
        result["error"] = f"pressed but not let go within {timeout_s:g} s"
    return result
