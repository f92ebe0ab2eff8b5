"""Harness for the UTH round machine tests: a table with a seeded card-reading shuffler.

`Table.step` checks at every step that the state survives a JSON round trip exactly, keeps the
journal of (event, now) since the start, and plays the shuffler: a `shuffle` effect queues
`shuffler.ready` and reshuffles that deck (seeded), a `dispense {count}` effect queues that many
`card.dispensed`. Queued device events run on `pump()`.
"""

from __future__ import annotations

import json
import random
from collections import deque
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

from controller.games.uth.cards import format_card, full_deck, parse_cards
from controller.games.uth.jackpot import PoolState
from controller.rounds.base import Effect, Event, Now
from controller.rounds.uth import UthConfig, UthMachine, UthState

POOL = PoolState(5_000_000, 5_000_000, increment=Fraction(1, 10), hidden=Fraction(1, 50))


def now_at(ms: int) -> Now:
    return Now(utc="2026-11-25T21:40:00.000Z", mono_ms=ms)


def cards_text(text: str) -> list[str]:
    return [format_card(c) for c in parse_cards(text)]


class Table:
    def __init__(self, config: UthConfig | None = None, *, seed: int = 0, auto: bool = True):
        self.machine = UthMachine(config or UthConfig(pool=POOL))
        self.config = self.machine.config
        self.state: UthState = self.machine.initial()
        self.rng = random.Random(seed)
        self.ms = 0
        self.auto = auto  # answer shuffle/dispense effects with device events
        self.queue: deque[Event] = deque()
        self.order: list[str] = []
        self.stacked: list[str] = []  # cards on top of the next shuffled deck
        self.dispensed = 0
        self.journal: list[tuple[Event, Now]] = []
        self.effects: list[Effect] = []
        self.rounds: list[dict[str, Any]] = []  # round effects' data, in order
        self._device(self.machine.resume(self.state))
        self.pump()

    # -- driving ---------------------------------------------------------------------------------
    def step(self, kind: str, **data: Any) -> list[Effect]:
        return self.event(Event(kind, data))

    def event(self, event: Event) -> list[Effect]:
        now = now_at(self.ms)
        snap = json.loads(json.dumps(self.machine.to_json(self.state)))
        assert self.machine.from_json(snap) == self.state, "state does not round-trip JSON"
        self.state, effects = self.machine.step(self.state, event, now)
        json.dumps([e.as_json() for e in effects])  # effects are JSON too
        self.journal.append((event, now))
        self.effects += effects
        self.rounds += [dict(e.data) for e in effects if e.kind == "round"]
        self._device(effects)
        return effects

    def pump(self) -> list[Effect]:
        out: list[Effect] = []
        while self.queue:
            out += self.event(self.queue.popleft())
        return out

    def run(self, kind: str, **data: Any) -> list[Effect]:
        return self.step(kind, **data) + self.pump()

    def stack(self, text: str) -> None:
        """The next round's cards, in order: on top of the deck in the shuffler if no card of
        it is out yet, else of the next deck shuffled."""
        self.stacked = cards_text(text)
        if self.order and not self.dispensed:
            self.order = [*self.stacked, *(c for c in self.order if c not in self.stacked)]
            self.stacked = []

    def _device(self, effects: Iterable[Effect]) -> None:
        if not self.auto:
            return
        for e in effects:
            if e.kind != "device" or e.data["device"] != "shuffler":
                continue
            args = e.data["args"]
            if e.data["command"] == "shuffle":
                self._shuffle(args["deck"])
            elif e.data["command"] == "deck_check":  # a seeded deck is always complete
                self.queue.append(Event("deck.check", {"deck": args["deck"], "ok": True}))
            elif e.data["command"] == "dispense":
                for _ in range(args["count"]):
                    index = self.dispensed
                    self.queue.append(
                        Event("card.dispensed", {"card": self.order[index], "index": index})
                    )
                    self.dispensed += 1

    def _shuffle(self, deck: int) -> None:
        rest = [format_card(c) for c in full_deck() if format_card(c) not in self.stacked]
        self.rng.shuffle(rest)
        self.order = [*self.stacked, *rest]
        self.stacked = []
        self.dispensed = 0
        self.queue.append(Event("shuffler.ready", {"deck": deck}))

    def deal_round(self, wagers: dict[int, tuple[int, int]], jackpot: Sequence[int] = ()) -> None:
        """Key wagers {box: (ante, trips)}, sense jackpot chips, deal. Ends in preflop."""
        for box, (ante, trips) in wagers.items():
            self.step("dealer.wager", box=box, ante=ante, trips=trips)
        for box in jackpot:
            self.step("bet.on", box=box)
        self.run("dealer.deal")

    # -- looking -----------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        return self.machine.status(self.state)

    def seat_view(self) -> dict[str, Any]:
        """What the simulated players and dealer play from (their own hole cards too)."""
        return self.machine.seat_view(self.state)

    def since(self, mark: int) -> list[Effect]:
        return self.effects[mark:]


def kinds(effects: Iterable[Effect]) -> list[str]:
    return [e.kind for e in effects]


def texts(effects: Iterable[Effect]) -> str:
    return " | ".join(str(e.data.get("text", "")) for e in effects)


def of(effects: Iterable[Effect], kind: str, **match: Any) -> list[dict[str, Any]]:
    """Effects' data of one kind whose top-level fields equal `match`."""
    return [
        dict(e.data)
        for e in effects
        if e.kind == kind and all(e.data.get(k) == v for k, v in match.items())
    ]


def lamps(effects: Iterable[Effect]) -> dict[int, str]:
    out = {}
    for e in effects:
        if e.kind == "device" and e.data["command"] == "lamps":
            out[e.data["args"]["box"]] = e.data["args"]["state"]
    return out


def replay(machine: UthMachine, start: UthState, journal: Sequence[tuple[Event, Now]]):
    state, effects = start, []
    for event, now in journal:
        state, out = machine.step(state, event, now)
        effects += out
    return state, effects


def money_conserved(summary: dict[str, Any]) -> bool:
    """Completed round: players' net == -house_net and each box's spots add up."""
    boxes = summary["boxes"]
    for b in boxes:
        if b["returned"] - b["placed"] != b["net"]:
            return False
        if sum(s["returned"] for s in b["spots"]) != b["returned"]:
            return False
    return sum(b["net"] for b in boxes) == -summary["house_net"]


def played_four_times(t: Table, box: int, ante: int) -> dict[str, Any]:
    """One box alone with an Ante of `ante` cents (no Blind), played 4x (UTH 9.1.2) and settled:
    its Play spot as the round record shows it (placed, stake, ...: UTH 6.3, 11.8.2)."""
    t.deal_round({box: (ante, 0)})
    t.step("dealer.decision", box=box, action="play4")
    t.step("dealer.flop")
    t.step("dealer.turn_river")
    (record,) = of(t.step("dealer.dealer_hand"), "round")
    (only,) = record["summary"]["boxes"]
    return next(s for s in only["spots"] if s["spot"] == "play")
