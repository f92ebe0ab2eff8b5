"""The lamp walk: every jackpot lamp lit alone in turn, each pin read back, the lamps restored."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from devices.errors import DeviceError
from devices.sensors.gpio import GpioSensors

STEP_S = (0.05, 5.0)  # how long each lamp stays lit: bounds of the technician's choice


async def lamp_walk(
    sensors: GpioSensors,
    step_s: float,
    *,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> dict[str, Any]:
    """Light lamp 1 alone, then lamp 2 alone, ...; then put every lamp as the game wants it.

    The walk holds the lamps for its length (`GpioSensors.holding_lamps`): a wager placed
    meanwhile changes the game's lamp, which is driven when the walk lets go, never under it,
    so what a step reads back is the wiring alone. `ok` when each step read back exactly its own
    lamp lit and every steady lamp ended as the game wants it.
    """
    if not STEP_S[0] <= step_s <= STEP_S[1]:
        raise DeviceError(f"lamp walk: step {step_s} s outside {STEP_S[0]}..{STEP_S[1]}")
    if not sensors.lamps:
        raise DeviceError(f"{sensors.name}: no lamps wired ([devices.gpio] lamp)")
    steps: list[dict[str, Any]] = []
    held_before = sensors.counters["lamp_writes_held"]
    async with sensors.holding_lamps():
        boxes = sorted(sensors.lamps)
        for box in boxes:
            sensors.drive_lamp(box, "idle")
        for box in boxes:
            sensors.drive_lamp(box, "bet")  # steadily on
            pins = sensors.lamp_pins()
            lit = [b for b, p in pins.items() if p["lit"]]
            steps.append({"box": box, "pin": pins[box]["pin"], "lit": lit, "ok": lit == [box]})
            await sleep(step_s)
            sensors.drive_lamp(box, "idle")
    # Steady lamps read back as the game wants them; a blinking one cannot be read at one look.
    pins = sensors.lamp_pins()
    wrong = [b for b, state in sensors.lamps.items()
             if state in STEADY and pins[b]["lit"] != STEADY[state]]
    return {
        "ok": all(s["ok"] for s in steps) and not wrong,
        "steps": steps,
        "restored": {str(b): state for b, state in sorted(sensors.lamps.items())},
        "restored_ok": not wrong,
        # The game's lamp writes that came during the walk: held, then driven after it.
        "held_writes": sensors.counters["lamp_writes_held"] - held_before,
    }


STEADY = {"idle": False, "bet": True}  # lamp states whose pin level is fixed
