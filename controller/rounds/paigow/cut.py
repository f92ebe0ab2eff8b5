"""The cut and the steal (NSW 8.2-8.4, NZ 9.3A and 9.6, ACT 8)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

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
from controller.rounds.paigow.core import CUT_SOURCES, SHAKE, PaiGowCore, Refused, Result, log
from controller.rounds.paigow.input import options_json, parse_cut_data
from controller.rounds.paigow.state import PaiGowState, Phase
from shared.errors import InputError


class CutSteps(PaiGowCore):
    def _dealer_cut(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        if self.profile is Profile.NZ and state.phase == Phase.SHAKING:
            raise InputError("the cut was decided before the dice (NZ 9.3A, 9.6)")
        by = fields.text(data, "by", "banker")
        if by not in ("banker", "supervisor"):
            raise InputError(f"by {by!r}: banker or supervisor")
        choice = parse_cut_data(self.profile, data)
        holder = self._bank(state).holder
        # decide_cut applies who may choose: a player/banker (NSW 8.4.3, NZ 9.3A(a), ACT 8.4),
        # the NZ supervisor (9.3A(b)); approved cuts (NZ).
        decision = decide_cut(
            self.profile, holder,
            nominated=choice if by == "banker" else None,
            supervisor=choice if by == "supervisor" else None,
            approved=self.config.approved_cuts,
        )
        return self._cut_chosen(state, decision, by)

    def _cut_selected(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        choice = parse_cut_data(self.profile, data)
        # Validated as a supervisor's choice would be (approved, options), then marked random.
        decision = decide_cut(self.profile, self._bank(state).holder, supervisor=choice,
                              approved=self.config.approved_cuts)
        return self._cut_chosen(state, replace(decision, source=CutSource.RANDOM), "random")

    def _cut_chosen(self, state: PaiGowState, decision: CutDecision, by: str) -> Result:
        choice = {"cut": decision.cut.value, "options": options_json(decision.options), "by": by}
        state = replace(state, cut_choice=choice)
        effects = [log(f"cut {decision.cut.value} {choice['options']} chosen by {by}")]
        if state.phase == Phase.CUTTING:
            state = replace(state, phase=Phase.SHAKING)
            effects.append(SHAKE)
        return state, effects

    def _select_cut_request(self) -> Effect:
        approved = self.config.approved_cuts or [s.cut for s in cut_table(self.profile)]
        return Effect(EffectKind.DEVICE, {
            "device": "rng", "command": "select_cut",
            "args": {"profile": self.profile.value, "approved": [c.value for c in approved]},
        })

    def _dealer_steal(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        value = check_steal(
            self.profile, fields.integer(data, "value"),
            player_banker=self._bank(state).holder is not BankHolder.HOUSE,
            steal_offered=self.config.steal_offered,
        )  # NSW 8.2, NZ 9.6; ACT has none
        return replace(state, steal=value), [log(f"steal {value:+d} on the marker button")]

    def _check_choices(self, state: PaiGowState, bank: BankState) -> Result:
        """A nomination or steal made before the bank changed hands may no longer apply."""
        effects = []
        choice = state.cut_choice
        if choice and choice["by"] == "banker" and bank.holder is BankHolder.HOUSE:
            state = replace(state, cut_choice=None)
            effects.append(log("cut nomination dropped: only a player/banker nominates"
                                " (NSW 8.4.3, NZ 9.3A(a), ACT 8.4)"))
        if state.steal:
            try:
                check_steal(self.profile, state.steal,
                            player_banker=bank.holder is not BankHolder.HOUSE,
                            steal_offered=self.config.steal_offered)
            except InputError as e:
                state = replace(state, steal=0)
                effects.append(log(f"steal dropped: {e}"))
        return state, effects

    def _round_cut(self, state: PaiGowState, bank: BankState, shake: Shake) -> CutDecision:
        choice = state.cut_choice
        if self.profile is Profile.NZ:  # decided before the dice (NZ 9.3A), validated then
            if choice is None:
                raise Refused("no cut decided (NZ 9.3A)")
            options = frozenset(CutOption(o) for o in choice["options"])
            return CutDecision(Cut(choice["cut"]), options, CUT_SOURCES[choice["by"]])
        nominated = None
        if choice is not None:
            nominated = (Cut(choice["cut"]), frozenset(CutOption(o) for o in choice["options"]))
        die = shake.cut_die  # an int here: needs_reshake was handled by the caller
        cut_die = die if isinstance(die, int) and nominated is None else None
        if self.profile is Profile.NSW and nominated is None and cut_die is None:
            raise Refused("the cut die decides this cut (NSW 8.4.3-8.4.4, Appendix 4) but the"
                          " shake has none: dealer.shake to shake again")
        return decide_cut(self.profile, bank.holder, nominated=nominated, cut_die=cut_die)
