"""What `tablectl status` and a seat see of the UTH table, and what a restart re-issues."""

from __future__ import annotations

from controller.events import Kind
from controller.games.uth.cards import format_card
from controller.rounds import cards
from controller.rounds.base import JSON, Effect
from controller.rounds.uth import effects as fx
from controller.rounds.uth import jackpot
from controller.rounds.uth import play as rnd
from controller.rounds.uth.state import (
    BETTING,
    CLOSED,
    DEALING,
    DECIDING,
    SHUFFLING,
    UthConfig,
    UthState,
)

Result = tuple[UthState, list[Effect]]

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
        return Kind.TABLE_OPEN
    if state.phase == BETTING:
        if not state.wagers:
            return "wagers"
        return Kind.DEALER_DEAL if rnd.deck_usable(state) else "shuffler"
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
    return [*effects, *cards.reissue(state.patrons, state.round)]  # unanswered card requests
