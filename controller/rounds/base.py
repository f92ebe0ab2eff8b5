"""The contract between the daemon and a game's round state machine, and the guarded step.

The daemon calls `step(state, event, now)` and then journals the event together with the effects
it returned, in one transaction. That order is safe because `step` is pure and deterministic in
(state, event, now): nothing has happened outside until the transaction commits, and replaying
the journal rebuilds the same state. Effects describe what must happen outside (device commands,
display, outbox rows for head office, round records, alarms); the daemon carries them out after
the transaction commits, except `outbox` and `round` effects, which commit in it.

Event kinds, who emits them and their fields: `controller/events.py` (docs/events.md).

`Guarded` is the step every machine shares. Each machine declares its `ROUTES`, one `Route` per
event kind: the step (a plain function of the machine's context, state, data and now), the phases
the event is accepted in, and the phases the step may lead to. An event outside its phases is
refused with the machine's own wording before any step runs; after the step, a phase the route
does not declare is a bug (`UndeclaredTransition`); where the route says the phase a step
leads to (`then`), the guard sets it and the step does not. `accepted()` (the phase x event
table) and `transition_mermaid()` (the graph) are what docs/rounds-*.md and the tests print from the
machine itself.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Generic, Protocol, TypeVar

from controller.events import (
    DEALER_PREFIX,
    EFFECT_KINDS,
    JOURNALED_EFFECTS,
    JSON,
    Effect,
    Event,
    Now,
)
from shared.errors import TablectlError

__all__ = [
    "EFFECT_KINDS", "JOURNALED_EFFECTS", "JSON", "Effect", "Event", "Guarded", "Handler", "Now",
    "RoundMachine", "Route", "UndeclaredTransition", "json_copy", "skip_rounds",
]

S = TypeVar("S")


class RoundMachine(Protocol, Generic[S]):
    """One game's round state machine. Implementations hold configuration, never mutable state."""

    game: str

    def initial(self) -> S: ...

    def step(self, state: S, event: Event, now: Now) -> tuple[S, list[Effect]]:
        """Apply one event. Never raises on input from outside: an event refused in the current
        state yields a log or alarm effect with `"refused": true` and the state unchanged."""
        ...

    def to_json(self, state: S) -> JSON: ...

    def from_json(self, data: JSON) -> S: ...

    def status(self, state: S) -> JSON:
        """What `tablectl status` shows: state name, round number, and game-specific fields.
        Nothing the players have not been shown (no hole cards): it reaches technicians'
        terminals during play."""
        ...

    def seat_view(self, state: S) -> JSON:
        """`status` plus what each seat sees of its own hand: for the simulated players and
        dealer (`tablectld --simulate`), never for the control socket."""
        ...

    def resume(self, state: S) -> list[Effect]:
        """Effects to re-issue after a restart (pending device commands, the current display)."""
        ...


Step = Callable[..., tuple[Any, list[Effect]]]  # (context, state, data, now) -> (state, effects)
Moves = Iterable[str] | Mapping[str, Iterable[str]]


@dataclass(frozen=True, slots=True)
class Route:
    """One event kind a machine handles, as the machine declares it: the step (a plain function
    of the machine's context, state, data and now), the phases the event is accepted in, and
    where the step leads. `then`: the phase a step that returns leads to, from every accepted
    phase or `{from: phase}`; the guard applies it, the step never sets it, so the graph is read
    off the route. `to`: the phases a step may choose among, from every accepted phase or
    `{from: phases}`, where the outcome decides (a void, the last card); the step sets it and
    the guard checks it. Staying in the phase it was accepted in is always declared (the step
    only keeps books, or answers with an alarm); `to` and `then` list moves."""

    kind: str
    step: Step
    accepted_in: frozenset[str]
    moves: frozenset[tuple[str, str]]
    then: tuple[tuple[str, str], ...]

    def __init__(self, kind: str, step: Step, accepted_in: Iterable[str], to: Moves = (),
                 then: str | Mapping[str, str] | None = None) -> None:
        accepted = frozenset(accepted_in)
        if isinstance(to, Mapping):
            moves = {(frm, t) for frm, targets in to.items() for t in targets}
        else:
            moves = {(frm, t) for frm in accepted for t in to}
        if then is None:
            led: dict[str, str] = {}
        elif isinstance(then, Mapping):
            led = dict(then)
        else:
            led = dict.fromkeys(sorted(accepted), then)
        both = {frm for frm, _ in moves} & set(led)
        if both:
            raise UndeclaredTransition(f"{kind}: from {sorted(both)} the step both chooses (to)"
                                       " and is led (then)")
        moves |= set(led.items())
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "step", step)
        object.__setattr__(self, "accepted_in", accepted)
        object.__setattr__(self, "moves", frozenset((f, t) for f, t in moves if f != t))
        object.__setattr__(self, "then", tuple(sorted(led.items())))


