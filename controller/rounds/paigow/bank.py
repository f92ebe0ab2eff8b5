"""Who banks: the chung, the dealer's bank entries, the house taking over (NSW 6, NZ 5, ACT 6)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from controller.games.paigow.bank import (
    HOUSE_BOX,
    BankHolder,
    Candidate,
    bank_open,
    covers,
    house_banks,
    take_bank,
)
from controller.games.paigow.profiles import Profile
from controller.rounds import fields
from controller.rounds.base import Now
from controller.rounds.paigow.core import (
    BANKER_BOX_RULE,
    COVER_RULE,
    HOUSE_BANKS_RULE,
    HOUSE_BOX_RULE,
    OFF_RULE,
    SHARED_BANK_RULE,
    PaiGowCore,
    Refused,
    Result,
    alarm,
    banker_json,
    bankers,
    log,
)
from controller.rounds.paigow.state import PaiGowState, Phase, bank_json, bank_state
from shared.errors import InputError


class BankSteps(PaiGowCore):
    def _chung_on(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        box = fields.box(data, self.config.boxes)
        if state.phase != Phase.BETTING:
            return state, [log(f"chung on box {box} during {state.phase}: no change")]
        if box == self._bank(state).box:
            return state, [log(f"chung on box {box}: bank confirmed")]
        if box == HOUSE_BOX:
            return self._house_takes(state, "house chung on box 1")
        return self._take(state, box, BankHolder.PLAYER, data)

    def _chung_off(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        box = fields.box(data, self.config.boxes)
        bank = self._bank(state)
        if state.phase == Phase.BETTING and bank.holder is not BankHolder.HOUSE and box == bank.box:
            return self._house_takes(state, f"chung left box {box}")
        return state, [log(f"chung off box {box}: no change")]

    def _dealer_bank(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        box = fields.box(data, self.config.boxes)
        try:
            holder = BankHolder(fields.text(data, "holder", "player"))
        except ValueError:
            raise InputError(f"holder {data.get('holder')!r}: player, co-bank or house") from None
        if holder is BankHolder.HOUSE:
            return self._house_takes(state, "dealer")
        return self._take(state, box, holder, data)

    def _dealer_house_bank(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        return self._house_takes(state, "dealer")

    def _house_takes(self, state: PaiGowState, why: str) -> Result:
        # Judged from the bank at the opening, so giving the bank up never resets a round limit.
        bank = house_banks(bank_state(self.config, state.bank_at_open))
        state = replace(state, bank=bank_json(bank), banker=None)
        state, effects = self._returned(
            state, lambda w: w["box"] != HOUSE_BOX, f"the house banks on box 1 ({HOUSE_BOX_RULE})"
        )
        return state, [log(f"the house banks on box {HOUSE_BOX} ({why})"), *effects]

    def _take(
        self, state: PaiGowState, box: int, holder: BankHolder, data: Mapping[str, Any]
    ) -> Result:
        if box in state.off_boxes:
            raise Refused(f"box {box} is OFF ({OFF_RULE}): it cannot take the bank")
        funds = fields.integer(data, "funds", None)
        if funds is not None and funds < 0:
            raise InputError(f"funds {funds} are negative")
        player = fields.text(data, "player", None) or state.last_round["controllers"].get(str(box))
        shared = self._shared_with(data, player)
        current = self._bank(state)
        opening = bank_state(self.config, state.bank_at_open)
        mid_bank = current == opening and not bank_open(opening)
        if mid_bank and current.holder is holder and current.box == box:
            # The holder declares this round's wager (NZ 11.2(b)); a finished bank asking for
            # another goes to take_bank, which applies the round limit (NSW 6.7).
            banker = banker_json(player, funds, shared)
            return replace(state, banker=banker), [log(f"box {box} bank wager: {funds} c")]
        holders = {player, *shared}
        others = sum(w["amount"] for w in state.wagers if w["player"] not in holders)
        candidate = self._candidate(state, box, player, data, funds, others)
        try:
            bank = take_bank(opening, candidate, holder, other_wagers=others)
        except InputError as e:  # every refusal, each with its rule (bank.py)
            raise Refused(str(e)) from None
        state = replace(state, bank=bank_json(bank), banker=banker_json(player, funds, shared))
        state, effects = self._returned(
            state,
            lambda w: w["box"] != box and (player is None or w["player"] != player),
            f"box {box} holds the bank ({BANKER_BOX_RULE})",
        )
        if shared:  # a player sharing the bank wagers on no other hand (ACT 6.6)
            state, sharers = self._returned(
                state, lambda w: w["player"] not in shared,
                f"shares the bank ({SHARED_BANK_RULE[self.profile]})",
            )
            effects += sharers
        who = player or f"the player on box {box}"
        return state, [log(f"{who} takes the bank on box {box} as {holder.value}"), *effects]

    def _shared_with(self, data: Mapping[str, Any], player: str | None) -> list[str]:
        """shared_with: the players sharing the bank with `player`, at the house's discretion
        (NSW 6.8, NZ 5.5; ACT 6.6 names one of them to handle the tiles: `player`)."""
        raw = data.get("shared_with")
        if raw is None:
            return []
        if (not isinstance(raw, list) or not all(isinstance(n, str) and n.strip() for n in raw)
                or len(raw) > 7):
            raise InputError(f"shared_with must be a list of player names, got {raw!r}")
        names = sorted({n.strip() for n in raw})
        if player is None or player in names:
            raise InputError("shared_with: the players besides the named player who handles the"
                             f" tiles ({SHARED_BANK_RULE[self.profile]})")
        return names

    def _candidate(
        self, state: PaiGowState, box: int, player: str | None, data: Mapping[str, Any],
        funds: int | None, others: int,
    ) -> Candidate:
        """The bank candidate from the previous round's wagers, or the dealer's word for it.

        Without recorded wagers the machine cannot know who played where: the dealer vouches
        (played_boxes/controls), by default for the requesting box itself.
        """
        n = self.config.boxes
        played = fields.boxes(data, "played_boxes", n)
        controls = None if data.get("controls") is None else fields.box(data, n, "controls")
        lr = state.last_round
        if played is None:
            played = lr["players"].get(player, []) if lr["recorded"] else [box]
        if controls is None:
            if lr["recorded"]:
                mine = [int(b) for b, p in lr["controllers"].items() if p == player]
                controls = mine[0] if mine else None
            else:
                controls = box
        # Undeclared funds: the dealer ascertains them (NSW 9.15); checked when declared.
        return Candidate(box, frozenset(played), controls, others if funds is None else funds)

    def _settle_bank(self, state: PaiGowState, make_up: int = 0) -> Result:
        """Who finally banks: the house when a finished bank found no taker or a player/banker's
        declared funds do not cover the wagers. NSW 13.2.2: the player/banker is asked to make
        up the difference first; `make_up` is what they added (0: refused or could not)."""
        bank = self._bank(state)
        if bank.holder is BankHolder.HOUSE:
            return state, []
        if bank_open(bank):  # two rounds done (NSW 6.7, NZ 5.4, ACT 6.7) and nobody took it
            rule = HOUSE_BANKS_RULE[self.profile]
            why = f"bank of box {bank.box} complete, nobody took it ({rule})"
            return self._house_takes(state, why)
        banker = state.banker or {}
        funds = banker.get("funds")
        others = sum(w["amount"] for w in state.wagers if w["player"] not in bankers(state))
        if make_up and funds is not None and not covers(funds, others, bank.holder):
            if self.profile is not Profile.NSW:
                raise InputError(f"a make-up of the bank's wager is NSW 13.2.2, not {self.profile}")
            funds += make_up
            state = replace(state, banker={**banker, "funds": funds})
            if covers(funds, others, bank.holder):
                return state, [log(f"box {bank.box}: the player/banker made up {make_up} c,"
                                   f" {funds} c cover {others} c (NSW 13.2.2)")]
        if funds is not None and not covers(funds, others, bank.holder):
            state, effects = self._house_takes(state, f"banker's {funds} c do not cover {others} c")
            return state, [alarm(f"box {bank.box} cannot cover the wagers: the house banks"
                                  f" ({COVER_RULE[self.profile]})"), *effects]
        return state, []
