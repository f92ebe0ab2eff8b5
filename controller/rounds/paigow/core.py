"""What every part of the Pai Gow round machine shares: configuration, the bank at hand, the
display, opening a round, returning wagers; the rule citations per profile and the effects."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from controller.events import EffectKind
from controller.games.paigow.bank import BankHolder, BankState, bank_open, offer_order
from controller.games.paigow.cuts import CutSource
from controller.games.paigow.delivery import CLOCKWISE_RULE, Drop, delivery_plan
from controller.games.paigow.profiles import Profile
from controller.games.paigow.wagers import Wager, house_way_boxes
from controller.rounds import cards
from controller.rounds.base import Effect, Now
from controller.rounds.paigow.state import (
    JSON,
    PaiGowConfig,
    PaiGowState,
    Phase,
    bank_json,
    bank_state,
)
from shared.errors import InputError

Result = tuple[PaiGowState, list[Effect]]
Data = Mapping[str, Any]  # an event's data, checked by the machine to be an object

VOID_RULE = {Profile.NSW: "NSW 15.12", Profile.NZ: "NZ 12.13", Profile.ACT: "ACT 13.9"}
UNDER_MINIMUM_RULE = "ACT 5.1(c)"  # further wagers under the minimum returned once advised
# A supervisor invalidates the outcome: a disruption (civil commotion, fire, riot, brawl,
# robbery, an act of God) or a fraud; the wagers refunded. NSW 16.6 lets the supervisor forfeit
# the fraudster's wagers; ACT 15.4 refunds all. NZ has no such rule.
INVALIDATED_RULE = {
    Profile.NSW: {"disruption": "NSW 16.5.1, 16.6", "fraud": "NSW 16.5.2, 16.6"},
    Profile.ACT: {"disruption": "ACT 15.3(a), 15.4", "fraud": "ACT 15.3(b), 15.4"},
}
FORFEIT_RULE = {Profile.NSW: "NSW 16.6"}  # the fraudster's wagers (NSW 16.5.2) only
TILE_VOID_RULE = {Profile.NSW: "NSW 15.17.2"}  # missing or foreign tile; NZ and ACT say nothing
# The dealer exposed two or more tiles of a hand: its player may call it void before viewing the
# rest; the player/banker's doing so voids the round (ACT has no player/banker version).
HAND_VOID_RULE = {Profile.NSW: "NSW 15.3.1", Profile.NZ: "NZ 12.3(a)", Profile.ACT: "ACT 13.7"}
BANKER_VOID_RULE = {Profile.NSW: "NSW 15.3.2", Profile.NZ: "NZ 12.3(b)"}
# Tiles exposed in the house's hand: the hand is played.
HOUSE_EXPOSED_RULE = {Profile.NSW: "NSW 15.5", Profile.NZ: "NZ 12.5", Profile.ACT: "ACT 13.4"}
RESHAKE_RULE = {Profile.NSW: "NSW 8.3", Profile.NZ: "NZ 9.8", Profile.ACT: "ACT 13.1"}
HOUSE_BANKS_RULE = {Profile.NSW: "NSW 6.9", Profile.NZ: "NZ 5.6", Profile.ACT: "ACT 6.8"}
COVER_RULE = {Profile.NSW: "NSW 13.2.2", Profile.NZ: "NZ 11.2(b)", Profile.ACT: "ACT 6.4"}
LOCK_RULE = {Profile.NSW: "NSW 9.6-9.7", Profile.NZ: "NZ 9.4", Profile.ACT: "ACT 7.1"}
FIRST_BOX_RULE = {Profile.NSW: "NSW 8.4.1", Profile.NZ: "NZ 9.9", Profile.ACT: "ACT 4.2"}
OFFER_RULE = {Profile.NSW: "NSW 6.1", Profile.NZ: "NZ 5.2, 5.4", Profile.ACT: "ACT 6.7"}
OFF_RULE = "NSW 15.9.3-15.9.4, NZ 12.10"
# When the OFF-box draw may be made. NSW 15.9.2 removes a playing area "from subsequent rounds
# of play" and both draws shake the round's dice (NSW 15.9.3, NZ 12.10): so between rounds, in
# betting, before no more bets. ACT has no rule removing a box from play.
OFF_DRAW_WHEN = {
    Profile.NSW: "NSW 15.9.1-15.9.3: between rounds, before no more bets",
    Profile.NZ: "NZ 12.9-12.10: between rounds, before no more bets",
}


def off_draw_refusal(profile: Profile, phase: str) -> str:
    """Why `dealer.off_draw` is refused in `phase` (the route accepts it only in betting)."""
    if profile not in OFF_DRAW_WHEN:
        return (f"profile {profile} has no rule taking a playing area out of play: no OFF draw"
                " (the draw is NSW 15.9 and NZ 12.9-12.10 only)")
    # No "box" in the words: the guard's contract test tells its refusals by that.
    return f"the OFF draw is made {OFF_DRAW_WHEN[profile]}; not in state {phase}"
HOUSE_BOX_RULE = "NSW 6.10, NZ 11.1(b), ACT 6.9"
BANKER_BOX_RULE = "NSW 9.16, NZ 6.5"
PLAYERS_RULE = "NSW 9.9, NZ 6.5, ACT 7.4"
SHARED_BANK_RULE = {Profile.NSW: "NSW 6.8", Profile.NZ: "NZ 5.5", Profile.ACT: "ACT 6.6"}
CUT_SOURCES = {
    "banker": CutSource.PLAYER_BANKER,
    "supervisor": CutSource.SUPERVISOR,
    "random": CutSource.RANDOM,
}


class Refused(InputError):
    """An event refused in a way the dealer or a technician must see: an alarm, not a log line."""


def bankers(state: PaiGowState) -> set[str]:
    """The player/banker and the players sharing the bank (NSW 6.8, NZ 5.5, ACT 6.6)."""
    banker = state.banker or {}
    names = set(banker.get("shared_with") or [])
    return names | ({banker["player"]} if banker.get("player") else set())


def banker_json(player: str | None, funds: int | None, shared_with: list[str]) -> JSON:
    # `shared_with` only when the bank is shared: a snapshot of ordinary play keeps its bytes.
    return {"player": player, "funds": funds, **({"shared_with": shared_with} if shared_with
                                                  else {})}


def log(text: str, **extra: Any) -> Effect:
    return Effect(EffectKind.LOG, {"text": text, **extra})


def alarm(text: str, severity: str = "warning") -> Effect:
    return Effect(EffectKind.ALARM, {"severity": severity, "text": text})


SHAKE = Effect(EffectKind.DEVICE, {"device": "shaker", "command": "shake", "args": {}})


GAME = "paigow"


def bank_of(config: PaiGowConfig, state: PaiGowState) -> BankState:
    return bank_state(config, state.bank)


def show(state: PaiGowState, mode: str, text: str, **extra: Any) -> Result:
    display = {"mode": mode, "text": text, **extra}
    return replace(state, display=display), [Effect(EffectKind.DISPLAY, display)]


def open_round(
    config: PaiGowConfig, state: PaiGowState, number: int, bank: BankState, now: Now,
    last_round: JSON,
) -> Result:
    """Round `number` opens for betting under `bank`."""
    bj = bank_json(bank)
    banker = None
    if bank.holder is not BankHolder.HOUSE and state.banker is not None:
        banker = banker_json(state.banker.get("player"), None,  # a wager per round
                             state.banker.get("shared_with") or [])
    state = replace(
        state, phase=Phase.BETTING, number=number, bank=bj, bank_at_open=bj, banker=banker,
        banker_at_open=banker,
        last_round=last_round, opened_at=now.utc, wagers=[], cut_choice=None, steal=0,
        reshakes=0, dice=None, first_box=None, cut=None, off_rolls=[], fault=None,
        void_hands=[], controls={}, miscounts=[], lajas=[],
        patrons=cards.after_round(state.patrons),
    )
    state, effects = show(state, "betting", f"ROUND {number} PLACE YOUR BETS")
    if bank_open(bank):
        effects.append(log(
            f"round {number}: bank offered counter-clockwise to boxes {bank_offer(config, state)}"
            f" ({OFFER_RULE[config.profile]})"
        ))
    return state, effects


def delivery_of(config: PaiGowConfig, state: PaiGowState) -> tuple[Drop, ...]:
    """The announced round's delivery: each group of the cut to its box, in order."""
    if state.first_box is None:
        return ()
    wagered = {w["box"] for w in state.wagers} if state.wagers else None
    return delivery_plan(config.profile, state.first_box, bank_box=bank_of(config, state).box,
                         wagered=wagered, n_boxes=config.boxes,
                         clockwise_delivery=config.clockwise_delivery)


