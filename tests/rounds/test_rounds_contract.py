"""The event vocabulary and the guarded step (issue 14): one registry of kinds, docs generated
from it, every device event handled or deliberately refused by each machine, and each machine's
phase x event table as the docs print it."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import devices
from controller.events import DEALER_PREFIX, REGISTRY, Event, Kind, Now, Source, markdown
from controller.games.paigow.profiles import Profile
from controller.rounds.__main__ import machine
from controller.rounds.paigow import IGNORED, OTHER_GAME, PaiGowConfig, PaiGowMachine, PaiGowState
from controller.rounds.uth import OTHER_GAME as UTH_OTHER_GAME
from controller.rounds.uth import UthMachine
from devices.base import Device

DOCS = Path(__file__).resolve().parents[2] / "docs"
NOW = Now("2026-11-26T08:00:00.000Z", 1000)


def _device_events() -> dict[str, set[str]]:
    """kind -> the device classes that can emit it (every module under devices/ imported)."""
    # Every module, drivers and simulators too: a device package's __init__ names them
    # lazily (devices/kind.py), so importing the packages alone finds only some classes.
    for info in pkgutil.walk_packages(devices.__path__, prefix="devices."):
        importlib.import_module(info.name)
    # The cut's random source is a device that lives in controller (NZ 9.3A(c)): imported here,
    # not left to whichever test imported it first (run alone, this test missed it).
    importlib.import_module("controller.random_source")
    out: dict[str, set[str]] = {}
    todo = list(Device.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__module__ not in sys.modules:  # a test's own device, gone with its test
            continue
        for kind in cls.EVENTS:
            out.setdefault(kind, set()).add(f"{cls.__module__}.{cls.__name__}")
    return out


def _machines() -> list[tuple[Any, frozenset[str]]]:
    """Each machine and the kinds it deliberately does nothing with or refuses as another
    game's."""
    return [
        (PaiGowMachine(PaiGowConfig(p)), IGNORED | OTHER_GAME) for p in Profile
    ] + [(UthMachine(), UTH_OTHER_GAME)]


def test_docs_events_md_is_generated_from_the_registry() -> None:
    assert (DOCS / "events.md").read_text() == markdown(), (
        "docs/events.md differs: python -m controller.events --markdown > docs/events.md"
    )


def test_registry_names_every_kind_once_byte_for_byte() -> None:
    assert set(REGISTRY) == {k.value for k in Kind}
    for kind in Kind:
        assert str(kind) == kind.value and f"{kind}" == kind.value  # as journals write it
        assert re.fullmatch(r"[a-z]+(\.[a-z_]+)?", kind.value)
    dealer = {k for k in Kind if k.startswith(DEALER_PREFIX)}
    assert all(REGISTRY[k].source is Source.DEALER for k in dealer)


def test_every_routed_or_listed_kind_is_registered() -> None:
    for m, listed in _machines():
        unknown = (set(m.routes) | listed) - set(REGISTRY)
        assert not unknown, f"{m.game}: kinds missing from controller/events.py: {unknown}"


def test_every_device_event_is_handled_or_deliberately_refused_by_each_machine() -> None:
    emitted = _device_events()
    assert {"dice.result", "card.dispensed", "cut.selected", "meter.fault"} <= set(emitted)
    for kind, classes in emitted.items():
        if kind == f"{DEALER_PREFIX}<action>":  # the keypad: dealer.* kinds, routed per game
            continue
        assert REGISTRY[kind].source is Source.DEVICE, (kind, classes)
        for m, listed in _machines():
            assert kind in m.routes or kind in listed, (
                f"{m.game} neither handles nor lists {kind!r} (emitted by {sorted(classes)})"
            )


@pytest.mark.parametrize("kind", sorted(OTHER_GAME))
def test_paigow_refuses_the_other_games_device_events_with_a_log_line(kind: str) -> None:
    m = PaiGowMachine(PaiGowConfig(Profile.NZ))
    state, _ = m.step(m.initial(), Event(Kind.TABLE_OPEN), NOW)
    after, effects = m.step(state, Event(kind, {"box": 1}), NOW)
    assert after == state
    assert [(e.kind, e.data.get("refused")) for e in effects] == [("log", True)]


@pytest.mark.parametrize("kind", sorted(UTH_OTHER_GAME))
def test_uth_refuses_the_other_games_device_events_with_a_log_line(kind: str) -> None:
    m = UthMachine()
    state = m.initial()
    after, effects = m.step(state, Event(kind, {"box": 1}), NOW)
    assert after == state
    assert [(e.kind, e.data.get("refused")) for e in effects] == [("log", True)]
    assert "not part of the UTH vocabulary" in effects[0].data["text"]


@pytest.mark.parametrize("game", ["paigow", "uth"])
def test_docs_print_the_machines_phase_by_event_table(game: str) -> None:
    page = (DOCS / f"rounds-{game}.md").read_text()
    found = re.search(r"<!-- accepted: begin -->\n(.*?)\n<!-- accepted: end -->", page, re.S)
    assert found, f"docs/rounds-{game}.md has no accepted-events table"
    assert found.group(1) == machine(game).accepted_markdown(), (
        f"regenerate with python -m controller.rounds --accepted {game}"
    )


def _in_phase(m: Any, phase: str) -> Any:
    if isinstance(m, PaiGowMachine):
        return PaiGowState(phase=phase)
    return dataclasses.replace(m.initial(), phase=phase)


def test_the_guard_refuses_every_event_outside_its_phases_before_its_handler() -> None:
    refused = 0
    for m, _ in _machines():
        table = m.accepted()
        assert list(table) == list(m.phases)
        for kind in m.routes:
            for phase in m.phases:
                if kind in table[phase]:
                    continue
                state = _in_phase(m, phase)
                # Data that every handler would refuse: only the guard can answer first.
                after, effects = m.step(state, Event(kind, {"box": "x"}), NOW)
                assert after == state
                texts = [e.data["text"] for e in effects if e.data.get("refused")]
                assert texts and not any("box" in t for t in texts), (m.game, kind, phase, texts)
                refused += 1
    assert refused > 100


def test_each_game_lists_its_keypad_actions_for_the_control_socket() -> None:
    paigow = PaiGowMachine(PaiGowConfig(Profile.NSW)).dealer_actions()
    uth = UthMachine().dealer_actions()
    assert {"no_more_bets", "result", "hand_void", "void", "wager"} <= paigow
    assert {"deal", "misdeal", "decision", "void", "wager", "deal_method"} <= uth
    # Actions wired in example keypads that no machine handles (issue 13) are not offered.
    assert not {"new_round", "confirm", "cancel_jackpot"} & (paigow | uth)
