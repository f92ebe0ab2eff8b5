"""Delivery, the result, voids and the round records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from controller.errors import InputError
from controller.games.paigow.bank import BankHolder, BankState, after_round
from controller.games.paigow.profiles import Profile
from controller.games.paigow.wagers import box_controller
from controller.rounds import fields
from controller.rounds.base import Effect, Now
from controller.rounds.paigow.core import (
    BANKER_VOID_RULE,
    HAND_VOID_RULE,
    HOUSE_EXPOSED_RULE,
    TILE_VOID_RULE,
    VOID_RULE,
    PaiGowCore,
    Refused,
    Result,
    alarm,
    banker_json,
    log,
)
from controller.rounds.paigow.result import round_result, to_wager
from controller.rounds.paigow.state import JSON, PaiGowState, Phase, bank_state


class RoundEnd(PaiGowCore):
    def _delivered(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        state = replace(state, phase=Phase.SETTING)
        state, shown = self._show(state, "setting", "SET YOUR HANDS")
        return state, [*shown, log(f"round {state.number}: tiles delivered")]

    def _result(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        bank = self._bank(state)
        try:
            result, alarms = round_result(
                self.config, bank, state.banker, state.wagers, state.off_boxes, data
            )
        except InputError as e:
            raise Refused(f"result not accepted: {e}") from None
        summary = {**self._summary(state, "completed", now), **result}
        effects = [alarm(a) for a in alarms] + self._records(summary)
        history = self._history(state, bank)
        state, opened = self._open(state, state.number + 1, after_round(bank), now, history)
        return state, [*effects, *opened]

    def _void(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        kind = fields.text(data, "kind", "distribution")
        rules = {"distribution": VOID_RULE, "tile": TILE_VOID_RULE,
                 "banker_exposed": BANKER_VOID_RULE,
                 "mixed": {Profile.NZ: "NZ 12.15"}}.get(kind)
        if rules is None or self.profile not in rules:
            raise InputError(f"kind {kind!r}: no void rule for it in profile {self.profile}")
        if kind == "distribution" and self.profile is Profile.NSW:
            # NSW 15.11/15.13: reconstructed before the tiles were handled, or noticed only
            # after: the round goes on (NZ 12.13 and ACT 13.9 void it whatever happened).
            if fields.flag(data, "handled", False):
                return state, [log("incorrect distribution noticed after the tiles were handled:"
                                   " the round is played to a conclusion (NSW 15.13)")]
            if fields.flag(data, "reconstructed", False):
                return state, [log("incorrect distribution reconstructed before the tiles were"
                                   " handled: the round goes on (NSW 15.11)")]
        reason = fields.text(data, "reason", "incorrect distribution")
        summary = {
            **self._summary(state, "voided", now),
            "reason": reason,
            "rule": rules[self.profile],
            "returned": [dict(w) for w in state.wagers],  # all monies returned
        }
        effects = self._records(summary)
        effects.append(log(f"round {state.number} void ({rules[self.profile]}): {reason};"
                            " re-shuffle all 32 tiles"))
        # A void round is no round of play ("void: invalid with no result", NSW 1.1): the bank's
        # round count does not move, and a bank the house took over only for this round (a
        # finished bank without a taker, a banker who could not cover) stands as it opened, so
        # a void house round cannot split a box's consecutive rounds (NSW 6.7, NZ 5.4, ACT 6.7).
        # A player who took the bank in this round keeps it.
        bank = self._bank(state)
        if bank.holder is BankHolder.HOUSE:
            bank = bank_state(self.config, state.bank_at_open)
            state = replace(state, banker=state.banker_at_open)
        state, opened = self._open(state, state.number + 1, bank, now, state.last_round)
        return state, [*effects, *opened]

    def _hand_void(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        """dealer.hand_void {box, exposed}: the dealer exposed `exposed` (2 or more) tiles of a
        box's hand and its player calls the hand void before viewing the rest (NSW 15.3.1,
        NZ 12.3(a), ACT 13.7): that box's wagers go back, the round goes on. On the
        player/banker's box the round is void and the tiles reshuffled (NSW 15.3.2, NZ 12.3(b));
        the house's hand is played (NSW 15.5, NZ 12.5, ACT 13.4)."""
        box = fields.box(data, self.config.boxes)
        exposed = fields.integer(data, "exposed")
        if exposed < 2:
            single = {Profile.NZ: " (NZ 12.4)", Profile.ACT: " (ACT 13.6)"}.get(self.profile, "")
            raise InputError(f"{exposed} tile(s) exposed: the hand is played{single}; the option"
                             f" needs two or more ({HAND_VOID_RULE[self.profile]})")
        bank = self._bank(state)
        if box == bank.box:
            if bank.holder is BankHolder.HOUSE:
                raise InputError(f"box {box} holds the house's hand: it is played"
                                 f" ({HOUSE_EXPOSED_RULE[self.profile]})")
            if self.profile not in BANKER_VOID_RULE:
                raise InputError(f"profile {self.profile} gives the player/banker no such option"
                                 f" ({HAND_VOID_RULE[self.profile]} is a player's)")
            reason = f"player/banker on box {box} called the hand void: {exposed} tiles exposed"
            return self._void(state, {"kind": "banker_exposed", "reason": reason}, now)
        returned = [w for w in state.wagers if w["box"] == box]
        if not returned:
            raise InputError(f"box {box} has no wager: no hand to call void")
        rule = HAND_VOID_RULE[self.profile]
        void = {"box": box, "exposed": exposed, "rule": rule, "returned": returned}
        state = replace(state, wagers=[w for w in state.wagers if w["box"] != box],
                        void_hands=[*state.void_hands, void])
        total = sum(w["amount"] for w in returned)
        return state, [log(f"box {box}: hand called void after {exposed} tiles exposed ({rule});"
                           f" {total} c returned")]

    def _hands_mixed(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        """dealer.hands_mixed {boxes}: tiles of two or more hands mixed beyond reconstruction:
        the hands involved are void (NZ 12.15): their wagers go back. The bank's hand among
        them leaves nothing to play against: the round is void."""
        if self.profile is not Profile.NZ:
            raise InputError(f"mixed hands are NZ 12.15; profile {self.profile} has no such rule")
        boxes = fields.boxes(data, "boxes", self.config.boxes) or []
        if len(boxes) < 2:
            raise InputError("boxes: the two or more hands whose tiles were mixed (NZ 12.15)")
        if self._bank(state).box in boxes:
            reason = f"hands of boxes {boxes} mixed, the bank's among them"
            return self._void(state, {"kind": "mixed", "reason": reason}, now)
        voids, kept = [], list(state.wagers)
        for box in boxes:
            returned = [w for w in kept if w["box"] == box]
            kept = [w for w in kept if w["box"] != box]
            voids.append({"box": box, "rule": "NZ 12.15", "returned": returned})
        state = replace(state, wagers=kept, void_hands=[*state.void_hands, *voids])
        return state, [log(f"hands of boxes {boxes} mixed beyond reconstruction: void,"
                           " wagers returned (NZ 12.15)")]

    def _summary(self, state: PaiGowState, status: str, now: Now) -> JSON:
        return {
            "number": state.number,
            "status": status,
            "game": self.game,
            "rules": self.profile.value,
            "opened_at": state.opened_at,
            "closed_at": now.utc,
            "banker": {**state.bank, **banker_json((state.banker or {}).get("player"),
                                                  (state.banker or {}).get("funds"),
                                                  (state.banker or {}).get("shared_with") or [])},
            "off_boxes": list(state.off_boxes),
            "wagers": [dict(w) for w in state.wagers],
            "dice": state.dice,
            "reshakes": state.reshakes,
            "steal": state.steal,
            "first_box": state.first_box,
            "cut": state.cut,
            **({"void_hands": [dict(v) for v in state.void_hands]} if state.void_hands else {}),
        }

    @staticmethod
    def _records(summary: JSON) -> list[Effect]:
        number, status = summary["number"], summary["status"]
        return [
            Effect("round", {"number": number, "status": status, "summary": summary}),
            Effect("outbox", {"type": "round_result", "payload": summary}),
        ]

    def _history(self, state: PaiGowState, bank: BankState) -> JSON:
        """Who played where this round: the next bank offer's eligibility (NSW 6.3-6.6, NZ 5.3,
        ACT 6.3). The player/banker played on the bank's box."""
        players: dict[str, set[int]] = {}
        by_box: dict[int, list[JSON]] = {}
        for w in state.wagers:
            players.setdefault(w["player"], set()).add(w["box"])
            by_box.setdefault(w["box"], []).append(w)
        controllers: dict[str, str] = {}
        for box, rows in sorted(by_box.items()):
            try:
                controllers[str(box)] = box_controller([to_wager(r) for r in rows], self.profile)
            except InputError:  # ACT 7.4(c): a tie nobody nominated; nobody controls it
                continue
        banker = (state.banker or {}).get("player")
        if bank.holder is not BankHolder.HOUSE and banker is not None:
            players.setdefault(banker, set()).add(bank.box)
            controllers[str(bank.box)] = banker
        return {
            "recorded": bool(state.wagers),
            "players": {p: sorted(b) for p, b in sorted(players.items())},
            "controllers": controllers,
        }
