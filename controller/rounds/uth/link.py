"""The jackpot's link and equipment: the link state and the meter (11.11, issue 6). Head
office's pool and awards, the supervisor's switch and the quiet link's tick are jackpot.py's
steps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.rounds import fields
from controller.rounds.base import Effect, Now
from controller.rounds.uth import effects as fx
from controller.rounds.uth.state import UthConfig, UthState, replace

Result = tuple[UthState, list[Effect]]
Step = Callable[[UthConfig, UthState, Any, Now], Result]


# -- jackpot link (11.11, issue 6) -------------------------------------------------------------
def link(up: bool) -> Step:
    """link.up / link.down: the head-office link's state, for the jackpot's status (11.11)."""

    def step(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
        jp = {**state.jackpot, "link_up": up}
        return replace(state, jackpot=jp), [fx.log(f"head-office link {'up' if up else 'down'}")]

    return step


def meter_fault(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """meter.fault {reason}: the progressive meter (2.4.3) is gone (unplugged, no port): jackpot
    equipment failure (11.11), the same decision as a failed meter command. The jackpot goes
    offline at once (no jackpot wager is taken while the players cannot see the pool) until
    meter.ready, and an inspector is notified (docs/rounds-uth.md, "What a regulator should
    confirm")."""
    return _meter_failed(state, fields.reason(data, "meter fault"), "progressive meter")


def _meter_failed(state: UthState, reason: str, what: str) -> Result:
    jp = {**state.jackpot, "meter_failed": reason}
    text = f"{what}: {reason}; jackpot offline (11.11), notify an inspector"
    return replace(state, jackpot=jp), [fx.alarm("technician", text, "11.11")]


def meter_command_failed(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """meter.command_failed {command, reason}: the meter did not take what it must show (2.4.3):
    jackpot equipment failure (11.11). The jackpot goes offline at once (step's refresh raises
    the offline alarm and relamps) until meter.ready; the inspector is notified."""
    reason = fields.reason(data, "meter command failed")
    return _meter_failed(state, reason, "progressive meter command failed")


def meter_ready(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """meter.ready {}: the meter is back and shows the table's current view again; a jackpot
    taken offline by a meter that went or a failed meter command comes back with it."""
    effects = [fx.log("progressive meter back (11.11 malfunction over)")]
    if "meter_failed" not in state.jackpot:
        return state, effects
    jp = {k: v for k, v in state.jackpot.items() if k != "meter_failed"}
    return replace(state, jackpot=jp), effects
