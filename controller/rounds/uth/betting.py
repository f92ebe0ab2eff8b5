"""Opening and closing the table, wagers, jackpot bet sensors and the deal (5, 7.1)."""

from __future__ import annotations

from typing import Any

from controller.games.uth.settlement import Spot
from controller.games.uth.wagers import BoxWagers
from controller.rounds import fields
from controller.rounds.base import Effect, Now
from controller.rounds.uth import carded, jackpot
from controller.rounds.uth import effects as fx
from controller.rounds.uth import play as rnd
from controller.rounds.uth.state import (
    BETTING,
    DEALING,
    SHUFFLING,
    UthConfig,
    UthState,
    replace,
)
from controller.rounds.uth.status import resume
from shared.errors import InputError

Result = tuple[UthState, list[Effect]]
CLOSE_BETWEEN_ROUNDS = "close the table between rounds, with no wagers on the layout"


# -- table and betting -------------------------------------------------------------------------
def open_table(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    # Its route leads to betting; resume() shows what the closed table left.
    return state, [fx.log("table open"), *resume(config, state)]


def close_table(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    if state.wagers:
        raise InputError(CLOSE_BETWEEN_ROUNDS)
    return state, [fx.log("table closed")]  # its route leads to closed


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
    # 11.16.1, 13.1, 13.3: the box's Player Card, and the amount at risk reserved against it.
    state, card_fx = carded.on_wager(config, state, data, box,
                                     (wagers.ante, wagers.blind, wagers.trips))
    new = {**state.wagers, str(box): [wagers.ante, wagers.blind, wagers.trips]}
    # Cents marked `c` (as Pai Gow's wager line): a person's terminal shows them in dollars.
    text = (f"box {box}: ante {wagers.ante} c, blind {wagers.blind} c,"
            f" trips {wagers.trips} c{carded.card_of(state, str(box))}")
    return replace(state, wagers=new), [*card_fx, fx.log(text)]


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
    box = fields.box(data, config.boxes)
    state, effects = jackpot.bet_on(config, state, box, now)
    if not jackpot.live(config, state, now):  # no jackpot wager (11.11): nothing to reserve
        return state, effects
    state, card_fx = carded.jackpot_chip(config, state, box)  # 15.2.4 with 13.3
    return state, [*effects, *card_fx]


def deal(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.deal: no more bets (7.1); the shuffler dispenses the round's cards."""
    if state.phase == DEALING and not state.in_round:
        if state.dealt_by:
            return state, [fx.log(f"deal asked again: dealing from the {state.dealt_by}")]
        count = state.dispense
        return state, [fx.log("deal asked again"), fx.dispense(count, state.deck)]
    if state.phase != BETTING:
        raise InputError(f"dealer.deal while {state.phase}")
    if not state.wagers:
        raise InputError("no box has an Ante and a Blind (5.3, 7.2.4)")
    carded.deal_ready(config, state, jackpot.live(config, state, now))
    if not rnd.deck_usable(state):
        why = "suspect, to be checked (11.7.3)" if state.deck in state.suspect else "not shuffled"
        raise InputError(f"deck {state.deck} is {why}")
    count = rnd.needed(state)
    if state.dealt_by:  # 12.2.3: the dealer enters each card as dealt (dealer.card)
        state = replace(state, dispense=0)  # its route leads to dealing
        return state, [fx.log(f"no more bets: deal {count} cards from the {state.dealt_by}"
                              " (12.2.3)")]
    state = replace(state, dispense=count)
    return state, [fx.log(f"no more bets: dealing {count} cards"), fx.dispense(count, state.deck)]


DEAL_METHODS = ("shuffler", "shoe", "hand")


def switch_method(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.deal_method {method}: a supervisor carries on with a card shoe or the dealer's
    hand after a shuffler malfunction, or goes back to the shuffler (12.2.3). Between rounds.
    With a shoe or by hand the deal mapping is 7.3 and the dealer enters every card."""
    method = fields.text(data, "method")
    if method not in DEAL_METHODS:
        raise InputError(f"method {method!r}: one of {list(DEAL_METHODS)}")
    now_by = state.dealt_by or "shuffler"
    if method == now_by:
        raise InputError(f"already dealing by {method}")
    if method == "shuffler":
        state = replace(state, dealt_by=None, deck_status=SHUFFLING)
        return state, [fx.log("back to the shuffler (12.2.3): the deck is shuffled first"),
                       fx.shuffle(state.deck)]
    state = replace(state, dealt_by=method)
    return state, [fx.alarm("technician", f"dealing from the {method} from round {state.round}"
                            " on, by the supervisor's decision (12.2.3)", "12.2.3")]


def dealer_card(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.card {card}: the next card dealt from a shoe or by hand (12.2.3), in deal order."""
    if not state.dealt_by:
        raise InputError("the shuffler deals at this table: dealer.card is for a shoe or hand"
                         " dealing (12.2.3)")
    return rnd.on_card(config, state, {"card": data.get("card"), "index": len(state.cards)}, now)


def jackpot_other(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.jackpot_other {box, player}: the Casino Supervisor allows `player` a jackpot wager
    on another player's box whose player does not play the jackpot (15.2.1.1); one hand per
    player (5.6). The box's jackpot sensor carries it; the round record names its owner."""
    box = fields.box(data, config.boxes)
    player = fields.text(data, "player")
    if str(box) not in state.wagers:
        raise InputError(f"box {box} has no hand this round: the jackpot wager needs one (15.2.1)")
    held = [b for b, p in state.jackpot_owners.items() if p == player and b != str(box)]
    if held:
        raise InputError(f"{player} already holds the jackpot wager on box {held[0]} (5.6)")
    state, card_fx = carded.on_jackpot_other(config, state, data, box)
    owners = {**state.jackpot_owners, str(box): player}
    return replace(state, jackpot_owners=owners), [*card_fx,
        fx.log(f"box {box}: jackpot wager of {player}{carded.card_of(state, f'j{box}')},"
               " allowed by the Casino Supervisor (15.2.1.1)")
    ]

