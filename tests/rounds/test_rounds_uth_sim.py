"""UthSim: its strategy helpers, its answers per phase, and determinism for a seed."""

from __future__ import annotations

import random

from controller.games.uth.cards import parse_cards
from controller.sim.uth import UthSim, hidden_pair_or_better, strong_preflop
from tests.support.uth_table import Table


def test_preflop_chart() -> None:
    assert strong_preflop(parse_cards("As 2d"))
    assert strong_preflop(parse_cards("3c 3d"))
    assert not strong_preflop(parse_cards("2c 2d"))
    assert strong_preflop(parse_cards("Kh 5c")) and not strong_preflop(parse_cards("Kh 4c"))
    assert strong_preflop(parse_cards("Kh 2h"))
    assert strong_preflop(parse_cards("Qh 8c")) and not strong_preflop(parse_cards("Qh 7c"))
    assert strong_preflop(parse_cards("Jh 8h")) and not strong_preflop(parse_cards("Jh 8c"))
    assert not strong_preflop(parse_cards("7c 2d"))


def test_hidden_pair_uses_a_hole_card() -> None:
    flop = parse_cards("9c 5d 2h")
    assert hidden_pair_or_better(parse_cards("9h Kd"), flop)
    assert not hidden_pair_or_better(parse_cards("Th Kd"), flop)
    board = parse_cards("Ac Ad 7s 7h 3c")  # the board's two pair is not the player's
    assert not hidden_pair_or_better(parse_cards("Kd Qs"), board)
    assert hidden_pair_or_better(parse_cards("Kd 3s"), board)
    straight = parse_cards("6c 7d 8s Kh 2c")
    assert hidden_pair_or_better(parse_cards("9d Ts"), straight)


def test_answers_per_phase() -> None:
    t = Table()
    sim = UthSim(random.Random(1), boxes=7)
    wagers = sim.next_events(t.seat_view())
    assert wagers and {e.kind for e in wagers} <= {"dealer.wager", "bet.on", "bet.off"}
    for e in wagers:
        assert e.data.get("ante", 500) in (500, 1000, 2500, 5000)
        t.event(e)
    assert [e.kind for e in sim.next_events(t.seat_view())] == ["dealer.deal"]
    t.run("dealer.deal")
    preflop = sim.next_events(t.seat_view())
    assert preflop[-1].kind in ("dealer.flop", "dealer.misdeal")
    hands = {int(b) for b in t.state.wagers}
    if preflop[-1].kind == "dealer.flop":
        assert {e.data["box"] for e in preflop[:-1]} == hands
        assert {e.data["action"] for e in preflop[:-1]} <= {"play4", "play3", "check"}


def test_deterministic_for_a_seed() -> None:
    def session(seed: int) -> list[dict]:
        t = Table(seed=seed)
        sim = UthSim(random.Random(seed))
        while len(t.rounds) < 10:
            for e in sim.next_events(t.seat_view()):
                t.event(e)
                t.pump()
        return t.rounds

    assert session(4) == session(4)
    assert session(4) != session(5)


def test_closed_table_is_opened_and_a_suspect_deck_rechecked_once() -> None:
    t = Table()
    t.step("table.close")
    sim = UthSim(random.Random(0))
    assert [e.kind for e in sim.next_events(t.seat_view())] == ["table.open"]
    t.step("table.open")
    t.step("dealer.wager", box=1, ante=500)
    t.step("deck.check", deck=1, ok=False, missing=["2c"], extra=[], duplicate=[], unreadable=0)
    first = sim.next_events(t.seat_view())
    assert [(e.kind, dict(e.data)) for e in first] == [("dealer.deck_check", {"deck": 1})]
    assert sim.next_events(t.seat_view()) == []
