"""The round machines' declared transitions (issue 30 item 7): each route says where its step may
lead; the guard fails a step that leads elsewhere; the graph in docs/rounds-*.md is generated
from the declarations; every declared move is reachable from `closed` and played here, and
nothing is played that is not declared."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.events import Event, Kind, Now
from controller.games.paigow.profiles import Profile
from controller.rounds.__main__ import machine
from controller.rounds.base import Guarded, Route, UndeclaredTransition
from controller.rounds.paigow import ROUTES as PAIGOW_ROUTES
from controller.rounds.paigow import PaiGowConfig, PaiGowMachine
from controller.rounds.uth import ROUTES as UTH_ROUTES
from controller.rounds.uth import UthMachine
from tests.support import paigow_table as pg
from tests.support.uth_table import Table as UthTable

DOCS = Path(__file__).resolve().parents[2] / "docs"
NOW = Now("2026-11-28T08:00:00.000Z", 0)
Move = tuple[str, str, str]  # (from, event kind, to)


@pytest.fixture
def played(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, set[Move]]]:
    """Every move (a step that changed the phase) the machines make while the test runs."""
    seen: dict[str, set[Move]] = {"uth": set(), "paigow": set()}
    dispatch = Guarded.dispatch

    def recording(self: Guarded[Any], state: Any, event: Event, now: Now) -> Any:
        new, effects = dispatch(self, state, event, now)
        before, after = self.phase_of(state), self.phase_of(new)
        if before != after:
            seen["uth" if isinstance(self, UthMachine) else "paigow"].add(
                (before, event.kind, after)
            )
        return new, effects

    monkeypatch.setattr(Guarded, "dispatch", recording)
    yield seen


# -- the declarations --------------------------------------------------------------------------
@pytest.mark.parametrize("routes", [UTH_ROUTES, PAIGOW_ROUTES], ids=["uth", "paigow"])
def test_both_machines_declare_their_routes_in_one_style(routes: tuple[Route, ...]) -> None:
    # A Route per event kind naming a plain function: no method-name strings, no lookups.
    assert all(isinstance(r, Route) and inspect.isfunction(r.step) for r in routes), [
        r.kind for r in routes if not inspect.isfunction(r.step)
    ]
    assert len({r.kind for r in routes}) == len(routes)


@pytest.mark.parametrize("game", ["paigow", "uth"])
def test_both_machines_are_their_routes_over_their_configuration(game: str) -> None:
    # One style (issue 30 item 7): a machine is Guarded plus its protocol, no mixins of steps;
    # each route names a module function of the machine's package whose first parameter is the
    # configuration the machine binds.
    m = machine(game)
    assert type(m).__bases__ == (Guarded,)
    package = type(m).__module__.rsplit(".", 1)[0]
    for r in m.declared:
        assert r.step.__module__.startswith(package + "."), (r.kind, r.step.__module__)
        assert next(iter(inspect.signature(r.step).parameters)) == "config", r.kind


@pytest.mark.parametrize("game", ["paigow", "uth"])
def test_docs_draw_the_declared_transition_graph(game: str) -> None:
    page = (DOCS / f"rounds-{game}.md").read_text()
    found = re.search(r"<!-- transitions: begin -->\n(.*?)\n<!-- transitions: end -->", page, re.S)
    assert found, f"docs/rounds-{game}.md has no transition graph"
    assert found.group(1) == machine(game).transition_mermaid(), (
        "regenerate with python -m controller.rounds --write-docs"
    )


@pytest.mark.parametrize("game", ["paigow", "uth"])
def test_every_phase_is_reachable_from_closed_and_leads_back_to_it(game: str) -> None:
    m = machine(game)
    moves = m.transitions()

    def reach(start: str, forward: bool) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            here = todo.pop()
            for frm, _, to in moves:
                a, b = (frm, to) if forward else (to, frm)
                if a == here and b not in seen:
                    seen.add(b)
                    todo.append(b)
        return seen

    assert reach("closed", forward=True) == set(m.phases)
    assert reach("closed", forward=False) == set(m.phases)  # the table can always be closed
    for r in m.declared:  # so every route's phases, and every move's start, are reachable
        assert r.accepted_in <= set(m.phases) and {f for f, _ in r.moves} <= r.accepted_in


# -- the guard ---------------------------------------------------------------------------------
def _without_moves(routes: tuple[Route, ...], kind: str) -> tuple[Route, ...]:
    return tuple(Route(r.kind, r.step, r.accepted_in) if r.kind == kind else r for r in routes)


def test_an_undeclared_target_fails_loudly_in_tests() -> None:
    m = PaiGowMachine(PaiGowConfig(Profile.NSW))
    # closed -> betting undeclared
    m.bind(_without_moves(PAIGOW_ROUTES, Kind.TABLE_OPEN), m.config)
    with pytest.raises(UndeclaredTransition, match=r"table\.open led from closed to betting"):
        m.step(m.initial(), Event(Kind.TABLE_OPEN), NOW)


@pytest.mark.parametrize("game", ["paigow", "uth"])
def test_in_service_an_undeclared_target_is_a_technician_alarm_and_the_state_kept(
    game: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Guarded, "strict", False)  # as the daemon runs
    # A step that chooses its target (`to`): Pai Gow's table.open opens a round in betting,
    # UTH's dealer.void ends the round in betting.
    if game == "paigow":
        m: Guarded[Any] = machine(game)
        kind, state, frm = Kind.TABLE_OPEN, m.initial(), "closed"
        m.bind(_without_moves(PAIGOW_ROUTES, kind), m.config)
    else:
        t = _uth_dealing(card_out=True)
        m, kind, state, frm = t.machine, Kind.DEALER_VOID, t.state, "dealing"
        m.bind(_without_moves(UTH_ROUTES, kind), t.config)
    assert m.phase_of(state) == frm
    after, effects = m.step(state, Event(kind), NOW)
    assert after == state
    alarms = [e.data for e in effects if e.kind == "alarm"]
    assert [a["severity"] for a in alarms] == ["technician"]
    assert "UndeclaredTransition" in alarms[0]["text"] and f"{frm} to betting" in alarms[0]["text"]


def test_a_move_from_a_phase_the_route_does_not_accept_is_refused_when_bound() -> None:
    m = UthMachine()
    bad = tuple(
        Route(r.kind, r.step, r.accepted_in, to={"closed": ("betting",)})
        if r.kind == Kind.DEALER_FLOP
        else r
        for r in UTH_ROUTES
    )
    with pytest.raises(UndeclaredTransition, match=r"dealer\.flop"):
        m.bind(bad, m.config)
    with pytest.raises(UndeclaredTransition, match="not phases"):
        m.bind((Route("x.y", UTH_ROUTES[0].step, ("nowhere",)),), m.config)


@pytest.mark.parametrize(("game", "kind", "frm", "to"), [
    ("uth", Kind.TABLE_CLOSE, "betting", "closed"),
    ("paigow", Kind.TABLE_CLOSE, "betting", "closed"),
])
def test_a_route_that_says_where_it_leads_moves_the_phase_not_its_step(
    game: str, kind: str, frm: str, to: str
) -> None:
    # `then`: the graph is read off the route; the step keeps books and the guard moves.
    m = machine(game)
    state = m.initial()
    if game == "paigow":
        state, _ = m.step(state, Event(Kind.TABLE_OPEN), NOW)
    route = next(r for r in m.declared if r.kind == kind)
    assert dict(route.then)[frm] == to
    alone, _ = route.step(m.config, state, {}, NOW)
    assert m.phase_of(alone) == frm
    after, _ = m.step(state, Event(kind), NOW)
    assert m.phase_of(after) == to and after == m.with_phase(alone, to)


def test_a_step_that_moves_itself_on_a_route_that_leads_is_undeclared() -> None:
    m = PaiGowMachine(PaiGowConfig(Profile.NSW))
    # table.open's step opens the round in betting itself: a route saying it leads to off_draw
    # is wrong, and the guard says so rather than overriding either.
    m.bind(tuple(Route(r.kind, r.step, r.accepted_in, then="off_draw")
                 if r.kind == Kind.TABLE_OPEN else r for r in PAIGOW_ROUTES), m.config)
    with pytest.raises(UndeclaredTransition, match=r"led from closed to betting itself"):
        m.step(m.initial(), Event(Kind.TABLE_OPEN), NOW)


def test_a_route_either_leads_or_lets_its_step_choose_from_a_phase() -> None:
    step = PAIGOW_ROUTES[0].step
    with pytest.raises(UndeclaredTransition, match="both chooses"):
        Route("x.y", step, ("betting",), to=("closed",), then="closed")


def test_fewer_steps_set_the_phase_than_before_the_routes_led() -> None:
    # Issue 30 item 7 counted 21 `phase=` assignments in the handlers; where the target does not
    # depend on the outcome the route says it (`then`) and the step no longer sets it.
    root = Path(__file__).resolve().parents[2] / "controller" / "rounds"
    handlers = [p for p in root.rglob("*.py")
                if p.name not in ("base.py", "state.py") and p.parent != root]
    sets = [f"{p.relative_to(root)}:{n}" for p in handlers
            for n, line in enumerate(p.read_text().splitlines(), 1)
            if re.search(r"\bphase=(?!state\.phase)", line)]
    assert len(sets) <= 10, sets
    leading = [r.kind for routes in (UTH_ROUTES, PAIGOW_ROUTES) for r in routes if r.then]
    assert len(leading) >= 11, leading


def test_the_accepted_phases_are_unchanged_by_the_declarations() -> None:
    # The guard's table (docs "Events accepted") is the same data the routes declare.
    for game in ("paigow", "uth"):
        m = machine(game)
        assert {r.kind: r.accepted_in for r in m.declared} == {
            k: h.phases for k, h in m.routes.items()
        }


# -- every declared move, played ---------------------------------------------------------------
def _uth(hand: bool = False) -> UthTable:
    t = UthTable()
    if hand:
        t.step("dealer.deal_method", method="hand")
    t.step("dealer.wager", box=2, ante=1000)
    return t


def _uth_dealing(hand: bool = False, card_out: bool = False) -> UthTable:
    t = _uth(hand)
    t.step("dealer.deal")  # the dispensed cards wait in the queue
    if card_out:
        if hand:
            t.step("dealer.card", card="Ah")
        else:
            t.event(t.queue.popleft())
        t.queue.clear()
        assert t.state.in_round
    assert t.state.phase == "dealing"
    return t


HAND_DEAL = ["Ah", "Kh", "Qh", "2c", "7d", "Jh", "Th", "4s", "9c"]  # UTH 7.3, one box


def _uth_at(phase: str, hand: bool = False) -> UthTable:
    t = _uth(hand)
    if hand:
        t.step("dealer.deal")
        for card in HAND_DEAL:
            t.step("dealer.card", card=card)
    else:
        t.run("dealer.deal")
    if phase in ("flop", "river"):
        t.step("dealer.flop")
    if phase == "river":
        t.step("dealer.turn_river")
    assert t.state.phase == phase
    return t


def _next_card(t: UthTable) -> dict[str, Any]:
    n = len(t.state.cards)
    return {"card": t.order[n], "index": n}


def _play_uth() -> None:
    t = UthTable()
    t.step("table.close")
    t.step("table.open")
    _uth_at("river").step("dealer.dealer_hand")  # deal, flop, turn and river, settlement
    _uth_at("preflop", hand=True)  # dealing -> preflop by dealer.card
    t = _uth()
    t.step("card.dispensed", card=t.order[0], index=0)  # betting -> dealing: the first card
    _uth(hand=True).step("dealer.card", card="As")  # the same, dealt by hand (UTH 12.2.3)
    for kind, data in [
        ("shuffler.jam", {"reason": "jam"}),  # UTH 12.1 before the first card
        ("shuffler.fault", {"reason": "motor"}),
        ("deck.check", {"ok": False, "missing": ["As"]}),  # UTH 11.7.2
    ]:
        _uth_dealing().step(kind, **data)
    for kind, data in [
        ("card.dispensed", {"card": "Zz", "index": 1}),  # UTH 11.7: foreign
        ("dealer.dealt", {}),  # UTH 11.1: too few
        ("dealer.misdeal", {"reason": "wrong_count"}),
        ("dealer.void", {"reason": "fire"}),
    ]:
        _uth_dealing(card_out=True).step(kind, **data)
    _uth_dealing(hand=True, card_out=True).step("dealer.card", card="Zz")
    for phase in ("preflop", "flop", "river"):
        for kind, data in [
            ("shuffler.jam", {"reason": "jam"}),  # UTH 12.2 mid-round
            ("shuffler.fault", {"reason": "motor"}),
            ("deck.check", {"ok": False, "missing": ["As"]}),
            ("dealer.misdeal", {"reason": "wrong_count"}),
            ("dealer.void", {"reason": "fire"}),
        ]:
            _uth_at(phase).step(kind, **data)
        t = _uth_at(phase)
        t.step("card.dispensed", **_next_card(t))  # a card too many (UTH 11.1)
        _uth_at(phase, hand=True).step("dealer.card", card="2s")


def _play_paigow() -> None:
    pg.session(Profile.NSW, rounds=2, seed=1)  # closed -> betting -> ... -> result -> betting
    pg.session(Profile.NZ, rounds=2, seed=1)  # with the cut (NZ 9.3A)
    pg.at_phase(Profile.NSW, "betting").send("table.close")
    pg.at_phase(Profile.NSW, "off_draw").send("table.close")
    pg.at_phase(Profile.NSW, "off_draw").send("dealer.off_cancel")
    pg.at_phase(Profile.NSW, "off_draw").dice(1, 2, 3)  # NSW 15.9.3: a box drawn
    nz = pg.at_phase(Profile.NZ, "cutting")
    nz.send("dealer.cut", by="supervisor", cut="Cup Say", options=["right", "top"])
    for profile, phase in [
        (Profile.NZ, "cutting"),
        (Profile.NSW, "shaking"),
        (Profile.NSW, "announced"),
        (Profile.NSW, "setting"),
    ]:
        pg.at_phase(profile, phase).send("dealer.void", reason="fire")
    t = pg.Table(Profile.NZ)  # the player/banker calls their hand void (NZ 12.3(b))
    t.send("table.open")
    t.to_shaking(p3=2000)
    t.dice(2, 2, 2)
    t.send("dealer.delivered")
    t.send(
        "dealer.result",
        hands={"3": {"tiles": ["6-6", "1-1", "4-4", "1-3"]}},
        bank_hand={"tiles": ["5-5", "3-3", "2-2", "5-6"]},
    )
    t.send("dealer.bank", box=3, player="p3", funds=10_000_000)
    t.to_shaking(p2=2000, p4=2000)
    t.dice(2, 2, 2)
    banked = pg.Table(Profile.NZ)
    banked.state = t.state
    banked.send("dealer.hand_void", box=3, exposed=2)  # announced -> betting
    t.send("dealer.delivered")
    later = pg.Table(Profile.NZ)
    later.state = t.state
    later.send("dealer.hand_void", box=3, exposed=2)  # setting -> betting
    t.send("dealer.hands_mixed", boxes=[3, 4])  # NZ 12.15: the bank's hand (box 3) among them


PLAYS: dict[str, Callable[[], None]] = {"uth": _play_uth, "paigow": _play_paigow}


@pytest.mark.parametrize("game", ["paigow", "uth"])
def test_every_declared_move_is_played_and_nothing_else(
    game: str, played: dict[str, set[Move]]
) -> None:
    PLAYS[game]()
    declared = set(machine(game).transitions())
    assert declared - played[game] == set(), "declared but never played"
    assert played[game] - declared == set(), "played but not declared"


# -- each phase accepts only what it can handle ------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "phase", "text"),
    [
        ("dealer.dealt", "closed", "dealer.dealt refused: dealer.dealt: no card has been dealt"),
        ("dealer.dealt", "betting", "dealer.dealt refused: dealer.dealt: no card has been dealt"),
        *[
            ("dealer.deck_check", p, "dealer.deck_check refused: no deck check during a round")
            for p in ("preflop", "flop", "river")
        ],
    ],
)
def test_uth_routes_narrowed_to_their_phases_refuse_in_the_words_the_dealer_saw(
    kind: str, phase: str, text: str
) -> None:
    # The handler refused these in every such phase; the guard now does, in the same words.
    t = _uth_at(phase) if phase in ("preflop", "flop", "river") else UthTable()
    if phase == "closed":
        t.step("table.close")
    assert phase not in t.machine.routes[kind].phases and t.state.phase == phase
    before = t.state
    out = t.step(kind)
    assert t.state == before
    assert [(e.kind, e.data["text"], e.data["refused"]) for e in out] == [("log", text, True)]