@dataclass(frozen=True, slots=True)
class Handler(Generic[S]):
    """A route bound to one machine's context: what `Guarded.dispatch` calls."""

    handler: Callable[[S, Mapping[str, Any], Now], tuple[S, list[Effect]]]
    phases: frozenset[str]
    moves: frozenset[tuple[str, str]] = frozenset()
    then: Mapping[str, str] = field(default_factory=dict)  # from -> the phase the guard sets


class UndeclaredTransition(TablectlError):
    """A step led to a phase its route does not declare: a bug in the machine, not a refusal."""


class Guarded(Generic[S]):
    """The guarded step: refuse an event outside its phases, else dispatch it to its handler,
    then set the phase its route leads to (`then`), or check that the phase the step chose is
    one its route declares (`to`).

    A machine sets `phases` (its phase enum, in order), binds its declared `Route`s with `bind`,
    and says how to read a state's phase and how to word a refusal (`refusal` returns the
    exception to raise). A step that leads where its route does not declare raises
    `UndeclaredTransition`: the machines answer it as any bug (a technician alarm, the state
    kept), unless `strict` is set, as the round tests set it, to fail loudly.
    """

    phases: tuple[str, ...]
    routes: dict[str, Handler[S]]
    declared: tuple[Route, ...]
    strict: bool = False

    def bind(self, declared: Iterable[Route], context: Any) -> None:
        """Bind each route's step to `context` (the configuration, or the machine itself)."""
        self.declared = tuple(declared)
        known = set(self.phases)
        self.routes = {}
        for r in self.declared:
            if r.kind in self.routes:
                raise UndeclaredTransition(f"{r.kind} is routed twice")
            unknown = (r.accepted_in | {p for move in r.moves for p in move}) - known
            outside = {frm for frm, _ in r.moves} - r.accepted_in
            if unknown or outside or not r.accepted_in:
                raise UndeclaredTransition(
                    f"{r.kind}: {sorted(unknown)} are not phases, or it moves from"
                    f" {sorted(outside)} where it is not accepted"
                )
            self.routes[r.kind] = Handler(partial(r.step, context), r.accepted_in, r.moves,
                                          dict(r.then))

    def phase_of(self, state: S) -> str:
        raise NotImplementedError

    def with_phase(self, state: S, phase: str) -> S:
        """`state` in `phase`: how the guard applies a route's `then` (the states are frozen
        dataclasses whose `phase` is their phase enum)."""
        enum = type(state.phase)  # type: ignore[attr-defined]
        return replace(state, phase=enum(phase))  # type: ignore[type-var]

    def refusal(self, state: S, kind: str) -> Exception:
        raise NotImplementedError

    def dispatch(self, state: S, event: Event, now: Now) -> tuple[S, list[Effect]]:
        """`event.kind` must be routed (the caller decides what an unknown kind means)."""
        route = self.routes[event.kind]
        before = self.phase_of(state)
        if before not in route.phases:
            raise self.refusal(state, event.kind)
        new, effects = route.handler(state, event.data, now)
        after = self.phase_of(new)
        led = route.then.get(before)
        if led is not None:
            if after != before:
                raise UndeclaredTransition(
                    f"{event.kind} led from {before} to {after} itself; its route leads to {led}"
                    " (then): the guard sets it"
                )
            new, after = self.with_phase(new, led), led
        if after != before and (before, after) not in route.moves:
            declared = sorted(t for f, t in route.moves if f == before)
            raise UndeclaredTransition(
                f"{event.kind} led from {before} to {after}, which its route does not declare"
                f" (from {before}: {declared or 'none'})"
            )
        return new, effects

    def failed(self, exc: Exception) -> None:
        """A step raised something other than a refusal: re-raised under `strict`."""
        if self.strict and isinstance(exc, UndeclaredTransition):
            raise exc

    def dealer_actions(self) -> frozenset[str]:
        """The keypad actions this game has (`dealer.<action>` routed): what the control socket
        and the keypad configuration may offer; anything else is refused before the journal."""
        return frozenset(k[len(DEALER_PREFIX):] for k in self.routes if k.startswith(DEALER_PREFIX))

    def accepted(self) -> dict[str, list[str]]:
        """Phase -> the event kinds accepted in it, in routing order."""
        return {p: [k for k, r in self.routes.items() if p in r.phases] for p in self.phases}

    def accepted_markdown(self) -> str:
        """The phase x event table (docs/rounds-*.md embed it; a test compares)."""
        kinds = list(self.routes)
        head = "| event | " + " | ".join(f"`{p}`" for p in self.phases) + " |"
        rule = "|---|" + "---|" * len(self.phases)
        rows = [
            f"| `{k}` | " + " | ".join("x" if p in self.routes[k].phases else ""
                                       for p in self.phases) + " |"
            for k in kinds
        ]
        return "\n".join([head, rule, *rows])

    def transitions(self) -> list[tuple[str, str, str]]:
        """Every declared move (from, event kind, to), in routing then phase order: the
        graph docs/rounds-*.md draw. Staying in a phase is not a move."""
        return [
            (frm, r.kind, to)
            for r in self.declared
            for frm in self.phases
            for to in self.phases if (frm, to) in r.moves
        ]

    def _edges(self) -> dict[tuple[str, str], list[str]]:
        edges: dict[tuple[str, str], list[str]] = {}
        for frm, kind, to in self.transitions():
            edges.setdefault((frm, to), []).append(kind)
        return edges

    def transition_mermaid(self) -> str:
        """The declared moves as a Mermaid state diagram (an edge per phase pair, its events
        joined), generated into docs/rounds-*.md; a test compares."""
        lines = ["```mermaid", "stateDiagram-v2", f"    [*] --> {self.phases[0]}"]
        lines += [f"    {f} --> {t}: {', '.join(kinds)}" for (f, t), kinds in self._edges().items()]
        return "\n".join([*lines, "```"])

    def transition_dot(self) -> str:
        """The same graph in Graphviz DOT (for a picture where Graphviz is installed)."""
        lines = ["digraph rounds {", "  rankdir=LR;", "  node [shape=box, style=rounded];"]
        for (frm, to), kinds in self._edges().items():
            label = "\\n".join(kinds)
            lines.append(f'  "{frm}" -> "{to}" [label="{label}"];')
        return "\n".join([*lines, "}"])


