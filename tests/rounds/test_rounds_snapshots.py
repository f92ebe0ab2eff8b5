"""A state's JSON snapshot is a copy: changing it never changes the state, either way round.

`to_json`/`from_json` copy with `json_copy` (controller/rounds/base.py), a JSON-only deep copy
that replaced `dataclasses.asdict`/`copy.deepcopy` for speed (issue 31); these pin what the
callers rely on (the journal keeps snapshots, the daemon keeps states)."""

from __future__ import annotations

import json
from typing import Any

from controller.games.paigow.profiles import Profile
from controller.rounds.base import json_copy
from tests.support.paigow_table import session
from tests.support.uth_table import Table


def _scramble(value: Any) -> None:
    """Change every container inside `value` in place."""
    if isinstance(value, dict):
        for v in value.values():
            _scramble(v)
        value["scrambled"] = True
    elif isinstance(value, list):
        for v in value:
            _scramble(v)
        value.append("scrambled")


def _check(machine: Any, state: Any) -> None:
    text = json.dumps(machine.to_json(state))
    snapshot = machine.to_json(state)
    _scramble(snapshot)
    assert json.dumps(machine.to_json(state)) == text  # to_json handed out a copy
    data = json.loads(text)
    rebuilt = machine.from_json(data)
    _scramble(data)
    assert rebuilt == state and json.dumps(machine.to_json(rebuilt)) == text  # from_json copied


def test_paigow_snapshots_are_copies() -> None:
    _, _, m, state = session(Profile.NZ, 20, seed=3)
    assert state.patrons and state.last_round["players"]  # nested containers to share, if any
    _check(m, state)


def test_uth_snapshots_are_copies() -> None:
    t = Table(seed=4)
    t.deal_round({1: (1000, 500), 3: (2000, 0)}, jackpot=[3])
    assert t.state.wagers and t.state.cards
    _check(t.machine, t.state)


def test_json_copy_is_deep_and_equal() -> None:
    value = {"a": [1, {"b": [2.5, None, True]}], "c": {"d": "e"}}
    copied = json_copy(value)
    assert copied == value
    _scramble(copied)
    assert value == {"a": [1, {"b": [2.5, None, True]}], "c": {"d": "e"}}
