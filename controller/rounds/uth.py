"""Ultimate Texas Hold'em round state machine (issue 4; docs/rounds-uth.md is its contract).

betting -> dealer.deal (7.1) -> dealing: the first card out locks every wager and the jackpot
wagers (5.5) -> deal mapping (7.2/7.3) -> preflop / flop / river decisions (9.1-9.3) ->
dealer.dealer_hand: settlement (10), jackpot (15.2) -> next round, the used deck reshuffled (4.1.2)
while the other is dealt (4.2). Irregularities: misdeal (11.1-11.4), missing or foreign card
(11.7), shuffler malfunction (12.1 / 12.2), jackpot equipment failure (11.11).

`step` is pure: it reads only (state, event, now) and never raises on input from outside.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from controller.errors import InputError
from controller.games.uth.cards import format_card
from controller.games.uth.wagers import BoxWagers
from controller.rounds import uth_effects as fx
from controller.rounds import uth_jackpot as jackpot
from controller.rounds import uth_round as rnd
from controller.rounds.base import JSON, Effect, Event, Now
from controller.rounds.uth_state import (
    BETTING,
    CLOSED,
    DEALING,
    DECIDING,
    READY,
    SHUFFLING,
    UthConfig,
    UthState,
    initial_state,
    replace,
    state_from_json,
    state_to_json,
)

Result = tuple[UthState, list[Effect]]

__all__ = ["UthConfig", "UthMachine", "UthState"]


class UthMachine:
    """The `RoundMachine` for UTH. Holds configuration only; all state is in `UthState`."""

    game = "uth"

    def __init__(self, config: UthConfig | None = None) -> None:
        self.config = config or UthConfig()

    def initial(self) -> UthState:
        return initial_state(self.config)

    def step(self, state: UthState, event: Event, now: Now) -> Result:
        handler = _HANDLERS.get(event.kind)
        try:
            if handler is None:
                raise InputError(f"event {event.kind!r} is not part of the UTH vocabulary")
            if not isinstance(event.data, Mapping):
                raise InputError(f"{event.kind}: data must be an object")
            new, effects = handler(self.config, state, event.data, now)
        except InputError as exc:
            new, effects = state, [fx.log(f"{event.kind} refused: {exc}", refused=True)]
        except Exception as exc:  # a bug must not crash-loop the daemon on replay
            text = f"{event.kind}: internal error {type(exc).__name__}: {exc}"
            new, effects = state, [fx.alarm("technician", text)]
        new, clock_fx = jackpot.refresh(self.config, new, now)
        return new, effects + clock_fx

    def to_json(self, state: UthState) -> JSON:
        return state_to_json(state)

    def from_json(self, data: JSON) -> UthState:
        return state_from_json(data)

    def status(self, state: UthState) -> JSON:
        return status(self.config, state)

    def seat_view(self, state: UthState) -> JSON:
        return status(self.config, state, hole_cards=True)

    def resume(self, state: UthState) -> list[Effect]:
        return resume(self.config, state)


# -- table and betting -------------------------------------------------------------------------
def _open(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    if state.phase != CLOSED:
        raise InputError("the table is already open")
    return replace(state, phase=BETTING), [fx.log("table open"), *resume(config, state)]


def _close(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    if state.phase != BETTING or state.wagers:
        raise InputError("close the table between rounds, with no wagers on the layout")
    return replace(state, phase=CLOSED), [fx.log("table closed")]


def _wager(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.wager {box, ante, blind=ante, trips=0}: place or change a box's wagers (5.3, 5.4)."""
    box = fx.box_of(data, config.boxes)
    ante = fx.cents(data, "ante")
    wagers = BoxWagers(
        ante, fx.cents(data, "blind", default=ante), fx.cents(data, "trips", default=0)
    )
    _betting_open(state)
    rnd.engine_round(state).place(box, wagers)  # the engine refuses after the first card (5.5)
    new = {**state.wagers, str(box): [wagers.ante, wagers.blind, wagers.trips]}
    text = f"box {box}: ante {wagers.ante} blind {wagers.blind} trips {wagers.trips}"
    return replace(state, wagers=new), [fx.log(text)]


