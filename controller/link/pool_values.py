"""Which of head office's pool values the link journals (UTH 2.4.3, 11.11; issue 16, the SD
card). Head office republishes each pool every second and publishes a new value after every
batch of any table on the pool. Journaling each cost an fsync'd commit every ~2 s on an idle
table (528 KB a minute at the device, `bench_card.py --linked --idle 60`) and one per
contribution of the whole group in play.
Journaled now: a lower value, an award or a new qualifying wager at once; a higher one at most
every `show_every_s` (the newest then, at the next tick); the same one at most every
`refresh_s`, carrying `fresh_ms` (refresh + the pool timeout) so that the round machine holds it
that long; head office quiet for the pool timeout is a `tick {pool_quiet_ms}` (the jackpot goes
offline at once), and its next value is journaled at once. The clock is the caller's."""

from __future__ import annotations

from typing import Any

Value = dict[str, Any]  # a parsed pool value (contract.parse_pool)


class PoolValues:
    def __init__(self, show_every_s: float, refresh_s: float, timeout_s: float, now: float
                 ) -> None:
        self.show_every_s = show_every_s
        self.refresh_s = refresh_s
        self.timeout_s = timeout_s
        self.fresh_ms = round(1000 * (refresh_s + timeout_s))
        self._last: Value | None = None  # the value last journaled
        self._last_at = 0.0  # when
        self._heard = now  # a valid value last came, journaled or not (start: a grace period)
        self._held: Value | None = None  # a higher value waiting its turn
        self._quiet = True  # since start, or since head office went quiet: the next at once

    def stale(self, value: Value) -> bool:
        """Older than one already taken (two workers' publishes crossed): never shown."""
        newest = self._held or self._last
        return newest is not None and value["version"] < newest["version"]

    def heard(self, value: Value, now: float) -> Value | None:
        """A value from head office (not stale): the `ho.pool` event data to journal now, or
        None (the same value, refreshed recently; or a higher one, held for its turn)."""
        self._heard = now
        last = self._last
        if not self._quiet and last is not None:
            since = now - self._last_at
            same = (value["version"], value["amount"]) == (last["version"], last["amount"])
            higher = (not same and value["amount"] >= last["amount"]
                      and value.get("awards") == last.get("awards")
                      and value.get("wager") == last.get("wager"))
            if same and since < self.refresh_s:
                return None  # it only keeps the machine's copy fresh
            if higher and since < self.show_every_s:
                self._held = value  # the newest goes at the next turn
                return None
        return self._taken(value, now)  # lower, an award, a new wager: at once

    def due(self, now: float) -> Value | None:
        """The held higher value, once its turn has come."""
        if self._held is not None and now - self._last_at >= self.show_every_s:
            return self._taken(self._held, now)
        return None

    def quiet_ms(self, now: float) -> int | None:
        """How long head office has been quiet, once past the timeout (11.11), else None."""
        quiet = now - self._heard
        if quiet <= self.timeout_s:
            return None
        self._quiet = True
        return round(1000 * quiet)

    def _taken(self, value: Value, now: float) -> Value:
        self._last, self._last_at = value, now
        self._held, self._quiet = None, False
        return {**value, "fresh_ms": self.fresh_ms}