def skip_rounds(state: S, field: str, data: Any) -> S:
    """A recovery record (`journal.loss_accepted`, written by `tablectl journal accept-loss` or
    `start-fresh`; docs/journal.md, "Recovering"): the round numbers before its `round_next`
    were used by the journal that was lost (head office, or the high-water mark, holds them),
    so the round the table is on, or opens next, takes `round_next` if it is behind it. The
    journal makes the same skip (records.round_next), so the round's record matches it.
    Written offline, without the machine: the daemon's replay applies it. A number already
    at or past it is kept; anything else about the state is unchanged."""
    to = data.get("round_next") if isinstance(data, Mapping) else None
    if type(to) is not int or to <= getattr(state, field):
        return state
    return replace(state, **{field: to})  # type: ignore[type-var]


_ATOMS = frozenset({str, int, float, bool, type(None)})


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON-native value (dicts, lists, scalars) for the states' snapshots.
    `dataclasses.asdict` and `copy.deepcopy` handle any object and cost ~10x as much per node:
    a state is copied on every step and replay, so that was most of a round's time. Anything
    not JSON-native (an enum, a tuple) goes to `copy.deepcopy`."""
    kind = type(value)
    if kind is dict:
        return {k: v if type(v) in _ATOMS else json_copy(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _ATOMS else json_copy(v) for v in value]
    if kind in _ATOMS:
        return value
    return copy.deepcopy(value)
