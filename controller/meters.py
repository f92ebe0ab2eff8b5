"""Accounting meters of a table, per table and per box, for the current shift and lifetime.

Derived from the journal alone: each closed round's record (its `round` effect: number, status,
summary) adds to the figures, and a journaled `meters.close_shift` event closes the shift (its
closing figures go to head office as a `shift_meters` outbox message). The daemon applies the
same records, in the same order, live and at start (a replay), so both give the same figures and
they reconcile exactly with the journal's round records (`tablectl journal summary`).

All amounts are integer cents. A voided round is counted and moves no money (every wager went
back) but the wagers a supervisor forfeited (NSW 16.6, UTH 13.10: its `house_net`). Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.events import Kind, OutboxType

CLOSE_SHIFT = Kind.METERS_CLOSE_SHIFT  # the event that closes a shift (journaled by the daemon)
SHIFT_METERS = OutboxType.SHIFT_METERS  # its outbox message type (shared/link/contract.py)


@dataclass
class Box:
    """One box's figures: what its players wagered and were paid, by wager type."""

    wagers: Counter[str] = field(default_factory=Counter)
    payouts: Counter[str] = field(default_factory=Counter)
    commission: int = 0
    jackpot_contributions: int = 0
    jackpot_awards: int = 0
    player_net: int = 0  # what the box's players won (+) or lost (-), commission included

    def as_json(self) -> dict[str, Any]:
        return {
            "wagers": dict(sorted(self.wagers.items())),
            "payouts": dict(sorted(self.payouts.items())),
            "commission": self.commission,
            "jackpot_contributions": self.jackpot_contributions,
            "jackpot_awards": self.jackpot_awards,
            "player_net": self.player_net,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Box:
        return cls(Counter(d["wagers"]), Counter(d["payouts"]), d["commission"],
                   d["jackpot_contributions"], d["jackpot_awards"], d["player_net"])


@dataclass
class Figures:
    """A table's figures over some span of rounds (a shift, or its lifetime)."""

    rounds_played: int = 0  # completed rounds
    rounds_voided: int = 0
    wagers: Counter[str] = field(default_factory=Counter)
    payouts: Counter[str] = field(default_factory=Counter)
    commission: int = 0
    jackpot_contributions: int = 0
    jackpot_awards: int = 0
    house_win: int = 0  # the house's net from the rounds (the rounds' `house_net`)
    first_round: int | None = None
    last_round: int | None = None
    boxes: dict[int, Box] = field(default_factory=dict)

    def add(self, number: int, status: str, summary: Mapping[str, Any]) -> None:
        if self.first_round is None:
            self.first_round = number
        self.last_round = number
        if status != "completed":
            self.rounds_voided += 1
            self.house_win += _int(summary, "house_net")  # forfeited wagers, if any
            return
        self.rounds_played += 1
        for part in round_parts(summary):
            box = self.boxes.setdefault(part.box, Box())
            for kind, amount in part.wagers.items():
                self.wagers[kind] += amount
                box.wagers[kind] += amount
            for kind, amount in part.payouts.items():
                self.payouts[kind] += amount
                box.payouts[kind] += amount
            self.commission += part.commission
            box.commission += part.commission
            self.jackpot_contributions += part.jackpot_contribution
            box.jackpot_contributions += part.jackpot_contribution
            self.jackpot_awards += part.jackpot_award
            box.jackpot_awards += part.jackpot_award
            box.player_net += part.net
        self.commission += _int(_obj(summary, "settlement"), "banker_commission")
        self.house_win += house_net(summary)

    def as_json(self) -> dict[str, Any]:
        return {
            "rounds_played": self.rounds_played,
            "rounds_voided": self.rounds_voided,
            "first_round": self.first_round,
            "last_round": self.last_round,
            "wagers": dict(sorted(self.wagers.items())),
            "payouts": dict(sorted(self.payouts.items())),
            "commission": self.commission,
            "jackpot_contributions": self.jackpot_contributions,
            "jackpot_awards": self.jackpot_awards,
            "house_win": self.house_win,
            "boxes": {str(b): self.boxes[b].as_json() for b in sorted(self.boxes)},
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Figures:
        return cls(d["rounds_played"], d["rounds_voided"], Counter(d["wagers"]),
                   Counter(d["payouts"]), d["commission"], d["jackpot_contributions"],
                   d["jackpot_awards"], d["house_win"], d["first_round"], d["last_round"],
                   {int(b): Box.from_json(v) for b, v in d["boxes"].items()})


@dataclass(frozen=True)
class BoxPart:
    """One box's share of one completed round."""

    box: int
    wagers: dict[str, int]
    payouts: dict[str, int]
    commission: int = 0
    jackpot_contribution: int = 0
    jackpot_award: int = 0
    net: int = 0


def round_parts(summary: Mapping[str, Any]) -> list[BoxPart]:
    """Each box's wagers, payouts, commission and jackpot figures in a completed round's
    summary, for either game (Pai Gow names `settlement.results`, UTH `boxes` and `jackpot`).
    Total: a summary missing a part (a round with no wagers) gives no parts, never an error."""
    if summary.get("game") == "paigow":
        return [
            BoxPart(
                box=_int(r, "box"),
                wagers={"wager": _int(r, "amount")},
                payouts={"wager": _int(r, "won")},
                commission=_int(r, "commission"),
                net=_int(r, "net"),
            )
            for r in _list(_obj(summary, "settlement"), "results")
        ]
    jackpot = _obj(summary, "jackpot")
    wager = _int(jackpot, "wager")
    locked = {b for b in _list(jackpot, "boxes") if isinstance(b, int)}
    awards: Counter[int] = Counter()
    for payout in _list(jackpot, "payouts"):
        awards[_int(payout, "box")] += _int(payout, "amount")
    parts = []
    seen: set[int] = set()
    for b in _list(summary, "boxes"):
        number = _int(b, "box")
        seen.add(number)
        spots = [s for s in _list(b, "spots") if isinstance(s, Mapping)]
        parts.append(
            BoxPart(
                box=number,
                wagers={str(s.get("spot")): _int(s, "placed") for s in spots},
                payouts={str(s.get("spot")): _int(s, "won") for s in spots},
                jackpot_contribution=wager if number in locked else 0,
                jackpot_award=awards[number],
                net=_int(b, "net"),
            )
        )
    # A jackpot wager on a box with no main-game hand (it cannot happen under 15.2, but the
    # figures must still add up to the journal's if a summary ever says so).
    for number in sorted((locked | set(awards)) - seen):
        parts.append(BoxPart(box=number, wagers={}, payouts={},
                             jackpot_contribution=wager if number in locked else 0,
                             jackpot_award=awards[number]))
    return parts


def house_net(summary: Mapping[str, Any]) -> int:
    if summary.get("game") == "paigow":
        return _int(_obj(summary, "settlement"), "house_net")
    return _int(summary, "house_net")


def _int(data: Any, key: str) -> int:
    value = data.get(key, 0) if isinstance(data, Mapping) else 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _obj(data: Any, key: str) -> Mapping[str, Any]:
    value = data.get(key) if isinstance(data, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _list(data: Any, key: str) -> list[Any]:
    value = data.get(key) if isinstance(data, Mapping) else None
    return value if isinstance(value, list) else []


def incomplete_words(d: Mapping[str, Any], source: str) -> str:
    """A shift close's `incomplete` (Meters.close_incomplete) in words, `source` saying where
    the rounds went: the one phrasing of the table's CLI and head office's console and CLI."""
    first = d["first_round_counted"]
    counted = "no round counted" if first is None else f"rounds before {first} not counted"
    if not d["shift"]:
        return f"lifetime figures INCOMPLETE: {counted} ({source}); this shift's figures are whole"
    return f"INCOMPLETE: {counted} ({source})"


@dataclass
class Meters:
    """The table's lifetime figures and the open shift's, fed with the journal's records."""

    lifetime: Figures = field(default_factory=Figures)
    shift: Figures = field(default_factory=Figures)
    shift_number: int = 1
    shift_opened_utc: str | None = None  # the first record of the shift
    last_close: dict[str, Any] | None = None  # the last shift closed: its closing message
    # Replayed without a checkpoint from a journal whose records 1..N retention had pruned:
    # the lifetime figures lack those rounds, and so does the open shift until it is closed.
    missing_through: int = 0
    shift_incomplete: bool = False

    def record(self, utc: str, kind: str, rounds: list[tuple[int, str, Mapping[str, Any]]]
               ) -> dict[str, Any] | None:
        """One journal record: its event kind and the rounds it closed. A shift close returns
        the closing figures (the `shift_meters` payload) and opens the next shift. A record
        that closes no round and no shift changes nothing (the shift opens with its first
        round)."""
        if not rounds and kind != CLOSE_SHIFT:
            return None
        if self.shift_opened_utc is None:
            self.shift_opened_utc = utc
        for number, status, summary in rounds:
            summary = summary if isinstance(summary, Mapping) else {}
            self.lifetime.add(number, status, summary)
            self.shift.add(number, status, summary)
        if kind != CLOSE_SHIFT:
            return None
        closing = {
            "shift": self.shift_number,
            "opened_utc": self.shift_opened_utc,
            "closed_utc": utc,
            "figures": self.shift.as_json(),
            "lifetime": _headline(self.lifetime),
        }
        lacking = self.close_incomplete()
        if lacking is not None:  # absent when whole: the form older tables sent
            closing["incomplete"] = lacking
        self.last_close = closing
        self.shift_incomplete = False
        self.shift = Figures()
        self.shift_number += 1
        self.shift_opened_utc = None
        return closing

    def to_state(self) -> dict[str, Any]:
        """Everything, to be read back by `from_state` (the daemon's checkpoint)."""
        return {"lifetime": self.lifetime.as_json(), "shift": self.shift.as_json(),
                "shift_number": self.shift_number, "shift_opened_utc": self.shift_opened_utc,
                "last_close": self.last_close, "missing_through": self.missing_through,
                "shift_incomplete": self.shift_incomplete}

    @classmethod
    def from_state(cls, d: Mapping[str, Any]) -> Meters:
        return cls(Figures.from_json(d["lifetime"]), Figures.from_json(d["shift"]),
                   d["shift_number"], d["shift_opened_utc"], d["last_close"],
                   int(d.get("missing_through", 0)), bool(d.get("shift_incomplete", False)))

    def incomplete(self) -> dict[str, Any] | None:
        """What these meters lack (None: nothing): the records pruned before a replay."""
        if not self.missing_through:
            return None
        return {"pruned_through_seq": self.missing_through, "lifetime": True,
                "shift": self.shift_incomplete}

    def close_incomplete(self) -> dict[str, Any] | None:
        """What a shift close sends about the rounds these meters lack (None: nothing): the
        journal records pruned before the replay (1..missing_through), the first round counted
        since, and whether the closing shift lacks them (`shift`; else only the lifetime
        figures it carries do). Head office shows the shift as INCOMPLETE (docs/mqtt.md)."""
        if not self.missing_through:
            return None
        return {"missing_through": self.missing_through, "shift": self.shift_incomplete,
                "first_round_counted": self.lifetime.first_round}

    def headline(self) -> dict[str, Any]:
        """The shift's and the lifetime's totals without the per-box detail (for status)."""
        return {
            "shift": {"number": self.shift_number, "opened_utc": self.shift_opened_utc,
                      **_headline(self.shift)},
            "lifetime": _headline(self.lifetime),
            "incomplete": self.incomplete(),
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "shift": {"number": self.shift_number, "opened_utc": self.shift_opened_utc,
                      **self.shift.as_json()},
            "lifetime": self.lifetime.as_json(),
            "last_close": None if self.last_close is None else {
                k: self.last_close[k] for k in ("shift", "opened_utc", "closed_utc")
            },
            "incomplete": self.incomplete(),
        }


def _headline(f: Figures) -> dict[str, Any]:
    """A lifetime's totals without the per-box detail (what a shift close carries along)."""
    out = f.as_json()
    out.pop("boxes")
    return out


def replay(records: Iterable[tuple[str, str, list[tuple[int, str, Mapping[str, Any]]]]],
           missing_through: int = 0) -> Meters:
    """The meters of a journal's records, in order: (utc, event kind, [(round, status,
    summary)]) each, as `Journal.iter_events` gives them; `missing_through`: the records before
    these were pruned (the figures are marked as lacking them)."""
    meters = Meters(missing_through=missing_through, shift_incomplete=missing_through > 0)
    for utc, kind, rounds in records:
        meters.record(utc, kind, rounds)
    return meters
