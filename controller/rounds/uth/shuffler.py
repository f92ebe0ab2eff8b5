"""The shuffler and its decks: ready, malfunction (12.1, 12.2), deck checks (3.5, 11.7)."""

from __future__ import annotations

from typing import Any

from controller.events import EffectKind
from controller.rounds import fields
from controller.rounds.base import Effect, Now
from controller.rounds.uth import effects as fx
from controller.rounds.uth import play as rnd
from controller.rounds.uth.state import (
    BETTING,
    DEALING,
    READY,
    SHUFFLING,
    UthConfig,
    UthState,
    replace,
)
from shared.errors import InputError

Result = tuple[UthState, list[Effect]]


# -- shuffler (4, 11.7, 12) --------------------------------------------------------------------
def _deck_of(config: UthConfig, state: UthState, data: Any) -> int:
    deck = data.get("deck", state.deck)
    if deck not in config.decks or isinstance(deck, bool):
        raise InputError(f"unknown deck {deck!r}: this table uses {list(config.decks)}")
    return deck


def ready(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    deck = _deck_of(config, state, data)
    if deck != state.deck or state.deck_status != SHUFFLING:
        raise InputError(f"deck {deck} ready; expected deck {state.deck} ({state.deck_status})")
    return replace(state, deck_status=READY), [fx.log(f"deck {deck} shuffled")]


def malfunction(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """shuffler.jam / shuffler.fault {reason}: before the round's first card the cards are
    reshuffled (12.1); after it the round is void (12.2)."""
    reason = str(data.get("reason", "shuffler malfunction"))
    if state.in_round:
        why = f"shuffler malfunction mid-round: {reason}"
        alarm = fx.alarm("technician", why + "; continue with another device (12.2.3)", "12.2")
        return rnd.void(config, state, [alarm], why, "12.2")
    if state.deck_status == SHUFFLING:
        # Its shuffle is asked for already and failed (a shuffler left unplugged fails each
        # retry): asked again, and said as it is, not "reshuffled" once more.
        text = f"shuffler: {reason}; deck {state.deck} still to be shuffled, asked again"
    else:
        text = f"shuffler: {reason}; deck {state.deck} reshuffled"
    alarm = fx.alarm("technician", text, "12.1")
    return _reshuffle(state), [alarm, fx.shuffle(state.deck)]


def _reshuffle(state: UthState) -> UthState:
    """The round's deck goes back into the shuffler; the dealer presses deal again later."""
    phase = BETTING if state.phase == DEALING else state.phase
    return replace(state, deck_status=SHUFFLING, phase=phase, dispense=0)


def deck_check(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """deck.check {deck?, ok, missing, extra, duplicate, unreadable}: a bad deck voids the round
    where it is found (11.7.2) and stays out of play until a good check (11.7.3)."""
    deck = _deck_of(config, state, data)
    problems = _deck_problems(data)
    if not problems:
        return _deck_good(state, deck)
    why = f"deck {deck}: {'; '.join(problems)}"
    alarm = fx.alarm("surveillance", why + ": notify surveillance and an inspector", "11.7.4")
    effects = [alarm]
    if state.in_round:
        state, effects = rnd.void(config, state, effects, why, "11.7")
    state = replace(state, suspect=sorted({*state.suspect, deck}))
    if deck == state.deck and state.phase == DEALING:
        state = replace(state, phase=BETTING, dispense=0)
    return state, effects


def deck_confirmed(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.deck_confirmed {deck?}: the dealer checked a flagged deck by hand (11.7.3), the
    alternative to the shuffler's deck check."""
    deck = _deck_of(config, state, data)
    if deck not in state.suspect:
        raise InputError(f"deck {deck} is not waiting for a check (11.7.3)")
    if state.in_round and deck == state.deck:
        raise InputError(f"deck {deck} is in play: confirm it between rounds")
    return _deck_good(state, deck, " (confirmed by the dealer, 11.7.3)")


def _deck_good(state: UthState, deck: int, by: str = "") -> Result:
    if deck not in state.suspect:
        return state, [fx.log(f"deck {deck} checked: complete")]
    state = replace(state, suspect=[d for d in state.suspect if d != deck])
    effects = [fx.log(f"deck {deck} checked complete after 11.7; back in play{by}")]
    if deck == state.deck and not state.in_round:
        # Replaced cards are shuffled before use (4.7).
        return _reshuffle(state), [*effects, fx.shuffle(deck)]
    return state, effects


def check_deck(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.deck_check {deck?}: ask the shuffler to read a deck (3.5, 11.7.3)."""
    if state.in_round:
        raise InputError("no deck check during a round")
    deck = _deck_of(config, state, data)
    command = {"device": "shuffler", "command": "deck_check", "args": {"deck": deck}}
    return state, [Effect(EffectKind.DEVICE, command)]


def _deck_problems(data: Any) -> list[str]:
    out = []
    for key in ("missing", "extra", "duplicate"):
        items = data.get(key) or []
        if not isinstance(items, list):
            raise InputError(f"deck.check: {key} must be a list")
        if items:
            out.append(f"{key} {', '.join(map(str, items))}")
    unreadable = fields.cents(data, "unreadable", 0)
    if unreadable:
        out.append(f"{unreadable} unreadable")
    ok = data.get("ok", not out)
    if not isinstance(ok, bool):
        raise InputError("deck.check: ok must be true or false")
    if not ok and not out:
        out.append("deck check failed")
    return out


