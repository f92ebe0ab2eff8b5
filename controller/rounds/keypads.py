"""Each game's keypad actions, from its machine's event contract (`ROUTES`): a keypad action `x`
is the event `dealer.x`, and only a routed one is an action of the game. The configuration checks
`[devices.gpio.keypad]` against this (issue 13); `Guarded.dealer_actions` answers the same for a
running machine (a test pins the two equal)."""

from __future__ import annotations

from controller.events import DEALER_PREFIX
from controller.rounds.paigow.machine import ROUTES as PAIGOW_ROUTES
from controller.rounds.uth.machine import ROUTES as UTH_ROUTES

_ROUTES = {"paigow": PAIGOW_ROUTES, "uth": UTH_ROUTES}


def keypad_actions(game: str) -> frozenset[str] | None:
    """The dealer actions `game` handles; None for a game this build does not know."""
    routes = _ROUTES.get(game)
    if routes is None:
        return None
    return frozenset(k.removeprefix(DEALER_PREFIX) for k in routes if k.startswith(DEALER_PREFIX))
