"""Delivery, the result, voids and the round records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from controller.errors import InputError
from controller.games.paigow.bank import (
    BankHolder,
    BankState,
    after_round,
)
from controller.games.paigow.wagers import (
    box_controller,
)
from controller.rounds import fields
from controller.rounds.base import Effect, Now
from controller.rounds.paigow.core import (
    TILE_VOID_RULE,
    VOID_RULE,
    PaiGowCore,
    Refused,
    Result,
    alarm,
    log,
)
from controller.rounds.paigow.result import round_result, to_wager
from controller.rounds.paigow.state import (
    JSON,
    PaiGowState,
    Phase,
    bank_state,
)


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
        rules = {"distribution": VOID_RULE, "tile": TILE_VOID_RULE}.get(kind)
        if rules is None or self.profile not in rules:
            raise InputError(f"kind {kind!r}: no void rule for it in profile {self.profile}")
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

    def _summary(self, state: PaiGowState, status: str, now: Now) -> JSON:
        return {
            "number": state.number,
            "status": status,
            "game": self.game,
            "rules": self.profile.value,
            "opened_at": state.opened_at,
            "closed_at": now.utc,
            "banker": {**state.bank, "player": (state.banker or {}).get("player"),
                       "funds": (state.banker or {}).get("funds")},
            "off_boxes": list(state.off_boxes),
            "wagers": [dict(w) for w in state.wagers],
            "dice": state.dice,
            "reshakes": state.reshakes,
            "steal": state.steal,
            "first_box": state.first_box,
            "cut": state.cut,
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
