"""UTH carded play (issue 29; the shared rules in controller/rounds/cards.py): the Player Card at
each box (and the card of a jackpot wager on another player's box, 15.2.1.1, seat `j<box>`),
head office's answers, the settlement of each card (11.16, 11.17) and its `card_settled`."""

from __future__ import annotations

from typing import Any

from controller.rounds import cards, fields
from controller.rounds.base import Effect, Now
from controller.rounds.uth import effects as fx
from controller.rounds.uth.state import BETTING, UthConfig, UthState, replace
from shared.errors import InputError

Result = tuple[UthState, list[Effect]]
MOST_PLAY = 4  # the largest Play is 4 x the Ante (9.1): what a box can lose at most counts it
ORDER = ("ante", "blind", "trips", "play")  # the order the bets are placed (5.3, 5.4, 9)


def _req(state: UthState) -> tuple[UthState, str]:
    n = state.card_seq + 1
    return replace(state, card_seq=n), f"{state.round}/{n}"


def present(config: UthConfig, state: UthState, seat: str, card: str, *,
            check: bool = True) -> Result:
    old = state.patrons.get(seat)
    if old is not None and old["card"] != card and (
            state.in_round or (seat.isdigit() and seat in state.wagers)):
        raise InputError(f"box {seat} wagers on card {old['card']}: withdraw them first (13.1)")
    state, req = _req(state)
    patrons, effects = cards.present(config.cards, state.patrons, seat, card, req, check=check)
    return replace(state, patrons=patrons), [*effects, fx.log(f"box {seat}: Player Card {card}")]


