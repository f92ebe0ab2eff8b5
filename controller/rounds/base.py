"""The contract between the daemon and a game's round state machine.

The daemon journals every Event before it calls `step`; `step` is pure and deterministic in
(state, event, now), so replaying the journal rebuilds the same state. Effects describe what must
happen outside (device commands, display, outbox rows for head office, round records, alarms);
the daemon carries them out after the event's transaction commits, except `outbox` and `round`
effects, which commit in that same transaction.

Event kinds (the `kind` string; `data` is a JSON object; docs/events.md lists every field):
  table.open / table.close                         key switch (table-closed), sim start
  chung.on {box} / chung.off {box}                 Pai Gow chung sensor of a box
  off.pressed {box} / off.released {box}           Pai Gow OFF button of a box
  bet.on {box} / bet.off {box}                     UTH jackpot bet sensor of a seat
  dice.result {box_dice: [a, b, c], cut_die: n|null}
  dice.not_flat {}                                 a die not lying flat: reshake
  shaker.fault {reason}                            cover open, motor fault, no answer,
                                                   "disconnected: ..." (port gone)
  meter.fault {reason} / meter.ready {}            meter port gone / back (UTH 11.11)
  shuffler.ready {deck} / shuffler.jam {reason} / shuffler.fault {reason}
  card.dispensed {card, index}                     every card out of the shuffler, in order
  deck.check {ok, missing: [..], extra: [..], duplicate: [..], unreadable: n}
  dealer.<action> {...}                            dealer keypad (new_round, no_more_bets, shake,
                                                   confirm, misdeal, void, decision, result, ...)
  ho.pool {pool, amount, version} / ho.award {...} head office (jackpot pool value and awards)
  link.down / link.up                              head-office link state
  tick {}                                          the clock moved (timeouts)

Effect kinds:
  device  {device, command, args}    e.g. shaker/shake, shuffler/shuffle, sensors/lamps,
                                     rng/select_cut
  display {mode, text, ...}          the progressive meter / table display
  outbox  {type, payload}            a message for head office (committed with the event)
  round   {number, status, summary}  a round completed or voided (committed with the event)
  alarm   {severity, text}           surveillance or technician attention
  log     {text}                     worth a line in the log, nothing else
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

JSON = dict[str, Any]

EFFECT_KINDS = frozenset({"device", "display", "outbox", "round", "alarm", "log"})
JOURNALED_EFFECTS = frozenset({"outbox", "round"})


@dataclass(frozen=True, slots=True)
class Event:
    kind: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def as_json(self) -> JSON:
        return {"kind": self.kind, "data": dict(self.data)}


@dataclass(frozen=True, slots=True)
class Effect:
    kind: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in EFFECT_KINDS:
            raise ValueError(f"unknown effect kind {self.kind!r}")

    def as_json(self) -> JSON:
        return {"kind": self.kind, "data": dict(self.data)}


@dataclass(frozen=True, slots=True)
class Now:
    """The injected clock: UTC wall time for records, monotonic milliseconds for timeouts."""

    utc: str  # ISO 8601, e.g. "2026-11-25T21:40:00.123Z"
    mono_ms: int


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
