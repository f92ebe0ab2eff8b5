"""The cut and the steal (NSW 8.2-8.4, NZ 9.3A and 9.6, ACT 8)."""

from __future__ import annotations

from dataclasses import replace

from controller.events import EffectKind
from controller.games.paigow.bank import BankHolder, BankState
from controller.games.paigow.cuts import (
    Cut,
    CutDecision,
    CutOption,
    CutSource,
    cut_table,
    decide_cut,
)
from controller.games.paigow.dice import Shake, check_steal
from controller.games.paigow.profiles import Profile
from controller.rounds import fields
from controller.rounds.base import Effect, Now
from controller.rounds.paigow.core import CUT_SOURCES, SHAKE, Data, Refused, Result, bank_of, log
from controller.rounds.paigow.input import options_json, parse_cut_data
from controller.rounds.paigow.state import PaiGowConfig, PaiGowState, Phase
from shared.errors import InputError


def dealer_cut(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    if config.profile is Profile.NZ and state.phase == Phase.SHAKING:
        raise InputError("the cut was decided before the dice (NZ 9.3A, 9.6)")
    by = fields.text(data, "by", "banker")
    if by not in ("banker", "supervisor"):
        raise InputError(f"by {by!r}: banker or supervisor")
    choice = parse_cut_data(config.profile, data)
    holder = bank_of(config, state).holder
    # decide_cut applies who may choose: a player/banker (NSW 8.4.3, NZ 9.3A(a), ACT 8.4),
    # the NZ supervisor (9.3A(b)); approved cuts (NZ).
    decision = decide_cut(
        config.profile, holder,
        nominated=choice if by == "banker" else None,
        supervisor=choice if by == "supervisor" else None,
        approved=config.approved_cuts,
    )
    return _cut_chosen(state, decision, by)


def cut_selected(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    choice = parse_cut_data(config.profile, data)
    # Validated as a supervisor's choice would be (approved, options), then marked random.
    decision = decide_cut(config.profile, bank_of(config, state).holder, supervisor=choice,
                          approved=config.approved_cuts)
    return _cut_chosen(state, replace(decision, source=CutSource.RANDOM), "random")


def _cut_chosen(state: PaiGowState, decision: CutDecision, by: str) -> Result:
    choice = {"cut": decision.cut.value, "options": options_json(decision.options), "by": by}
    state = replace(state, cut_choice=choice)
    effects = [log(f"cut {decision.cut.value} {choice['options']} chosen by {by}")]
    if state.phase == Phase.CUTTING:  # the routes lead on to shaking
        effects.append(SHAKE)
    return state, effects


def select_cut_request(config: PaiGowConfig) -> Effect:
    approved = config.approved_cuts or [s.cut for s in cut_table(config.profile)]
    return Effect(EffectKind.DEVICE, {
        "device": "rng", "command": "select_cut",
        "args": {"profile": config.profile.value, "approved": [c.value for c in approved]},
    })


def dealer_steal(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    value = check_steal(
        config.profile, fields.integer(data, "value"),
        player_banker=bank_of(config, state).holder is not BankHolder.HOUSE,
        steal_offered=config.steal_offered,
    )  # NSW 8.2, NZ 9.6; ACT has none
    return replace(state, steal=value), [log(f"steal {value:+d} on the marker button")]


def check_choices(config: PaiGowConfig, state: PaiGowState, bank: BankState) -> Result:
    """A nomination or steal made before the bank changed hands may no longer apply."""
    effects = []
    choice = state.cut_choice
    if choice and choice["by"] == "banker" and bank.holder is BankHolder.HOUSE:
        state = replace(state, cut_choice=None)
        effects.append(log("cut nomination dropped: only a player/banker nominates"
                           " (NSW 8.4.3, NZ 9.3A(a), ACT 8.4)"))
    if state.steal:
        try:
            check_steal(config.profile, state.steal,
                        player_banker=bank.holder is not BankHolder.HOUSE,
                        steal_offered=config.steal_offered)
        except InputError as e:
            state = replace(state, steal=0)
            effects.append(log(f"steal dropped: {e}"))
    return state, effects


def round_cut(
    config: PaiGowConfig, state: PaiGowState, bank: BankState, shake: Shake
) -> CutDecision:
    choice = state.cut_choice
    if config.profile is Profile.NZ:  # decided before the dice (NZ 9.3A), validated then
        if choice is None:
            raise Refused("no cut decided (NZ 9.3A)")
        options = frozenset(CutOption(o) for o in choice["options"])
        return CutDecision(Cut(choice["cut"]), options, CUT_SOURCES[choice["by"]])
    nominated = None
    if choice is not None:
        nominated = (Cut(choice["cut"]), frozenset(CutOption(o) for o in choice["options"]))
    die = shake.cut_die  # an int here: needs_reshake was handled by the caller
    cut_die = die if isinstance(die, int) and nominated is None else None
    if config.profile is Profile.NSW and nominated is None and cut_die is None:
        raise Refused("the cut die decides this cut (NSW 8.4.3-8.4.4, Appendix 4) but the"
                      " shake has none: dealer.shake to shake again")
    return decide_cut(config.profile, bank.holder, nominated=nominated, cut_die=cut_die)
