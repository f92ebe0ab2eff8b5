"""The dealer keypad during the round: misdeals and voids (11), cards, decisions, streets,
the dealer's hand."""

from __future__ import annotations

from typing import Any

from controller.errors import InputError
from controller.rounds import fields
from controller.rounds.base import Effect, Now
from controller.rounds.uth import effects as fx
from controller.rounds.uth import play as rnd
from controller.rounds.uth.state import (
    DEALING,
    UthConfig,
    UthState,
)

Result = tuple[UthState, list[Effect]]


# -- dealer keypad during the round --------------------------------------------------------------
def misdeal(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.misdeal {reason}: cards_revealed (11.2), dealer_revealed (11.4), wrong_count (11.1).
    During the deal always; before the flop only while no Play wager was made (11.4.1/11.4.2)."""
    reason = fields.text(data, "reason", "wrong_count")
    rule = {"cards_revealed": "11.2", "dealer_revealed": "11.4.1"}.get(reason, "11.1")
    if not state.in_round:
        raise InputError("no round in progress")
    if state.phase not in (DEALING, rnd.PREFLOP):
        raise InputError(f"no misdeal once the flop is revealed ({state.phase}); use dealer.void")
    if state.phase == rnd.PREFLOP and rnd.any_play(state):
        raise InputError("a Play wager has been made: play continues as normal (11.4.2)")
    why = f"misdeal: {reason}"
    return rnd.void(config, state, [fx.alarm("technician", why, rule)], why, rule)


def void(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.void {reason, rule?}: a supervisor voids the round (11.6.1, 13.9)."""
    if not state.in_round:
        raise InputError("no round in progress")
    reason = fields.text(data, "reason", "voided by the supervisor")
    rule = fields.text(data, "rule", "13.9")
    return rnd.void(config, state, [fx.alarm("technician", reason, rule)], reason, rule)


def card(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return rnd.on_card(config, state, data, now)


def dealt(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return rnd.on_dealt(config, state)


def decision(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return rnd.on_decision(config, state, data)


def flop(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return rnd.on_street(config, state, "dealer.flop")


def turn_river(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return rnd.on_street(config, state, "dealer.turn_river")


def dealer_hand(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return rnd.on_dealer_hand(config, state)


