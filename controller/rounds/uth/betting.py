"""Opening and closing the table, wagers, jackpot bet sensors and the deal (5, 7.1)."""

from __future__ import annotations

from typing import Any

from controller.errors import InputError
from controller.games.uth.settlement import Spot
from controller.games.uth.wagers import BoxWagers
from controller.rounds import fields
from controller.rounds.base import Effect, Now
from controller.rounds.uth import effects as fx
from controller.rounds.uth import jackpot
from controller.rounds.uth import play as rnd
from controller.rounds.uth.state import (
    BETTING,
    CLOSED,
    DEALING,
    UthConfig,
    UthState,
    replace,
)
from controller.rounds.uth.status import resume

Result = tuple[UthState, list[Effect]]
CLOSE_BETWEEN_ROUNDS = "close the table between rounds, with no wagers on the layout"


# -- table and betting -------------------------------------------------------------------------
def open_table(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return replace(state, phase=BETTING), [fx.log("table open"), *resume(config, state)]


def close_table(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    if state.wagers:
        raise InputError(CLOSE_BETWEEN_ROUNDS)
    return replace(state, phase=CLOSED), [fx.log("table closed")]


def wager(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.wager {box, ante, blind=ante, trips=0}: place or change a box's wagers (5.3, 5.4)."""
    box = fields.box(data, config.boxes)
    ante = fields.cents(data, "ante")
    wagers = BoxWagers(
        ante, fields.cents(data, "blind", ante), fields.cents(data, "trips", 0)
    )
    rnd.engine_round(state).place(box, wagers)  # the engine refuses after the first card (5.5)
    _chip_unit(config, Spot.ANTE, wagers.ante)
    if wagers.trips:
        _chip_unit(config, Spot.TRIPS, wagers.trips)
    new = {**state.wagers, str(box): [wagers.ante, wagers.blind, wagers.trips]}
    text = f"box {box}: ante {wagers.ante} blind {wagers.blind} trips {wagers.trips}"
    return replace(state, wagers=new), [fx.log(text)]


def _chip_unit(config: UthConfig, spot: Spot, amount: int) -> None:
    """6.1: above the table minimum a wager is made in the sign's unit, when it states one."""
    unit = config.chip_unit
    minimum = config.rules.limits_for(spot).minimum
    if unit is not None and amount > minimum and (amount - minimum) % unit:
        raise InputError(f"{spot.value} {amount}: above the minimum {minimum} wagers go in units"
                         f" of {unit} (6.1)")


def withdraw(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    box = fields.box(data, config.boxes)
    rnd.engine_round(state).withdraw(box)  # 5.5
    if str(box) not in state.wagers:
        raise InputError(f"box {box} has no wager")
    new = {b: w for b, w in state.wagers.items() if b != str(box)}
    return replace(state, wagers=new), [fx.log(f"box {box}: wagers withdrawn")]


def bet_on(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return jackpot.bet_on(config, state, fields.box(data, config.boxes), now)


def bet_off(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return jackpot.bet_off(config, state, fields.box(data, config.boxes))


def deal(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.deal: no more bets (7.1); the shuffler dispenses the round's cards."""
    if state.phase == DEALING and not state.in_round:
        count = state.dispense
        return state, [fx.log("deal asked again"), fx.dispense(count, state.deck)]
    if state.phase != BETTING:
        raise InputError(f"dealer.deal while {state.phase}")
    if not state.wagers:
        raise InputError("no box has an Ante and a Blind (5.3, 7.2.4)")
    if not rnd.deck_usable(state):
        why = "suspect, to be checked (11.7.3)" if state.deck in state.suspect else "not shuffled"
        raise InputError(f"deck {state.deck} is {why}")
    count = rnd.needed(state)
    state = replace(state, phase=DEALING, dispense=count)
    return state, [fx.log(f"no more bets: dealing {count} cards"), fx.dispense(count, state.deck)]


