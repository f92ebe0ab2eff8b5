"""Debouncing one GPIO input, in pure code with the clock passed in.

gpiozero's mock pins ignore `bounce_time` and real contacts bounce for milliseconds, so the
driver feeds every raw edge here with the time it saw it, and asks what changed:

* a level counts once it has held for `debounce_s` (bounces shorter than that never show);
* `chatter_edges` raw changes within `chatter_window_s` mark the input chattering: no level is
  reported until it has been quiet for `quiet_s` (a loose wire must not play the game);
* an input that must not stay active (a keypad button) and is active for `stuck_s` is stuck;
  it is reported once, and cleared when it is released.

`feed(level, now)` records an edge; `poll(now)` returns the changes due by `now`, in order;
`deadline()` says when `poll` should be called next. Nothing here reads a clock or a pin, so the
tests drive time by hand.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from devices.errors import DevicesError

LEVEL, CHATTER, STUCK = "level", "chatter", "stuck"


@dataclass(frozen=True)
class Change:
    what: str  # LEVEL, CHATTER or STUCK
    value: bool  # the new level; chattering/stuck began (True) or ended (False)


@dataclass
class Debouncer:
    debounce_s: float
    initial: bool = False
    now: float = 0.0
    chatter_edges: int = 8
    chatter_window_s: float = 1.0
    quiet_s: float = 1.0
    stuck_s: float | None = None
    stable: bool = field(init=False)
    raw: bool = field(init=False)
    changed_at: float = field(init=False)
    chattering: bool = field(default=False, init=False)
    stuck: bool = field(default=False, init=False)
    _edges: deque[float] = field(default_factory=deque, init=False)
    _pending: list[Change] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        if self.debounce_s <= 0 or self.chatter_edges < 2 or self.quiet_s < self.debounce_s:
            raise DevicesError("debounce_s > 0, chatter_edges >= 2, quiet_s >= debounce_s")
        self.stable = self.raw = self.initial
        self.changed_at = self.now

    def feed(self, level: bool, now: float) -> None:
        if level == self.raw:
            return  # a repeated report of the same level (two callbacks for one edge)
        self.raw = level
        self.changed_at = now
        edges = self._edges
        edges.append(now)
        while edges and now - edges[0] > self.chatter_window_s:
            edges.popleft()
        if len(edges) >= self.chatter_edges and not self.chattering:
            self.chattering = True
            self._pending.append(Change(CHATTER, True))

    def poll(self, now: float) -> list[Change]:
        out, self._pending = self._pending, []
        quiet = now - self.changed_at
        if self.chattering:
            if quiet < self.quiet_s:
                return out
            self.chattering = False
            self._edges.clear()
            out.append(Change(CHATTER, False))
        if self.raw != self.stable and quiet >= self.debounce_s:
            self.stable = self.raw
            out.append(Change(LEVEL, self.stable))
            if self.stuck and not self.stable:
                self.stuck = False
                out.append(Change(STUCK, False))
        if (
            self.stuck_s is not None
            and self.stable
            and self.raw
            and not self.stuck
            and quiet >= self.stuck_s
        ):
            self.stuck = True
            out.append(Change(STUCK, True))
        return out

    def deadline(self) -> float | None:
        """The time of the next change `poll` could report, or None if none is due."""
        if self._pending:
            return self.changed_at
        if self.chattering:
            return self.changed_at + self.quiet_s
        if self.raw != self.stable:
            return self.changed_at + self.debounce_s
        if self.stuck_s is not None and self.stable and self.raw and not self.stuck:
            return self.changed_at + self.stuck_s
        return None
