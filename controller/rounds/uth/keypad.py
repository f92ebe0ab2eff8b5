"""The dealer keypad during the round: misdeals and voids (11), a shuffler's card. Decisions,
streets and the dealer's hand are play.py's steps."""

from __future__ import annotations

from typing import Any

from controller.rounds import fields
from controller.rounds.base import Effect, Now
from controller.rounds.uth import effects as fx
from controller.rounds.uth import play as rnd
from controller.rounds.uth.state import DEALING, UthConfig, UthState, replace
from shared.errors import InputError

Result = tuple[UthState, list[Effect]]


# -- dealer keypad during the round --------------------------------------------------------------
# A misdeal's cause -> its clause (docs/rounds-uth.md, "Irregularities").
MISDEAL_CAUSES = {
    "wrong_count": "11.1",  # wrong number of cards to a player, the dealer or the board
    "cards_revealed": "11.2",  # a card revealed during the deal
    "dealer_revealed": "11.4",  # the dealer's hole card(s) revealed during the round
    "community_revealed": "11.5",  # a community card revealed early: players keep their options
    "no_wager_hand": "11.6",  # a hand dealt to a box without Ante and Blind
}


def misdeal(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.misdeal {reason, box?, handled?}: each cause gets its own clause's outcome."""
    reason = fields.text(data, "reason", "wrong_count")
    if reason not in MISDEAL_CAUSES:
        raise InputError(f"reason {reason!r}: one of {sorted(MISDEAL_CAUSES)}")
    if not state.in_round:
        raise InputError("no round in progress")
    if reason == "wrong_count":
        # 11.1: every wager invalid, 11.3: void, whenever it is found and whatever was played.
        return _misdeal_void(config, state, "misdeal: wrong_count", "11.1")
    if reason == "cards_revealed":
        # 11.2 "during the deal": until the first decision on the dealt hands.
        if state.phase not in (DEALING, rnd.PREFLOP) or state.decisions or state.checks:
            raise InputError(f"a card revealed after the deal ({state.phase}) is no misdeal (11.2):"
                             " play continues")
        return _misdeal_void(config, state, "misdeal: cards_revealed", "11.2")
    if reason == "dealer_revealed":
        return _dealer_revealed(config, state)
    if reason == "community_revealed":
        text = ("community card revealed early: each player keeps the option to bet, check or fold"
                " (11.5)")
        return state, [fx.alarm("technician", text, "11.5")]
    return _no_wager_hand(config, state, data)


def _misdeal_void(config: UthConfig, state: UthState, why: str, rule: str) -> Result:
    # 11.3: all wagers void (Play wagers too), a new round is dealt.
    return rnd.void(config, state, [fx.alarm("technician", why, rule)], why, rule)


def _dealer_revealed(config: UthConfig, state: UthState) -> Result:
    """11.4.1: no Play wager made before the flop was revealed -> misdeal; 11.4.2: else play
    continues. Which Play wagers count is a profile option (docs: "What a regulator should
    confirm"): by default any made so far; `exposure_preflop_only` counts only those made
    before the flop (3x/4x)."""
    plays = rnd.preflop_plays(state) if config.exposure_preflop_only else rnd.any_play(state)
    if plays:
        text = "dealer hole card revealed after a Play wager: play continues as normal (11.4.2)"
        return state, [fx.alarm("technician", text, "11.4.2")]
    return _misdeal_void(config, state, "misdeal: dealer_revealed", "11.4.1")


def _no_wager_hand(config: UthConfig, state: UthState, data: Any) -> Result:
    """11.6: a hand dealt to a box with no Ante/Blind. Nobody handled their cards: the round is
    void (11.6.1). Someone did: only that hand is void (11.6.2); it carries no wager, so nothing
    is returned and the round goes on; the hand is recorded with the round."""
    box = fields.box(data, config.boxes)
    if str(box) in state.wagers:
        raise InputError(f"box {box} has an Ante and a Blind: 11.6 is about a box without them")
    if not fields.flag(data, "handled", False):
        return _misdeal_void(config, state, f"misdeal: hand dealt to box {box} without a wager",
                             "11.6.1")
    if box in state.void_hands:
        raise InputError(f"box {box}: its hand is already void (11.6.2)")
    state = replace(state, void_hands=sorted([*state.void_hands, box]))
    text = (f"hand dealt to box {box} without Ante/Blind: that hand alone is void, play continues"
            " (11.6.2)")
    return state, [fx.alarm("technician", text, "11.6.2")]


# An invalidated outcome (13.9): its cause -> the clauses; the wagers refunded (13.10).
INVALIDATED_RULE = {"disruption": "13.9.1, 13.10", "fraud": "13.9.2, 13.10"}


def void(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.void {reason, rule?}: a supervisor voids the round (11.6.1, 13.9).
    dealer.void {kind: "invalidated", ...}: see `_invalidated`. The round record names who
    voided it when the control socket said (`operator`)."""
    if not state.in_round:
        raise InputError("no round in progress")
    if fields.text(data, "kind", "void") == "invalidated":
        return _invalidated(config, state, data)
    reason = fields.text(data, "reason", "voided by the supervisor")
    rule = fields.text(data, "rule", "13.9")
    who = fields.operator(data)
    return rnd.void(config, state, [fx.alarm("technician", reason, rule)], reason, rule,
                    {"voided_by": who} if who else None)


def _invalidated(config: UthConfig, state: UthState, data: Any) -> Result:
    """dealer.void {kind: "invalidated", cause: "disruption"|"fraud", reason, forfeit?:
    [boxes]}: a casino supervisor invalidates the outcome, the game disrupted by civil commotion,
    fire, riot, brawl, robbery or an act of God (13.9.1), or by a fraud affecting it (13.9.2);
    the wagers are refunded but those of the boxes in `forfeit`, whose player perpetrated the
    fraud, which the supervisor may direct forfeited (13.10)."""
    who = fields.operator(data, "a casino supervisor invalidates the outcome (13.9): through the"
                                " control socket, `tablectl dealer void kind=invalidated ...`,"
                                " which names who; not from the keypad")
    cause = fields.text(data, "cause")
    if cause not in INVALIDATED_RULE:
        raise InputError(f"cause {cause!r}: one of {sorted(INVALIDATED_RULE)}")
    reason = fields.text(data, "reason")
    forfeit = fields.boxes(data, "forfeit", config.boxes) or []
    if forfeit and cause != "fraud":
        raise InputError("only the wagers of a fraud's perpetrators are forfeited (13.10,"
                         " 13.9.2): cause must be fraud")
    unwagered = [b for b in forfeit if str(b) not in state.wagers]
    if unwagered:
        raise InputError(f"boxes {unwagered} have no wager this round to forfeit")
    rule = INVALIDATED_RULE[cause]
    record = {"kind": "invalidated", "cause": cause, "voided_by": who}
    alarm = fx.alarm("technician", f"outcome invalidated: {reason}", rule)
    return rnd.void(config, state, [alarm], reason, rule, record, frozenset(forfeit))


def card(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    if state.dealt_by:
        raise InputError(f"the table deals from the {state.dealt_by} (12.2.3): a card from the"
                         " shuffler is no card of the round")
    return rnd.on_card(config, state, data, now)
