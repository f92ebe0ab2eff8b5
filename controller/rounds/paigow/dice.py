"""No more bets, the dice and the announcement (NSW 8, NZ 9, ACT 4 and 13.1)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from controller.games.paigow.cuts import cut_spec
from controller.games.paigow.delivery import describe
from controller.games.paigow.dice import Shake, check_shake, first_box_for_shake
from controller.games.paigow.profiles import Profile
from controller.rounds import fields
from controller.rounds.base import Now
from controller.rounds.paigow.core import (
    FIRST_BOX_RULE,
    RESHAKE_RULE,
    SHAKE,
    PaiGowCore,
    Refused,
    Result,
    alarm,
    log,
)
from controller.rounds.paigow.input import options_json, parse_shake, shake_json
from controller.rounds.paigow.state import PaiGowState, Phase
from shared.errors import InputError


class DiceSteps(PaiGowCore):
    def _no_more_bets(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        self._card_ready(state)  # NSW 9.1: every card confirmed before play begins
        state, effects = self._settle_bank(state, fields.cents(data, "make_up", 0))
        bank = self._bank(state)
        state, returned = self._returned(
            state,
            lambda w: self._wager_problem(state, bank, w, []) is None,
            "not valid under the round's bank",
        )
        effects += returned
        state, returned = self._layout_returned(state, bank)
        effects += returned
        state, dropped = self._check_choices(state, bank)
        effects += dropped
        state, shown = self._show(state, "announce", "NO MORE BETS")
        effects += shown
        for box, player in self._house_way_boxes(state).items():
            effects.append(log(f"box {box}: {player} controls another box; the dealer sets box"
                               f" {box}'s tiles the house way (NZ 7.2)"))
        if self.profile is Profile.NZ and state.cut_choice is None:
            return replace(state, phase=Phase.CUTTING), [*effects, self._select_cut_request()]
        return replace(state, phase=Phase.SHAKING), [*effects, SHAKE]

    def _dealer_shake(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        return replace(state, fault=None), [SHAKE, log("shake again (dealer)")]

    def _dice_not_flat(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        return self._reshake(state)

    def _reshake(self, state: PaiGowState) -> Result:
        state = replace(state, reshakes=state.reshakes + 1, fault=None)
        rule = RESHAKE_RULE[self.profile]
        return state, [log(f"a die is not flat: shake again ({rule})"), SHAKE]

    def _shaker_fault(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        reason = str(data.get("reason", "unknown"))
        if state.phase not in (Phase.SHAKING, Phase.OFF_DRAW):
            return state, [alarm(f"shaker fault while {state.phase}: {reason}")]
        return replace(state, fault=reason), [
            alarm(f"shaker fault: {reason}; dealer.shake to retry or dealer.void")
        ]

    def _meter_fault(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        """The table display is gone (unplugged): the dealer announces by voice meanwhile."""
        reason = fields.reason(data, "meter fault")
        return state, [alarm(f"meter fault: {reason}; announce first box and cut by voice")]

    def _meter_ready(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        return state, [log("meter back: showing the table's display again")]

    def _dice_result(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        try:
            shake = parse_shake(data)
        except InputError as e:
            raise Refused(f"unreadable dice: {e}") from None
        if shake.needs_reshake:
            return self._reshake(state)
        try:
            check_shake(self.profile, shake)
        except InputError as e:
            raise Refused(str(e)) from None
        if state.phase == Phase.OFF_DRAW:
            return self._off_drawn(state, shake)
        return self._announce(state, shake)

    def _announce(self, state: PaiGowState, shake: Shake) -> Result:
        bank = self._bank(state)
        decision = self._round_cut(state, bank, shake)
        first = first_box_for_shake(bank, shake, state.steal,
                                    steal_offered=self.config.steal_offered)
        options = options_json(decision.options)
        cut = {"cut": decision.cut.value, "options": options, "source": decision.source.value}
        english = cut_spec(self.profile, decision.cut).english.upper()
        words = " ".join(o.upper() for o in options or [])
        text = f"FIRST BOX {first} / CUT {english}" + (f" {words}" if words else "")
        state = replace(state, phase=Phase.ANNOUNCED, dice=shake_json(shake), first_box=first,
                        cut=cut)
        plan = self._delivery(state)
        order = describe(plan, self.profile, self.config.clockwise_delivery)
        state, shown = self._show(state, "announce", text, first_box=first, cut=cut,
                                  delivery=[d.as_json() for d in plan], order=order)
        note = log(
            f"dice {shake.describe()} total {shake.total} steal {state.steal:+d}: first box {first}"
            f" ({FIRST_BOX_RULE[self.profile]}); cut {decision.cut.value} by {decision.source};"
            f" groups 1-8 to positions {order} ({self._delivery_rule()})"
        )
        return state, [*shown, note]
