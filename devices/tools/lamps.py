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
    """Light lamp 1 alone, then lamp 2 alone, ...; then put every lamp back as it was.

    `ok` when each step read back exactly its own lamp lit and the lamps ended as they began.
    """
    if not STEP_S[0] <= step_s <= STEP_S[1]:
        raise DeviceError(f"lamp walk: step {step_s} s outside {STEP_S[0]}..{STEP_S[1]}")
    before = dict(sensors.lamps)
    if not before:
        raise DeviceError(f"{sensors.name}: no lamps wired ([devices.gpio] lamp)")
    steps: list[dict[str, Any]] = []
    try:
        await sensors.set_lamp(None, "idle")
        for box in sorted(before):
            await sensors.set_lamp(box, "bet")  # steadily on
            pins = sensors.lamp_pins()
            lit = [b for b, p in pins.items() if p["lit"]]
            steps.append({"box": box, "pin": pins[box]["pin"], "lit": lit, "ok": lit == [box]})
            await sleep(step_s)
            await sensors.set_lamp(box, "idle")
    finally:
        for box, state in sorted(before.items()):
            await sensors.set_lamp(box, state)
    after = dict(sensors.lamps)
    return {
        "ok": all(s["ok"] for s in steps) and after == before,
        "steps": steps,
        "restored": {str(b): state for b, state in sorted(after.items())},
        "restored_ok": after == before,
    }
