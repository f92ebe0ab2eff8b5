"""Pai Gow carded play (issue 29; the shared rules in controller/rounds/cards.py): each player's
Player Card on each wager (a box may hold several players' wagers: a seat is `<box>/<player>`),
refused without a valid one (NSW 9.1, 16.1), reserved against the card's Loss Limit before no
more bets, and `card_settled` per card when the round completes or is void."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from controller.errors import InputError
from controller.events import EffectKind
from controller.rounds import cards, fields
from controller.rounds.base import Effect, Now
from controller.rounds.paigow.core import PaiGowCore, Result, log
from controller.rounds.paigow.state import JSON, PaiGowState, Phase

RULE = "Pai Gow NSW 9.1, 16.1"


def seat(box: int, player: str) -> str:
    return f"{box}/{player}"


class CardSteps(PaiGowCore):
    def _req(self, state: PaiGowState) -> tuple[PaiGowState, str]:
        n = state.card_seq + 1
        return replace(state, card_seq=n), f"{state.number}/{n}"

    def _present(self, state: PaiGowState, where: str, card: str, *, check: bool) -> Result:
        old = state.patrons.get(where)
        if old is not None and old["card"] != card and any(
                seat(w["box"], w["player"]) == where for w in state.wagers):
            raise InputError(f"{where} wagers on card {old['card']}: withdraw it first ({RULE})")
        state, req = self._req(state)
        patrons, effects = cards.present(self.config.cards, state.patrons, where, card, req,
                                         check=check)
        return replace(state, patrons=patrons), [*effects, log(f"{where}: Player Card {card}")]

    def _player_card(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        """dealer.player_card {box, player, card}: a player's card, read or keyed."""
        where = seat(fields.box(data, self.config.boxes), fields.text(data, "player"))
        card = cards.card_id(data)
        if card is None:
            raise InputError("card is required")
        return self._present(state, where, card, check=True)

    def _card_read(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        """The card reader at a box: a Pai Gow box holds several players' wagers, so the reader
        cannot say whose card it read; the dealer keys it with its player
        (`dealer.player_card {box, player, card}` or `dealer.wager {.., card}`)."""
        return state, [log(f"card reader: {dict(data)}: the dealer keys the card with its"
                           " player (dealer.player_card)")]

    def _card_for_wager(self, state: PaiGowState, data: Mapping[str, Any], row: JSON) -> Result:
        """Before a wager is taken: the player's own card (NSW 9.1, 16.1) and the wager
        reserved against its Loss Limit."""
        where = seat(row["box"], row["player"])
        effects: list[Effect] = []
        card = cards.card_id(data)
        if card is not None:
            state, effects = self._present(state, where, card, check=False)
        if cards.usable(self.config.cards, state.patrons, where, where, RULE) is None:
            return state, effects
        state, req = self._req(state)
        patrons, more = cards.reserve(self.config.cards, state.patrons, where, row["amount"],
                                      state.number, req)
        return replace(state, patrons=patrons), [*effects, *more]

    def _card_ready(self, state: PaiGowState) -> None:
        waiting = cards.pending(state.patrons, [seat(w["box"], w["player"]) for w in state.wagers])
        if waiting:
            raise InputError(f"waiting for head office to confirm the Player Card of"
                             f" {', '.join(waiting)} ({RULE})")

    def _ho_card(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        in_hand = state.phase not in (Phase.BETTING, Phase.CLOSED)
        got = cards.answer(self.config.cards, state.patrons, data, state.offline_used, in_hand)
        if got is None:
            return state, [log(f"card answer {data.get('req')!r}: no wager waits for it")]
        used = dict(state.offline_used)
        if got.record["offline"] and got.record["status"] == cards.VALID:
            used[got.record["card"]] = used.get(got.record["card"], 0) + got.record["asked"]
        state = replace(state, patrons={**state.patrons, got.seat: got.record},
                        offline_used=used)
        if got.refused is not None:
            return self._returned(state, lambda w: seat(w["box"], w["player"]) != got.seat,
                                  f"{got.refused} ({RULE})")
        if got.invalid is not None or got.capped is not None:
            # The wagers are fixed at no more bets; a card found invalid (or short) during
            # the hand is recorded for the people who settle it (docs/rounds-paigow.md).
            why = got.invalid or f"over the Loss Limit: valid up to {got.capped} c"
            return state, [Effect(EffectKind.ALARM, {"severity": "dealer", "rule": "16.1",
                                            "text": f"{got.seat}: card {got.record['card']}:"
                                                    f" {why}"})]
        return state, [log(f"{got.seat}: card {got.record['card']} confirmed")]

    def _card_restrict(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        card = cards.card_id(data)
        if card is None:
            raise InputError("card is required")
        by = cards.who(data)
        why = fields.reason(data, "restricted by the casino supervisor")
        patrons = {s: ({**r, "status": cards.REFUSED, "reason": f"restricted: {why}"}
                       if r["card"] == card else r) for s, r in state.patrons.items()}
        state = replace(state, patrons=patrons)
        effects = [cards.restricted(card, by, why), log(f"card {card} restricted by {by[:64]}")]
        if state.phase == Phase.BETTING:
            state, more = self._returned(
                state, lambda w: patrons.get(seat(w["box"], w["player"]), {}).get("card") != card,
                "card restricted")
            effects += more
        return state, effects

    def _chips_declared(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        card = cards.card_id(data)
        if card is None:
            raise InputError("card is required")
        amount, kind = fields.cents(data, "amount"), fields.text(data, "kind")
        return state, [cards.declared(state.number, card, amount, kind),
                       log(f"card {card}: chips declared, {kind} {amount} c")]

    def _card_invalid(self, state: PaiGowState, data: Mapping[str, Any], now: Now) -> Result:
        """dealer.card_invalid {box, player, reason?}: not the player's own card (NSW 16.1):
        before no more bets the wager goes back."""
        where = seat(fields.box(data, self.config.boxes), fields.text(data, "player"))
        record = state.patrons.get(where)
        if record is None:
            raise InputError(f"{where} has no Player Card")
        why = fields.reason(data, "card found invalid")
        record = {**record, "status": cards.REFUSED, "reason": why, "req": None}
        state = replace(state, patrons={**state.patrons, where: record})
        return self._returned(state, lambda w: seat(w["box"], w["player"]) != where,
                              f"{why} ({RULE})")

    def _cards_settled(self, state: PaiGowState, summary: JSON, void: bool) -> list[Effect]:
        nets: dict[str, int] = {}
        amounts: dict[str, int] = {}
        for r in ((summary.get("settlement") or {}).get("results") or []):
            nets[seat(r["box"], r["player"])] = r["net"]
        for w in state.wagers:
            amounts[seat(w["box"], w["player"])] = w["amount"]
        if void:  # returned, but what a supervisor forfeited for a fraud (NSW 16.5.2, 16.6)
            lost = {seat(w["box"], w["player"]): w["amount"]
                    for w in summary.get("forfeited") or []}
            nets = {s: -a for s, a in lost.items()}
        if not self.config.cards.asks:  # no reservation at head office to release
            return []
        return cards.settled_cards(state.number, [
            (r, amounts.get(s, 0), nets.get(s, 0), 0)
            for s, r in state.patrons.items() if r.get("granted")], void)
