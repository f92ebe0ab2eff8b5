"""Drivers shared by the Pai Gow round machine tests (no tests here)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from controller.games.paigow.cuts import random_cut
from controller.games.paigow.profiles import Profile
from controller.rounds.base import Effect, Event, Now
from controller.rounds.paigow import PaiGowConfig, PaiGowMachine, PaiGowState
from controller.sim.paigow import PaiGowSim

NOW = Now("2026-11-25T21:40:00.000Z", 0)


# The last state step_checked returned and its JSON text: the next step's snapshot, not made again
# (states are immutable; the snapshot was checked to rebuild that state when it was made).
_last: tuple[PaiGowMachine, PaiGowState, str] | None = None


def step_checked(
    m: PaiGowMachine, state: PaiGowState, event: Event
) -> tuple[PaiGowState, list[Effect]]:
    """One step, also replayed from the state's JSON snapshot: both must agree exactly."""
    global _last
    if _last is not None and _last[0] is m and _last[1] is state:
        text = _last[2]
    else:
        text = json.dumps(m.to_json(state))
    new, effects = m.step(state, event, NOW)
    # A bug in a step is answered with an alarm, not an exception (issue 13): still a failure.
    assert not any("internal error" in str(e.data.get("text", "")) for e in effects), effects
    replayed, replayed_effects = m.step(m.from_json(json.loads(text)), event, NOW)
    assert replayed == new  # every field equal: the same JSON
    assert [e.as_json() for e in replayed_effects] == [e.as_json() for e in effects]
    text = json.dumps(m.to_json(new))
    assert m.from_json(json.loads(text)) == new
    _last = (m, new, text)
    return new, effects


@dataclass
class Table:
    """A machine and its state; `send` steps one event with the replay check."""

    profile: Profile
    config: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.m = PaiGowMachine(PaiGowConfig(self.profile, **self.config))
        self.state = self.m.initial()
        self.rounds: list[dict[str, Any]] = []

    def send(self, kind: str, /, **data: Any) -> list[Effect]:
        self.state, effects = step_checked(self.m, self.state, Event(kind, data))
        self.rounds += [dict(e.data) for e in effects if e.kind == "round"]
        return effects

    @property
    def status(self) -> dict[str, Any]:
        return self.m.status(self.state)

    @property
    def phase(self) -> str:
        return self.state.phase

    def to_shaking(self, **wagers: int) -> None:
        """From betting: wagers {"p<box>": amount} on box <box>, no more bets, cut if NZ."""
        for name, amount in wagers.items():
            self.send("dealer.wager", box=int(name[1:]), player=name, amount=amount)
        self.send("dealer.no_more_bets")
        if self.phase == "cutting":
            self.send("cut.selected", cut="Cup Say", options=["right", "top"])

    def dice(self, a: int, b: int, c: int, cut_die: int | None = None) -> list[Effect]:
        if cut_die is None and self.profile is Profile.NSW:
            cut_die = 1
        return self.send("dice.result", box_dice=[a, b, c], cut_die=cut_die)


def at_phase(profile: Profile, phase: str, wager: int = 2000) -> Table:
    """A table brought to `phase` the usual way (a wager on box 2, dice 1-2-3)."""
    t = Table(profile)
    if phase == "closed":
        return t
    t.send("table.open")
    if phase == "off_draw":
        t.send("dealer.off_draw")
    elif phase == "cutting":
        t.send("dealer.no_more_bets")
    elif phase in ("shaking", "announced", "setting"):
        t.to_shaking(p2=wager)
        if phase != "shaking":
            t.dice(1, 2, 3)
        if phase == "setting":
            t.send("dealer.delivered")
    assert t.phase == phase
    return t


def kinds(effects: list[Effect]) -> list[str]:
    return [e.kind for e in effects]


def first(effects: list[Effect], kind: str) -> Any:
    """The data of the first effect of `kind` (StopIteration fails the test when there is none)."""
    return next(e.data for e in effects if e.kind == kind)


def texts(effects: list[Effect]) -> str:
    return " | ".join(str(e.data.get("text", "")) for e in effects)


def dice_event(rng: random.Random, profile: Profile) -> Event:
    """What the daemon's simulated shaker would report, with faults now and then."""
    r = rng.random()
    if r < 0.05:
        return Event("dice.not_flat")
    if r < 0.06:
        return Event("shaker.fault", {"reason": "cover open"})
    cut_die = rng.randint(1, 6) if profile is Profile.NSW else None
    return Event("dice.result", {"box_dice": [rng.randint(1, 6) for _ in range(3)],
                                 "cut_die": cut_die})


def device_events(status: dict[str, Any], rng: random.Random, profile: Profile) -> list[Event]:
    """The daemon's part: dice for the shaker, a CSPRNG cut (NZ 9.3A(c)) - seeded here."""
    if status["awaiting"] == "shaker":
        return [dice_event(rng, profile)]
    if status["awaiting"] == "cut.selected":
        d = random_cut(profile, rng=rng)
        options = sorted(o.value for o in d.options or ())
        return [Event("cut.selected", {"cut": d.cut.value, "options": options})]
    return []


def session(
    profile: Profile, rounds: int, seed: int, boxes: int = 8, replay_check: bool = False,
    **config: Any,
) -> tuple[list[dict[str, Any]], list[Effect], PaiGowMachine, PaiGowState]:
    """Play `rounds` rounds with PaiGowSim and synthetic dice; the round records and all effects."""
    m = PaiGowMachine(PaiGowConfig(profile, boxes=boxes, **config))
    state = m.initial()
    sim = PaiGowSim(random.Random(seed), profile, boxes)
    device_rng = random.Random(seed + 1)
    records: list[dict[str, Any]] = []
    effects: list[Effect] = []
    for _ in range(rounds * 40):
        status = m.status(state)
        events = device_events(status, device_rng, profile) or sim.next_events(status)
        assert events, f"nobody acts in {status['state']} awaiting {status['awaiting']}"
        for event in events:
            if replay_check:
                state, out = step_checked(m, state, event)
            else:
                state, out = m.step(state, event, NOW)
            effects += out
            records += [dict(e.data) for e in out if e.kind == "round"]
        if len(records) >= rounds:
            return records, effects, m, state
    raise AssertionError(f"only {len(records)} rounds in {rounds * 40} turns")
