"""Pai Gow carded play (issue 29; the shared rules in controller/rounds/cards.py): each player's
Player Card on each wager (a box may hold several players' wagers: a seat is `<box>/<player>`),
refused without a valid one (NSW 9.1, 16.1), reserved against the card's Loss Limit before no
more bets, and `card_settled` per card when the round completes or is void."""

from __future__ import annotations

from dataclasses import replace

from controller.events import EffectKind
from controller.rounds import cards, fields
from controller.rounds.base import Effect, Now
from controller.rounds.paigow.core import Data, Result, log, return_wagers
from controller.rounds.paigow.state import JSON, PaiGowConfig, PaiGowState, Phase
from shared.errors import InputError

RULE = "Pai Gow NSW 9.1, 16.1"


def seat(box: int, player: str) -> str:
    return f"{box}/{player}"


def _req(state: PaiGowState) -> tuple[PaiGowState, str]:
    n = state.card_seq + 1
    return replace(state, card_seq=n), f"{state.number}/{n}"


def _present(
    config: PaiGowConfig, state: PaiGowState, where: str, card: str, *, check: bool
) -> Result:
    old = state.patrons.get(where)
    if old is not None and old["card"] != card and any(
            seat(w["box"], w["player"]) == where for w in state.wagers):
        raise InputError(f"{where} wagers on card {old['card']}: withdraw it first ({RULE})")
    state, req = _req(state)
    patrons, effects = cards.present(config.cards, state.patrons, where, card, req,
                                     check=check)
    return replace(state, patrons=patrons), [*effects, log(f"{where}: Player Card {card}")]


