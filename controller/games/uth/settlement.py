"""Settlement of a round in integer cents (rules 6.2-6.3, 9.1.1, 10.1-10.12, 11.8).

Every spot's result says what was placed, what stake was settled (11.8), the outcome, the
winnings, what goes back to the player and the rule that decided it. ``net = returned - placed``
and the house's result is the negative of the players' total, so money is conserved by
construction and checked by the tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from controller.games.uth.cards import Card
from controller.games.uth.deal import Deal
from controller.games.uth.evaluator import Category, category_floor, category_of, hand_rank
from controller.games.uth.paytables import (
    ANTE_ODDS,
    BLIND_PAYTABLE,
    PLAY_ODDS,
    TRIPS_PAYTABLE,
    Odds,
    PayTable,
)
from controller.games.uth.wagers import Action, BoxPlay
from shared.errors import InputError

# The category floors are looked up when a hand is settled, not at import: they need the
# evaluator's tables, and importing this module (every `tablectl` command does, for `Spot`)
# must not build them (~0.6 s here, ~4 s of CPU under qemu-user: docs/daemon.md "Start-up").


class Outcome(StrEnum):
    WIN = "win"
    LOSE = "lose"
    STAND_OFF = "stand_off"


class Spot(StrEnum):
    ANTE = "ante"
    BLIND = "blind"
    PLAY = "play"
    TRIPS = "trips"


@dataclass(frozen=True)
class Limits:
    """Table sign minimum and maximum for one wagering area, in cents (6.1)."""

    minimum: int = 0
    maximum: int | None = None

    def __post_init__(self) -> None:
        if self.minimum < 0 or (self.maximum is not None and self.maximum < self.minimum):
            raise InputError(f"bad limits {self.minimum}..{self.maximum}")

    def stake(self, placed: int) -> int:
        """The amount settled: a wager under the minimum is valid as placed (6.2, 11.8.1);
        one over the maximum is paid or collected to the maximum (6.3, 11.8.2)."""
        if self.maximum is not None and placed > self.maximum:
            return self.maximum
        return placed


# The largest Play is four times the Ante (9.1.2): the Play area's maximum when the sign shows
# none of its own (6.1 "for each playing area"; docs/rounds-uth.md, "What a regulator should
# confirm").
PLAY_MAX_ANTES = 4


@dataclass(frozen=True)
class SettlementRules:
    trips: PayTable = field(default_factory=lambda: TRIPS_PAYTABLE)
    blind: PayTable = field(default_factory=lambda: BLIND_PAYTABLE)
    limits: Mapping[Spot, Limits] = field(default_factory=dict)

    def limits_for(self, spot: Spot) -> Limits:
        """The sign's limits for `spot`; the Play area, unless given, has no minimum (6.2: a
        Play is a multiple of the Ante) and PLAY_MAX_ANTES x the Ante's maximum (6.3, 11.8.2)."""
        if spot is Spot.PLAY and spot not in self.limits:
            ante = self.limits.get(Spot.ANTE, Limits()).maximum
            return Limits(0, None if ante is None else PLAY_MAX_ANTES * ante)
        return self.limits.get(spot, Limits())


@dataclass(frozen=True)
class SpotResult:
    spot: Spot
    placed: int
    stake: int  # settled amount (11.8); placed - stake goes back to the player untouched
    outcome: Outcome
    won: int  # winnings on the stake (0 unless WIN)
    rule: str
    below_minimum: bool = False

    @property
    def returned(self) -> int:
        """Money handed back to the player for this spot (stake + winnings on a win, the stake
        on a stand-off, nothing of the stake on a loss; the part over the maximum always)."""
        excess = self.placed - self.stake
        if self.outcome is Outcome.WIN:
            return excess + self.stake + self.won
        if self.outcome is Outcome.STAND_OFF:
            return excess + self.stake
        return excess

    @property
    def net(self) -> int:
        return self.returned - self.placed

    def as_json(self) -> dict[str, Any]:
        return {
            "spot": self.spot.value,
            "placed": self.placed,
            "stake": self.stake,
            "outcome": self.outcome.value,
            "won": self.won,
            "returned": self.returned,
            "net": self.net,
            "rule": self.rule,
            **({"below_minimum": True} if self.below_minimum else {}),
        }


@dataclass(frozen=True)
class BoxResult:
    box: int
    action: Action
    rank: int
    spots: tuple[SpotResult, ...]

    @property
    def category(self) -> Category:
        return category_of(self.rank)

    @property
    def net(self) -> int:
        return sum(s.net for s in self.spots)


@dataclass(frozen=True)
class RoundResult:
    dealer_rank: int
    dealer_qualifies: bool
    boxes: tuple[BoxResult, ...]  # in settlement order: from the dealer's right (10.4)

    @property
    def house_net(self) -> int:
        return -sum(b.net for b in self.boxes)


def _spot(
    rules: SettlementRules, spot: Spot, placed: int, outcome: Outcome, odds: Odds | None, rule: str
) -> SpotResult:
    limits = rules.limits_for(spot)
    stake = limits.stake(placed)
    won = odds.pay(stake) if outcome is Outcome.WIN and odds is not None else 0
    return SpotResult(spot, placed, stake, outcome, won, rule, placed < limits.minimum)


