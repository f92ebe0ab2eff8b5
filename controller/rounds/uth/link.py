"""The jackpot's link and equipment: head office's pool and awards, the link state, the
supervisor's switch, the meter (11.11, issue 6)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.rounds import fields
from controller.rounds.base import Effect, Now
from controller.rounds.uth import effects as fx
from controller.rounds.uth import jackpot
from controller.rounds.uth.state import UthConfig, UthState, replace

Handler = Callable[[UthConfig, UthState, Any, Now], "Result"]
Result = tuple[UthState, list[Effect]]


# -- jackpot link (11.11, issue 6) -------------------------------------------------------------
def ho_award(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return jackpot.on_award(config, state, data)


def jackpot_verify(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return jackpot.verify(config, state, data)


def link(up: bool) -> Handler:
    def handler(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
        jp = {**state.jackpot, "link_up": up}
        return replace(state, jackpot=jp), [fx.log(f"head-office link {'up' if up else 'down'}")]

    return handler


def switch(enabled: bool) -> Handler:
    def handler(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
        return jackpot.on_switch(config, state, enabled)

    return handler


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


def tick(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    # step() refreshes the jackpot's link status after every event; a tick saying head office
    # went quiet first marks the pool's value stale (11.11).
    return jackpot.on_quiet(config, state, data)