def player_card(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    """dealer.player_card {box, player, card}: a player's card, read or keyed."""
    where = seat(fields.box(data, config.boxes), fields.text(data, "player"))
    card = cards.card_id(data)
    if card is None:
        raise InputError("card is required")
    return _present(config, state, where, card, check=True)


def card_read(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    """The card reader at a box: a Pai Gow box holds several players' wagers, so the reader
    cannot say whose card it read; the dealer keys it with its player
    (`dealer.player_card {box, player, card}` or `dealer.wager {.., card}`)."""
    return state, [log(f"card reader: {dict(data)}: the dealer keys the card with its"
                       " player (dealer.player_card)")]


def card_for_wager(config: PaiGowConfig, state: PaiGowState, data: Data, row: JSON) -> Result:
    """Before a wager is taken: the player's own card (NSW 9.1, 16.1) and the wager
    reserved against its Loss Limit."""
    where = seat(row["box"], row["player"])
    effects: list[Effect] = []
    card = cards.card_id(data)
    if card is not None:
        state, effects = _present(config, state, where, card, check=False)
    if cards.usable(config.cards, state.patrons, where, where, RULE) is None:
        return state, effects
    state, req = _req(state)
    patrons, more = cards.reserve(config.cards, state.patrons, where, row["amount"],
                                  state.number, req)
    return replace(state, patrons=patrons), [*effects, *more]


def card_ready(state: PaiGowState) -> None:
    waiting = cards.pending(state.patrons, [seat(w["box"], w["player"]) for w in state.wagers])
    if waiting:
        raise InputError(f"waiting for head office to confirm the Player Card of"
                         f" {', '.join(waiting)} ({RULE})")


def ho_card(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    in_hand = state.phase not in (Phase.BETTING, Phase.CLOSED)
    got = cards.answer(config.cards, state.patrons, data, state.offline_used, in_hand)
    if got is None:
        return state, [log(f"card answer {data.get('req')!r}: no wager waits for it")]
    used = dict(state.offline_used)
    if got.record["offline"] and got.record["status"] == cards.VALID:
        used[got.record["card"]] = used.get(got.record["card"], 0) + got.record["asked"]
    state = replace(state, patrons={**state.patrons, got.seat: got.record},
                    offline_used=used)
    if got.refused is not None:
        return return_wagers(state, lambda w: seat(w["box"], w["player"]) != got.seat,
                             f"{got.refused} ({RULE})")
    if got.invalid is not None or got.capped is not None:
        # The wagers are fixed at no more bets; the result settles it by the rule
        # (cards_adjust: NSW 15.21.2, 16.1; a Loss Limit found short: valid up to it).
        why = (f"{got.invalid}: the wager is returned, winnings not paid (NSW 15.21.2,"
               " 16.1)" if got.invalid else f"over the Loss Limit: valid up to"
               f" {cards.dollars(got.capped or 0)}, the excess returned")
        return state, [Effect(EffectKind.ALARM, {"severity": "dealer", "rule": "16.1",
                                                 "text": f"{got.seat}: card {got.record['card']}:"
                                                         f" {why}"})]
    return state, [log(f"{got.seat}: card {got.record['card']} confirmed")]


def card_restrict(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
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
        state, more = return_wagers(
            state, lambda w: patrons.get(seat(w["box"], w["player"]), {}).get("card") != card,
            "card restricted")
        effects += more
    return state, effects


def chips_declared(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    card = cards.card_id(data)
    if card is None:
        raise InputError("card is required")
    amount, kind = fields.cents(data, "amount"), fields.text(data, "kind")
    return state, [cards.declared(state.number, card, amount, kind),
                   log(f"card {card}: chips declared, {kind} {amount} c")]


def card_invalid(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    """dealer.card_invalid {box, player, reason?}: not the player's own card (NSW 16.1):
    before no more bets the wager goes back."""
    where = seat(fields.box(data, config.boxes), fields.text(data, "player"))
    record = state.patrons.get(where)
    if record is None:
        raise InputError(f"{where} has no Player Card")
    why = fields.reason(data, "card found invalid")
    record = {**record, "status": cards.REFUSED, "reason": why, "req": None}
    state = replace(state, patrons={**state.patrons, where: record})
    return return_wagers(state, lambda w: seat(w["box"], w["player"]) != where,
                         f"{why} ({RULE})")


def cards_adjust(state: PaiGowState, summary: JSON, house_alone: bool
                  ) -> tuple[JSON, list[Effect]]:
    """The round's result as each wager's card allows, both parts in the record. A card
    found invalid after no more bets (NSW 16.1, 15.21.2): the wager is returned and no
    winnings are paid (net 0, `card_invalid`). A card whose Loss Limit head office found
    short (its late answer under the offline allowance): the wager is valid up to what was
    granted and settled on that part, the excess returned (`loss_limit {valid, excess}`,
    the UTH 11.17 treatment; the Pai Gow seed has no Loss Limit clause). The difference is
    the house's when it banks alone; with a player or co-banker the bank's commission
    depends on every wager, so the dealer is alarmed and the round is recorded as dealt
    (`card_unsettled`), for the supervisor (docs/rounds-paigow.md)."""
    settlement = summary.get("settlement")
    if not settlement:
        return summary, []
    results, delta, effects, unsettled = [], 0, [], []
    for r in settlement["results"]:
        record = state.patrons.get(seat(r["box"], r["player"]))
        invalid = record is not None and record["status"] == cards.INVALID
        valid = None if record is None or invalid else record.get("found")
        if not invalid and valid is None:
            results.append(r)
            continue
        r = {**r, "card": record["card"]} if record else r
        if not house_alone:
            unsettled.append(seat(r["box"], r["player"]))
            results.append(r)
            continue
        net = r["net"]
        if invalid:
            new = {**r, "net": 0, "won": 0, "commission": 0, "paid_back": r["amount"],
                   "card_invalid": {"reason": record["reason"], "dealt_net": net,
                                    "rule": "NSW 16.1, 15.21.2"}}
        else:
            keep = min(int(valid), r["amount"])
            part = net * keep // r["amount"] if net > 0 else max(net, -keep)
            new = {**r, "net": part, "paid_back": r["amount"] + part,
                   "loss_limit": {"valid": keep, "excess": r["amount"] - keep,
                                  "dealt_net": net}}
        delta += net - new["net"]
        results.append(new)
    if unsettled:
        effects.append(Effect(EffectKind.ALARM, {
            "severity": "dealer", "rule": "16.1",
            "text": f"{', '.join(unsettled)}: card invalid or short with a player bank:"
                    " settle by hand (NSW 16.1, 15.21.2)"}))
    players = sum(r["net"] for r in results)
    settlement = {**settlement, "results": results, "house_net":
                  settlement["house_net"] + delta, "players_net": players}
    settlement["conserved"] = players + settlement["banker_net"] + \
        settlement["house_net"] == 0
    out = {**summary, "settlement": settlement}
    if unsettled:
        out["card_unsettled"] = unsettled
    return out, effects


def cards_settled(
    config: PaiGowConfig, state: PaiGowState, summary: JSON, void: bool
) -> list[Effect]:
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
    if not config.cards.asks:  # no reservation at head office to release
        return []
    return cards.settled_cards(state.number, [
        (r, amounts.get(s, 0), nets.get(s, 0), 0)
        for s, r in state.patrons.items() if r.get("granted")], void)
