"""Each game's keypad actions, from its machine's event contract (`ROUTES`): a keypad action `x`
is the event `dealer.x`, and only a routed one is an action of the game. The configuration checks
`[devices.gpio.keypad]` against this (issue 13); `Guarded.dealer_actions` answers the same for a
running machine (a test pins the two equal).

Only the configured game's machine is imported: the config is loaded at every daemon start (and
again in every `tablectl` command), and UTH's machine imports its settlement, whose hand
evaluator builds its tables at import (~0.6 s here, half a minute under the VM's TCG); a Pai Gow
table never needs them (docs/daemon.md, "Start-up")."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import import_module

from controller.events import DEALER_PREFIX

_MACHINES = {"paigow": "controller.rounds.paigow.machine", "uth": "controller.rounds.uth.machine"}


def keypad_actions(game: str) -> frozenset[str] | None:
    """The dealer actions `game` handles; None for a game this build does not know."""
    module = _MACHINES.get(game)
    if module is None:
        return None
    kinds: Iterable[str] = (r.kind for r in import_module(module).ROUTES)
    return frozenset(k.removeprefix(DEALER_PREFIX) for k in kinds if k.startswith(DEALER_PREFIX))