def _withdraw(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    box = fx.box_of(data, config.boxes)
    _betting_open(state)
    rnd.engine_round(state).withdraw(box)  # 5.5
    if str(box) not in state.wagers:
        raise InputError(f"box {box} has no wager")
    new = {b: w for b, w in state.wagers.items() if b != str(box)}
    return replace(state, wagers=new), [fx.log(f"box {box}: wagers withdrawn")]


def _betting_open(state: UthState) -> None:
    """Before the first card only while betting; after it the engine refuses (5.5)."""
    if not state.in_round and state.phase != BETTING:
        raise InputError(f"betting is closed ({state.phase}; 7.1 no more bets)")


def _bet_on(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return jackpot.bet_on(config, state, fx.box_of(data, config.boxes), now)


def _bet_off(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return jackpot.bet_off(config, state, fx.box_of(data, config.boxes))


def _deal(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.deal: no more bets (7.1); the shuffler dispenses the round's cards."""
    if state.phase == DEALING and not state.in_round:
        count = state.dispense
        return state, [fx.log("deal asked again"), fx.dispense(count, state.deck)]
    if state.phase != BETTING:
        raise InputError(f"dealer.deal while {state.phase}")
    if not state.wagers:
        raise InputError("no box has an Ante and a Blind (5.3, 7.2.4)")
    if not rnd.deck_usable(state):
        why = "suspect, to be checked (11.7.3)" if state.deck in state.suspect else "not shuffled"
        raise InputError(f"deck {state.deck} is {why}")
    count = rnd.needed(state)
    state = replace(state, phase=DEALING, dispense=count)
    return state, [fx.log(f"no more bets: dealing {count} cards"), fx.dispense(count, state.deck)]


# -- shuffler (4, 11.7, 12) --------------------------------------------------------------------
def _deck_of(config: UthConfig, state: UthState, data: Any) -> int:
    deck = data.get("deck", state.deck)
    if deck not in config.decks or isinstance(deck, bool):
        raise InputError(f"unknown deck {deck!r}: this table uses {list(config.decks)}")
    return deck


def _ready(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    deck = _deck_of(config, state, data)
    if deck != state.deck or state.deck_status != SHUFFLING:
        raise InputError(f"deck {deck} ready; expected deck {state.deck} ({state.deck_status})")
    return replace(state, deck_status=READY), [fx.log(f"deck {deck} shuffled")]


def _malfunction(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """shuffler.jam / shuffler.fault {reason}: before the round's first card the cards are
    reshuffled (12.1); after it the round is void (12.2)."""
    reason = str(data.get("reason", "shuffler malfunction"))
    if state.in_round:
        why = f"shuffler malfunction mid-round: {reason}"
        alarm = fx.alarm("technician", why + "; continue with another device (12.2.3)", "12.2")
        return rnd.void(config, state, [alarm], why, "12.2")
    alarm = fx.alarm("technician", f"shuffler: {reason}; deck {state.deck} reshuffled", "12.1")
    return _reshuffle(state), [alarm, fx.shuffle(state.deck)]


def _reshuffle(state: UthState) -> UthState:
    """The round's deck goes back into the shuffler; the dealer presses deal again later."""
    phase = BETTING if state.phase == DEALING else state.phase
    return replace(state, deck_status=SHUFFLING, phase=phase, dispense=0)


def _deck_check(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
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


def _deck_good(state: UthState, deck: int) -> Result:
    if deck not in state.suspect:
        return state, [fx.log(f"deck {deck} checked: complete")]
    state = replace(state, suspect=[d for d in state.suspect if d != deck])
    effects = [fx.log(f"deck {deck} checked complete after 11.7; back in play")]
    if deck == state.deck and not state.in_round:
        # Replaced cards are shuffled before use (4.7).
        return _reshuffle(state), [*effects, fx.shuffle(deck)]
    return state, effects


def _check_deck(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.deck_check {deck?}: ask the shuffler to read a deck (3.5, 11.7.3)."""
    if state.in_round:
        raise InputError("no deck check during a round")
    deck = _deck_of(config, state, data)
    command = {"device": "shuffler", "command": "deck_check", "args": {"deck": deck}}
    return state, [Effect("device", command)]


def _deck_problems(data: Any) -> list[str]:
    out = []
    for key in ("missing", "extra", "duplicate"):
        items = data.get(key) or []
        if not isinstance(items, list):
            raise InputError(f"deck.check: {key} must be a list")
        if items:
            out.append(f"{key} {', '.join(map(str, items))}")
    unreadable = fx.cents(data, "unreadable", default=0)
    if unreadable:
        out.append(f"{unreadable} unreadable")
    ok = data.get("ok", not out)
    if not isinstance(ok, bool):
        raise InputError("deck.check: ok must be true or false")
    if not ok and not out:
        out.append("deck check failed")
    return out


# -- dealer keypad during the round --------------------------------------------------------------
def _misdeal(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.misdeal {reason}: cards_revealed (11.2), dealer_revealed (11.4), wrong_count (11.1).
    During the deal always; before the flop only while no Play wager was made (11.4.1/11.4.2)."""
    reason = fx.text(data, "reason", default="wrong_count")
    rule = {"cards_revealed": "11.2", "dealer_revealed": "11.4.1"}.get(reason, "11.1")
    if not state.in_round:
        raise InputError("no round in progress")
    if state.phase not in (DEALING, rnd.PREFLOP):
        raise InputError(f"no misdeal once the flop is revealed ({state.phase}); use dealer.void")
    if state.phase == rnd.PREFLOP and rnd.any_play(state):
        raise InputError("a Play wager has been made: play continues as normal (11.4.2)")
    why = f"misdeal: {reason}"
    return rnd.void(config, state, [fx.alarm("technician", why, rule)], why, rule)


def _void(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """dealer.void {reason, rule?}: a supervisor voids the round (11.6.1, 13.9)."""
    if not state.in_round:
        raise InputError("no round in progress")
    reason = fx.text(data, "reason", default="voided by the supervisor")
    rule = fx.text(data, "rule", default="13.9")
    return rnd.void(config, state, [fx.alarm("technician", reason, rule)], reason, rule)


def _card(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return rnd.on_card(config, state, data, now)


def _dealt(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return rnd.on_dealt(config, state)


def _decision(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return rnd.on_decision(config, state, data)


def _flop(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return rnd.on_street(config, state, "dealer.flop")


def _turn_river(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return rnd.on_street(config, state, "dealer.turn_river")


def _dealer_hand(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return rnd.on_dealer_hand(config, state)


# -- jackpot link (11.11, issue 6) -------------------------------------------------------------
def _ho_pool(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return jackpot.on_pool(config, state, data, now)


def _ho_award(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return jackpot.on_award(config, state, data)


def _jackpot_verify(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return jackpot.verify(config, state, data)


def _link(up: bool) -> Handler:
    def handler(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
        jp = {**state.jackpot, "link_up": up}
        return replace(state, jackpot=jp), [fx.log(f"head-office link {'up' if up else 'down'}")]

    return handler


def _switch(enabled: bool) -> Handler:
    def handler(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
        return jackpot.on_switch(config, state, enabled)

    return handler


def _meter_fault(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """meter.fault {reason}: the progressive meter (2.4.3) is gone (unplugged, no port). A
    malfunction of the jackpot equipment: an inspector is notified; the game continues without
    the jackpot only with the Gaming Supervisor's approval (11.11), given as dealer.jackpot_off."""
    reason = str(data.get("reason", "meter fault"))[:200]
    text = (
        f"progressive meter: {reason}; notify an inspector; with the Gaming Supervisor's"
        " approval continue without the jackpot (dealer.jackpot_off)"
    )
    return state, [fx.alarm("technician", text, "11.11")]


def _meter_ready(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    """meter.ready {}: the meter is back and shows the table's current view again."""
    return state, [fx.log("progressive meter back (11.11 malfunction over)")]


def _tick(config: UthConfig, state: UthState, data: Any, now: Now) -> Result:
    return state, []  # step() refreshes the jackpot's link status after every event


Handler = Callable[[UthConfig, UthState, Any, Now], Result]

_HANDLERS: dict[str, Handler] = {
    "table.open": _open,
    "table.close": _close,
    "dealer.wager": _wager,
    "dealer.withdraw": _withdraw,
    "bet.on": _bet_on,
    "bet.off": _bet_off,
    "dealer.deal": _deal,
    "shuffler.ready": _ready,
    "shuffler.jam": _malfunction,
    "shuffler.fault": _malfunction,
    "deck.check": _deck_check,
    "dealer.deck_check": _check_deck,
    "card.dispensed": _card,
    "dealer.dealt": _dealt,
    "dealer.misdeal": _misdeal,
    "dealer.void": _void,
    "dealer.decision": _decision,
    "dealer.flop": _flop,
    "dealer.turn_river": _turn_river,
    "dealer.dealer_hand": _dealer_hand,
    "ho.pool": _ho_pool,
    "ho.award": _ho_award,
    "dealer.jackpot_verify": _jackpot_verify,
    "link.up": _link(True),
    "link.down": _link(False),
    "dealer.jackpot_off": _switch(False),
    "dealer.jackpot_on": _switch(True),
    "meter.fault": _meter_fault,
    "meter.ready": _meter_ready,
    "tick": _tick,
}
EVENT_KINDS = frozenset(_HANDLERS)


# -- status and resume -------------------------------------------------------------------------
def status(config: UthConfig, state: UthState, *, hole_cards: bool = False) -> JSON:
    """The table as a technician's terminal shows it: no hole cards, only how many each box
    holds (a terminal at a live table must not show a player's or the dealer's hand; the
    journal and the round record keep every card for the audit). `hole_cards`: each box's own
    cards too, for the simulated players (`seat_view`)."""
    return {
        "game": "uth",
        "state": state.phase,
        "round": state.round,
        "deck": state.deck,
        "deck_status": state.deck_status,
        "deck_ready": rnd.deck_usable(state),
        "suspect_decks": list(state.suspect),
        "cards_dealt": len(state.cards),
        "cards_needed": rnd.needed(state) if state.wagers else 0,
        "community": _community(config, state),
        "boxes": _boxes(config, state, hole_cards),
        "pool": jackpot.pool_status(config, state),
        "jackpot": "online" if state.jackpot["online"] else "offline",
        "jackpot_disabled": state.jackpot["disabled"],
        "display": dict(state.display),
        "waiting_for": _waiting_for(state),
    }


def _community(config: UthConfig, state: UthState) -> list[str]:
    """The community cards face up: the flop from the flop on, all five on the river."""
    if not state.dealt or state.phase not in DECIDING[1:]:
        return []
    d = rnd.the_deal(config, state)
    shown = d.flop if state.phase == rnd.FLOP else d.community
    return [format_card(c) for c in shown]


def _boxes(config: UthConfig, state: UthState, hole_cards: bool) -> list[JSON]:
    """Occupied boxes; each box's hole cards only with `hole_cards` (a seat's own view)."""
    d = rnd.the_deal(config, state) if state.dealt else None
    out = []
    for box in range(1, config.boxes + 1):
        key = str(box)
        if key not in state.wagers and box not in state.sensors and key not in state.lamps:
            continue
        ante, blind, trips = state.wagers.get(key, [0, 0, 0])
        hole = d.boxes[box] if d and box in d.boxes else ()
        out.append(
            {
                "box": box,
                "ante": ante,
                "blind": blind,
                "trips": trips,
                "sensor": box in state.sensors,
                "jackpot": box in state.jackpot_boxes,
                "lamp": state.lamps.get(key, "idle"),
                "decision": state.decisions.get(key),
                "checked": box in state.checks,
                "hole_cards": len(hole),
                **({"hole": [format_card(c) for c in hole]} if hole_cards else {}),
            }
        )
    return out


def _waiting_for(state: UthState) -> str:
    if state.phase == CLOSED:
        return "table.open"
    if state.phase == BETTING:
        if not state.wagers:
            return "wagers"
        return "dealer.deal" if rnd.deck_usable(state) else "shuffler"
    if state.phase == DEALING:
        return "cards"
    return "decisions"


def resume(config: UthConfig, state: UthState) -> list[Effect]:
    """After a (re)start: pending shuffles, the rest of a pending dispense, the meter, lamps."""
    effects = [fx.shuffle(state.deck)] if state.deck_status == SHUFFLING else []
    rest = state.dispense - len(state.cards)
    if state.phase == DEALING and rest > 0:
        effects.append(fx.dispense(rest, state.deck))
    effects.append(fx.display(state.display))
    for hit in state.pending_hits:
        effects += [fx.display({"mode": "pending", "box": b}) for b in hit["boxes"]]
    for box in range(1, config.boxes + 1):
        effects.append(fx.lamp(box, state.lamps.get(str(box), "idle")))
    return effects