def player_card(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.player_card {box, card}: the card at a box, read by the reader or keyed."""
    box = fields.box(data, config.boxes)
    card = cards.card_id(data)
    if card is None:
        raise InputError("card is required")
    return present(config, state, str(box), card)


def unreadable(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """cardreader.unreadable {box}: no card is taken; the dealer keys it (dealer.player_card)."""
    box = fields.box(data, config.boxes)
    return state, [fx.log(f"box {box}: Player Card unreadable: key its id (13.1)", refused=True)]


def removed(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """cardreader.removed {box}: the player took the card out. Between rounds, with no wager on
    the box, the box has no card any more; a wager placed with it stays on it (13.1)."""
    box = str(fields.box(data, config.boxes))
    if box in state.patrons and box not in state.wagers and not state.in_round:
        patrons = {s: r for s, r in state.patrons.items() if s != box}
        return replace(state, patrons=patrons), [fx.log(f"box {box}: Player Card removed")]
    return state, [fx.log(f"box {box}: Player Card removed; its wager stays on it")]


def reader_fault(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    why = fields.reason(data, "card reader fault")
    return state, [fx.alarm("technician", f"card reader: {why}; the dealer keys each Player"
                            " Card (dealer.player_card)")]


def at_risk(config: UthConfig, state: UthState, box: int, wagers: tuple[int, int, int]) -> int:
    """The most box `box` can lose this round: ante + blind + trips + the largest Play (4 x
    ante, 9.1) + its jackpot wager when its sensor is on (the patron contract)."""
    ante, blind, trips = wagers
    jackpot = config.jackpot_wager if box in state.sensors and str(box) not in (
        state.jackpot_owners) else 0
    return ante + blind + trips + MOST_PLAY * ante + jackpot


def on_wager(config: UthConfig, state: UthState, data: Any, box: int,
             wagers: tuple[int, int, int]) -> Result:
    """Before a box's wager is taken: its card (keyed with the wager, or the box's), refused
    without a valid one (11.16.1, 13.1) or over the remaining Loss Limit (13.3); else the
    amount at risk is reserved at head office."""
    effects: list[Effect] = []
    card = cards.card_id(data)
    if card is not None:
        state, effects = present(config, state, str(box), card, check=False)
    if cards.usable(config.cards, state.patrons, str(box), f"box {box}", "UTH 11.16.1, 13.1") \
            is None:
        return state, effects
    state, req = _req(state)
    patrons, more = cards.reserve(config.cards, state.patrons, str(box),
                                  at_risk(config, state, box, wagers), state.round, req)
    return replace(state, patrons=patrons), [*effects, *more]


def on_jackpot_other(config: UthConfig, state: UthState, data: Any, box: int) -> Result:
    """15.2.1.1 with 13.1: another player's jackpot wager on box `box` carries that player's
    own card (seat `j<box>`), reserved like a wager."""
    seat = f"j{box}"
    card = cards.card_id(data)
    effects: list[Effect] = []
    if card is not None:
        state, effects = present(config, state, seat, card, check=False)
    if cards.usable(config.cards, state.patrons, seat, f"the jackpot wager on box {box}",
                    "UTH 11.16.1, 13.1") is None:
        return state, effects
    state, req = _req(state)
    patrons, more = cards.reserve(config.cards, state.patrons, seat, config.jackpot_wager,
                                  state.round, req)
    return replace(state, patrons=patrons), [*effects, *more]


def jackpot_chip(config: UthConfig, state: UthState, box: int) -> Result:
    """bet.on after the box's wager was reserved (a late jackpot chip, before the first card:
    15.2.4): the most the box can lose grows by the jackpot wager, so the card's reservation is
    raised to it (13.3); refused at once, with the reason, when what head office said remains
    cannot take it. A refused chip stays refused until removed (deal_ready; the lock leaves
    it out: uncovered)."""
    seat = str(box)
    if not config.cards.required or state.in_round or seat not in state.wagers or (
            seat in state.jackpot_owners):
        return state, []
    record = state.patrons.get(seat)
    if record is None or record["status"] not in (cards.VALID, cards.RESERVING):
        return state, []
    need = at_risk(config, state, box, tuple(state.wagers[seat]))  # type: ignore[arg-type]
    had = (record["granted"] or 0) if record["status"] == cards.VALID else 0
    if record["status"] == cards.VALID and had >= need:
        return state, []
    remaining = record["remaining"]
    if record["status"] == cards.VALID and remaining is not None and need - had > remaining:
        return state, [fx.log(f"box {box}: jackpot chip refused: over the Loss Limit:"
                              f" {cards.dollars(remaining)} remains, the chip risks"
                              f" {cards.dollars(need - had)} (UTH 13.3): remove it",
                              refused=True)]
    state, req = _req(state)
    patrons, more = cards.top_up(config.cards, state.patrons, seat, need, state.round, req)
    return replace(state, patrons=patrons), [*more, fx.log(
        f"box {box}: jackpot chip added to card {record['card']}'s reservation"
        f" ({cards.dollars(need)} at risk, 13.3)")]


def uncovered(config: UthConfig, state: UthState) -> list[int]:
    """Boxes whose own jackpot chip lies on the layout but is not within the card's confirmed
    reservation (refused, or still asked when the first card comes): no jackpot wager (13.3)."""
    if not config.cards.required:
        return []
    out = []
    for box in state.sensors:
        seat = str(box)
        record = state.patrons.get(seat)
        if seat not in state.wagers or seat in state.jackpot_owners or record is None:
            continue
        need = at_risk(config, state, box, tuple(state.wagers[seat]))  # type: ignore[arg-type]
        if record["status"] != cards.VALID or (record["granted"] or 0) < need:
            out.append(box)
    return out


def card_of(state: UthState, seat: str) -> str:
    record = state.patrons.get(seat)
    return f" on card {record['card']}" if record else ""


def deal_ready(config: UthConfig, state: UthState, live: bool = True) -> None:
    """No first card while head office has not answered for a wager's card, nor while a
    jackpot chip its card cannot cover lies on the layout (`live`: the jackpot takes wagers)."""
    seats = [*state.wagers, *(f"j{b}" for b in state.jackpot_owners)]
    waiting = cards.pending(state.patrons, seats)
    if waiting:
        raise InputError(f"waiting for head office to confirm the Player Card of box"
                         f" {', '.join(s.lstrip('j') for s in waiting)} (13.1, 13.3)")
    over = uncovered(config, state) if live else []
    if over:
        raise InputError(f"box {', '.join(map(str, over))}: the jackpot chip is over what the"
                         " Player Card's Loss Limit leaves: remove it (UTH 13.3, 15.2.4)")


def ho_card(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """ho.card: head office's answer (or silence) about a card."""
    in_hand = state.in_round
    got = cards.answer(config.cards, state.patrons, data, state.offline_used, in_hand)
    if got is None:
        text = f"card answer {data.get('req')!r}: no wager waits for it (11.16.3, 11.17.2)"
        return state, [fx.log(text)]
    patrons = {**state.patrons, got.seat: got.record}
    used = dict(state.offline_used)
    card = got.record["card"]
    if got.record["offline"] and got.record["status"] == cards.VALID:
        used[card] = used.get(card, 0) + got.record["asked"]
    elif not data.get("offline"):
        used.pop(card, None)  # head office answered: its own figures hold again
    state = replace(state, patrons=patrons, offline_used=used)
    seat = got.seat
    if got.refused is not None:
        return _refused(state, seat, got.refused)
    if got.invalid is not None:
        return state, [fx.alarm("dealer", f"box {seat.lstrip('j')}: card {card} found invalid"
                                f" during the hand: {got.invalid}; the wager is returned,"
                                " winnings not paid (11.16.2)", "11.16.2")]
    if got.chip is not None:
        return state, [fx.log(f"box {seat}: jackpot chip refused: {got.chip}: remove it",
                              refused=True)]
    if got.capped is not None:
        return state, [fx.alarm("dealer", f"box {seat}: over the Loss Limit: valid up to"
                                f" {cards.dollars(got.capped)}, the excess returned in reverse"
                                " order of the bets placed (11.17, 11.17.1)", "11.17")]
    return state, [fx.log(f"box {seat.lstrip('j')}: card {card} confirmed")]


