"""No more bets, the dice and the announcement (NSW 8, NZ 9, ACT 4 and 13.1)."""

from __future__ import annotations

from dataclasses import replace

from controller.games.paigow.cuts import cut_spec
from controller.games.paigow.delivery import describe
from controller.games.paigow.dice import Shake, check_shake, first_box_for_shake
from controller.games.paigow.profiles import Profile
from controller.rounds import fields
from controller.rounds.base import Now
from controller.rounds.paigow.bank import settle_bank
from controller.rounds.paigow.carded import card_ready
from controller.rounds.paigow.core import (
    FIRST_BOX_RULE,
    RESHAKE_RULE,
    SHAKE,
    Data,
    Refused,
    Result,
    alarm,
    bank_of,
    delivery_of,
    delivery_rule,
    house_way_by_dealer,
    log,
    return_wagers,
    show,
)
from controller.rounds.paigow.cut import check_choices, round_cut, select_cut_request
from controller.rounds.paigow.input import options_json, parse_shake, shake_json
from controller.rounds.paigow.state import PaiGowConfig, PaiGowState, Phase
from controller.rounds.paigow.table import off_drawn
from controller.rounds.paigow.wagers import layout_returned, wager_problem
from shared.errors import InputError


def no_more_bets(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    card_ready(state)  # NSW 9.1: every card confirmed before play begins
    state, effects = settle_bank(config, state, fields.cents(data, "make_up", 0))
    bank = bank_of(config, state)
    state, returned = return_wagers(
        state,
        lambda w: wager_problem(config, state, bank, w, []) is None,
        "not valid under the round's bank",
    )
    effects += returned
    state, returned = layout_returned(config, state, bank)
    effects += returned
    state, dropped = check_choices(config, state, bank)
    effects += dropped
    state, shown = show(state, "announce", "NO MORE BETS")
    effects += shown
    for box, player in house_way_by_dealer(config, state).items():
        effects.append(log(f"box {box}: {player} controls another box; the dealer sets box"
                           f" {box}'s tiles the house way (NZ 7.2)"))
    if config.profile is Profile.NZ and state.cut_choice is None:
        return replace(state, phase=Phase.CUTTING), [*effects, select_cut_request(config)]
    return replace(state, phase=Phase.SHAKING), [*effects, SHAKE]


def dealer_shake(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    return replace(state, fault=None), [SHAKE, log("shake again (dealer)")]


def dice_not_flat(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    """dice.not_flat, or a dice.result with a die not flat: shake again (the dice are read
    again, the round's reshakes counted)."""
    state = replace(state, reshakes=state.reshakes + 1, fault=None)
    rule = RESHAKE_RULE[config.profile]
    return state, [log(f"a die is not flat: shake again ({rule})"), SHAKE]


def shaker_fault(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    reason = str(data.get("reason", "unknown"))
    if state.phase not in (Phase.SHAKING, Phase.OFF_DRAW):
        return state, [alarm(f"shaker fault while {state.phase}: {reason}")]
    return replace(state, fault=reason), [
        alarm(f"shaker fault: {reason}; dealer.shake to retry or dealer.void")
    ]


def meter_fault(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    """The table display is gone (unplugged): the dealer announces by voice meanwhile."""
    reason = fields.reason(data, "meter fault")
    return state, [alarm(f"meter fault: {reason}; announce first box and cut by voice")]


def meter_ready(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    return state, [log("meter back: showing the table's display again")]


def dice_result(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    try:
        shake = parse_shake(data)
    except InputError as e:
        raise Refused(f"unreadable dice: {e}") from None
    if shake.needs_reshake:
        return dice_not_flat(config, state, data, now)
    try:
        check_shake(config.profile, shake)
    except InputError as e:
        raise Refused(str(e)) from None
    if state.phase == Phase.OFF_DRAW:
        return off_drawn(config, state, shake)
    return _announce(config, state, shake)


def _announce(config: PaiGowConfig, state: PaiGowState, shake: Shake) -> Result:
    bank = bank_of(config, state)
    decision = round_cut(config, state, bank, shake)
    first = first_box_for_shake(bank, shake, state.steal,
                                steal_offered=config.steal_offered)
    options = options_json(decision.options)
    cut = {"cut": decision.cut.value, "options": options, "source": decision.source.value}
    english = cut_spec(config.profile, decision.cut).english.upper()
    words = " ".join(o.upper() for o in options or [])
    text = f"FIRST BOX {first} / CUT {english}" + (f" {words}" if words else "")
    state = replace(state, phase=Phase.ANNOUNCED, dice=shake_json(shake), first_box=first,
                    cut=cut)
    plan = delivery_of(config, state)
    order = describe(plan, config.profile, config.clockwise_delivery)
    state, shown = show(state, "announce", text, first_box=first, cut=cut,
                        delivery=[d.as_json() for d in plan], order=order)
    note = log(
        f"dice {shake.describe()} total {shake.total} steal {state.steal:+d}: first box {first}"
        f" ({FIRST_BOX_RULE[config.profile]}); cut {decision.cut.value} by {decision.source};"
        f" groups 1-8 to positions {order} ({delivery_rule(config)})"
    )
    return state, [*shown, note]