def delivery_rule(config: PaiGowConfig) -> str:
    if config.clockwise_delivery is None:
        return CLOCKWISE_RULE[config.profile][1]
    return "the table's clockwise_delivery option"


def house_way_by_dealer(config: PaiGowConfig, state: PaiGowState) -> dict[int, str]:
    """NZ 7.2: box -> the player who would control it, set by the dealer the house way."""
    wagers = [Wager(w["box"], w["player"], w["amount"], w["seated"], w["distance_to_dealer"])
              for w in state.wagers]
    return house_way_boxes(wagers, config.profile, state.controls)


def bank_offer(config: PaiGowConfig, state: PaiGowState) -> list[int]:
    opening = bank_state(config, state.bank_at_open)
    if not bank_open(opening):
        return []
    lr = state.last_round
    if lr["recorded"]:
        occupied = {b for boxes in lr["players"].values() for b in boxes}
    else:
        occupied = set(range(1, config.boxes + 1))
    return offer_order(opening, occupied - set(state.off_boxes))


def return_wagers(state: PaiGowState, keep: Callable[[JSON], bool], why: str) -> Result:
    """Drop the wagers `keep` rejects, with a log line each (the chips go back)."""
    kept = [w for w in state.wagers if keep(w)]
    effects = [
        log(f"wager of {w['player']} on box {w['box']} ({w['amount']} c) returned: {why}")
        for w in state.wagers if not keep(w)
    ]
    return replace(state, wagers=kept), effects