def _refused(state: UthState, seat: str, why: str) -> Result:
    """Before the deal: the wager goes back to the player with the reason (13.1, 13.3)."""
    if seat.startswith("j"):
        owners = {b: p for b, p in state.jackpot_owners.items() if b != seat[1:]}
        text = f"box {seat[1:]}: jackpot wager of another player refused: {why}"
        return replace(state, jackpot_owners=owners), [fx.log(text, refused=True)]
    wagers = {b: w for b, w in state.wagers.items() if b != seat}
    text = f"box {seat}: wager refused: {why}"
    return replace(state, wagers=wagers), [fx.log(text, refused=True)]


def card_invalid(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.card_invalid {box, reason?}: the supervisor finds the box's card invalid (not the
    player's own, 13.1). Before the deal the wager goes back (11.16.1); in the hand it is
    returned and winnings are not paid (11.16.2); earlier rounds stand (11.16.3)."""
    box = fields.box(data, config.boxes)
    record = state.patrons.get(str(box))
    if record is None:
        raise InputError(f"box {box} has no Player Card")
    why = fields.reason(data, "card found invalid")
    if state.in_round:
        record = {**record, "status": cards.INVALID, "reason": why, "req": None}
        state = replace(state, patrons={**state.patrons, str(box): record})
        return state, [fx.alarm("dealer", f"box {box}: card {record['card']} invalid: {why};"
                                " the wager is returned, winnings not paid (11.16.2)", "11.16.2")]
    record = {**record, "status": cards.REFUSED, "reason": why, "req": None}
    return _refused(replace(state, patrons={**state.patrons, str(box): record}), str(box), why)


def restrict(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.card_restrict {card, by, reason?}: 13.4, recorded for head office; the card is
    refused at this table from the next wager on (a wager already dealt stands)."""
    card = cards.card_id(data)
    if card is None:
        raise InputError("card is required")
    by = cards.who(data)
    why = fields.reason(data, "restricted by the casino supervisor")
    patrons = dict(state.patrons)
    effects: list[Effect] = [cards.restricted(card, by, why),
                             fx.log(f"card {card} restricted by {by[:64]}: {why} (13.4)")]
    for seat, r in state.patrons.items():
        if r["card"] != card:
            continue
        if state.in_round and (seat in state.wagers or seat[1:] in state.jackpot_owners):
            patrons[seat] = {**r, "restricted": True}  # refused once this round ends
            continue
        patrons[seat] = {**r, "status": cards.REFUSED, "reason": f"restricted (13.4): {why}"}
        state = replace(state, patrons=patrons)
        if state.phase == BETTING and (seat in state.wagers or seat[1:] in state.jackpot_owners):
            state, more = _refused(state, seat, f"restricted (13.4): {why}")
            effects += more
    return replace(state, patrons=patrons), effects


def chips_declared(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.chips_declared {card, amount, kind}: 13.2, recorded for head office."""
    card = cards.card_id(data)
    if card is None:
        raise InputError("card is required")
    amount = fields.cents(data, "amount")
    kind = fields.text(data, "kind")
    effect = cards.declared(state.round, card, amount, kind)
    return state, [effect, fx.log(f"card {card}: chips declared, {kind} {amount} c (13.2)")]


# -- settlement ------------------------------------------------------------------------------
def settle_boxes(config: UthConfig, state: UthState, summary_boxes: list[dict[str, Any]]
                 ) -> tuple[list[dict[str, Any]], list[Effect]]:
    """Each settled box as its card allows (11.16.2 returned with no winnings; 11.17 valid up to
    the limit, the excess returned in reverse order), with its card; and `card_settled` for
    every card that held a reservation at head office this round (none when it was not asked:
    cards not required, or a standalone table)."""
    out: list[dict[str, Any]] = []
    rows: list[tuple[dict[str, Any], int, int, int]] = []
    seen: set[str] = set()
    for b in summary_boxes:
        seat = str(b["box"])
        record = state.patrons.get(seat)
        if record is None:
            out.append(b)
            continue
        seen.add(seat)
        b = {**b, "card": record["card"]}
        returned = 0
        if record["status"] == cards.INVALID:
            b = _void_box(b, record)
            returned = b["placed"]
        elif record["found"] is not None:
            b, returned = _capped_box(b, record["found"])
        out.append(b)
        rows.append((record, b["placed"] - returned, b["net"], returned))
    for seat, record in state.patrons.items():
        if seat in seen or not record.get("granted"):
            continue
        net = 0
        wagered = 0
        if seat.startswith("j") and seat[1:] in state.jackpot_owners:
            wagered = record["granted"]  # the jackpot wager went into the pool (15.3)
            net = -wagered if record["status"] != cards.INVALID else 0
        rows.append((record, wagered, net, 0))
    return out, cards.settled_cards(state.round, rows, False) if config.cards.asks else []


def _void_box(b: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """11.16.2: every spot returned as placed, no winnings."""
    spots = [{**s, "returned": s["placed"], "net": 0, "rule": "11.16.2"} for s in b["spots"]]
    return {**b, "spots": spots, "returned": b["placed"], "net": 0,
            "card_invalid": record["reason"]}


def _capped_box(b: dict[str, Any], valid: int) -> tuple[dict[str, Any], int]:
    """11.17: the bets valid up to `valid`; the excess (returned in reverse order, 11.17.1) goes
    back untouched and each spot settles on its valid part at its own odds (a win's fraction of
    a cent rounds down)."""
    spots = {s["spot"]: s for s in b["spots"]}
    bets = [(name, spots[name]["placed"]) for name in ORDER if name in spots]
    kept, back = cards.return_excess(bets, valid)
    new_spots, excess_rows, total_back = [], [], 0
    for (name, keep), (_, ret) in zip(kept, back, strict=True):
        s = spots[name]
        placed = s["placed"]
        net = s["net"] * keep // placed if placed else 0
        new_spots.append({**s, "valid": keep, "excess_returned": ret, "net": net,
                          "returned": placed + net})
        if ret:
            excess_rows.append({"bet": name, "returned": ret})
            total_back += ret
    net = sum(s["net"] for s in new_spots)
    b = {**b, "spots": new_spots, "net": net, "returned": b["placed"] + net,
         "loss_limit": {"valid": valid, "excess": list(reversed(excess_rows)),
                        "rule": "11.17, 11.17.1"}}
    return b, total_back


def voided(config: UthConfig, state: UthState, forfeited: dict[str, int] | None = None
           ) -> list[Effect]:
    """A void round: every card's reservation released. Nothing won or lost, but for a box
    whose wagers a supervisor forfeited after an invalidation for fraud (13.9.2, 13.10): the
    house keeps them, so the card's net is that loss (it counts toward the Loss Limit, 13.3)."""
    lost = forfeited or {}
    if not config.cards.asks:
        return []
    return cards.settled_cards(state.round, [
        (r, lost.get(seat, 0), -lost.get(seat, 0), 0)
        for seat, r in state.patrons.items() if r.get("granted")], True)


def next_patrons(state: UthState) -> dict[str, Any]:
    patrons = {s: r for s, r in state.patrons.items() if not r.get("restricted")}
    return cards.after_round(patrons)