def _compare(player: int, dealer: int) -> Outcome:
    if player > dealer:
        return Outcome.WIN
    if player < dealer:
        return Outcome.LOSE
    return Outcome.STAND_OFF


def settle_box(
    play: BoxPlay, player_rank: int, dealer_rank: int, rules: SettlementRules | None = None
) -> BoxResult:
    """Settle one box's Ante, Blind, Play and Trips (the jackpot is separate, 15.2.7)."""
    rules = rules or SettlementRules()
    w = play.wagers
    d = play.decision
    spots: list[SpotResult] = []

    def add(spot: Spot, placed: int, outcome: Outcome, odds: Odds | None, rule: str) -> None:
        if placed:
            spots.append(_spot(rules, spot, placed, outcome, odds, rule))

    if d.action is Action.FOLD:
        rule = {"preflop": "9.1.1", "flop": "9.2.1", "river": "9.3.1"}[d.street.value]
        for spot, placed in ((Spot.ANTE, w.ante), (Spot.BLIND, w.blind), (Spot.TRIPS, w.trips)):
            add(spot, placed, Outcome.LOSE, None, rule)  # fold forfeits; 10.4.1: no payment
        return BoxResult(play.box, d.action, player_rank, tuple(spots))
    if d.action is Action.CONCEDE:
        for spot, placed in (
            (Spot.ANTE, w.ante),
            (Spot.BLIND, w.blind),
            (Spot.PLAY, w.play_amount(d)),
            (Spot.TRIPS, w.trips),
        ):
            add(spot, placed, Outcome.LOSE, None, "10.5")
        return BoxResult(play.box, d.action, player_rank, tuple(spots))

    cmp = _compare(player_rank, dealer_rank)
    qualifies = dealer_qualifies(dealer_rank)

    # Ante, 10.7.3.1-10.7.3.4, paid 1:1 (10.11).
    if not qualifies:
        add(Spot.ANTE, w.ante, Outcome.STAND_OFF, None, "10.7.3.4")
    else:
        rule = {Outcome.WIN: "10.7.3.1", Outcome.LOSE: "10.7.3.2", Outcome.STAND_OFF: "10.7.3.3"}
        add(Spot.ANTE, w.ante, cmp, ANTE_ODDS, rule[cmp] + "/10.11")

    # Blind, regardless of the dealer qualifying: 10.7.3.5-10.7.3.8, 10.12.
    category = category_of(player_rank)
    if cmp is Outcome.WIN and player_rank >= category_floor(Category.STRAIGHT):  # 10.7.3.5
        add(Spot.BLIND, w.blind, Outcome.WIN, rules.blind.get(category), "10.7.3.5/10.12")
    elif cmp is Outcome.WIN:
        add(Spot.BLIND, w.blind, Outcome.STAND_OFF, None, "10.7.3.7/10.12.7")
    elif cmp is Outcome.STAND_OFF:
        add(Spot.BLIND, w.blind, Outcome.STAND_OFF, None, "10.7.3.8/10.12.8")
    else:
        add(Spot.BLIND, w.blind, Outcome.LOSE, None, "10.7.3.6/10.12.9")

    # Play, regardless of the dealer qualifying: 10.7.2.1-10.7.2.3, paid 1:1 (10.10).
    rule = {Outcome.WIN: "10.7.2.1", Outcome.LOSE: "10.7.2.2", Outcome.STAND_OFF: "10.7.2.3"}
    add(Spot.PLAY, w.play_amount(d), cmp, PLAY_ODDS, rule[cmp] + "/10.10")

    # Trips, regardless of the dealer: 10.7.1, paid by its pay table (10.9).
    if player_rank >= category_floor(Category.THREE_OF_A_KIND):  # 10.7.1.1
        add(Spot.TRIPS, w.trips, Outcome.WIN, rules.trips.get(category), "10.7.1.1/10.9")
    else:
        add(Spot.TRIPS, w.trips, Outcome.LOSE, None, "10.7.1.2")
    return BoxResult(play.box, d.action, player_rank, tuple(spots))


def dealer_qualifies(dealer_rank: int) -> bool:
    return dealer_rank >= category_floor(Category.ONE_PAIR)  # 10.2: a pair or better


def settle_hands(
    dealer: Sequence[Card],
    boxes: Mapping[int, tuple[Sequence[Card], BoxPlay]],
    rules: SettlementRules | None = None,
) -> RoundResult:
    """Settle a round from each seven-card hand (10.1, 10.6): ``boxes`` maps box -> (cards,
    play). Boxes are settled from the dealer's right, i.e. the highest box first (10.4)."""
    dealer_rank = hand_rank(dealer)
    results = tuple(
        settle_box(play, hand_rank(cards), dealer_rank, rules)
        for _, (cards, play) in sorted(boxes.items(), reverse=True)
    )
    return RoundResult(dealer_rank, dealer_qualifies(dealer_rank), results)


def settle_round(
    deal: Deal, plays: Sequence[BoxPlay], rules: SettlementRules | None = None
) -> RoundResult:
    missing = {p.box for p in plays} ^ set(deal.boxes)
    if missing:
        raise InputError(f"boxes {sorted(missing)} are not both dealt and played")
    return settle_hands(deal.dealer_seven(), {p.box: (deal.seven(p.box), p) for p in plays}, rules)
