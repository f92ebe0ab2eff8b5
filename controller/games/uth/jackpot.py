"""Progressive jackpot (rule 15): the pool, its contributions and a round's awards.

``award(state, entries, table)`` is a pure function from the pool state and the round's
qualifying hands (15.2.6: two hole cards plus the flop) to the ordered payouts and the pool's
new state. All money is integer cents; percentages are exact ``Fraction``s.

Funding model (documented in docs/uth.md):

- Each jackpot wager adds ``increment`` of itself to the meter and ``hidden`` of itself to the
  hidden reserve. Sub-cent parts are carried exactly (``carry``/``reserve_carry``) until they
  make a whole cent, so no contribution is lost or invented.
- Above ``ceiling`` the meter stops; the overflow goes to the reserve.
- A Royal Flush resets the meter to ``seed``, funded from the reserve, the house paying any
  shortfall.
- The meter pays the percentage part of Royal and Straight Flush awards (15.2.9.1-15.2.9.2),
  rounded down to the cent with the remainder left in the meter. When a guaranteed minimum is
  larger, the house pays the difference. Fixed awards (15.2.9.3-15.2.9.5) and bonus jackpots
  (15.2.10) are paid by the house, not the meter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from fractions import Fraction
from math import floor
from typing import Any

from controller.games.uth.cards import Card, check_distinct
from controller.games.uth.evaluator import Category, category_of, hand_rank
from controller.games.uth.paytables import JackpotPayTable
from shared.errors import InputError


@dataclass(frozen=True)
class PoolState:
    amount: int  # the meter (2.4.3), cents
    seed: int  # the meter's value after a Royal Flush reset (15.2.5)
    increment: Fraction = Fraction(0)  # share of each jackpot wager added to the meter
    hidden: Fraction = Fraction(0)  # share of each jackpot wager added to the reserve
    reserve: int = 0  # hidden reserve, cents: funds resets; receives the overflow
    ceiling: int | None = None  # the meter never shows more; the excess overflows
    carry: Fraction = Fraction(0)  # exact sub-cent meter contributions not yet shown
    reserve_carry: Fraction = Fraction(0)

    def __post_init__(self) -> None:
        for name in ("amount", "seed", "reserve"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise InputError(f"pool {name} must be whole cents >= 0, got {value!r}")
        if not (self.increment >= 0 and self.hidden >= 0 and self.increment + self.hidden <= 1):
            raise InputError("increment and hidden rates must be >= 0 and sum to at most 1")
        if self.ceiling is not None and self.ceiling < self.seed:
            raise InputError(f"ceiling {self.ceiling} is below the seed {self.seed}")

    @property
    def total(self) -> Fraction:
        """Everything the pool holds, exactly: meter + reserve + carried sub-cents."""
        return self.amount + self.reserve + self.carry + self.reserve_carry


def _overflow(state: PoolState) -> PoolState:
    if state.ceiling is not None and state.amount > state.ceiling:
        excess = state.amount - state.ceiling
        return replace(state, amount=state.ceiling, reserve=state.reserve + excess)
    return state


def contribute(state: PoolState, wagers: Sequence[int]) -> PoolState:
    """Add the round's accepted jackpot wagers' contributions (exact, sub-cents carried)."""
    staked = sum(wagers)
    meter = state.carry + staked * state.increment
    reserve = state.reserve_carry + staked * state.hidden
    meter_cents, reserve_cents = floor(meter), floor(reserve)
    return _overflow(
        replace(
            state,
            amount=state.amount + meter_cents,
            carry=meter - meter_cents,
            reserve=state.reserve + reserve_cents,
            reserve_carry=reserve - reserve_cents,
        )
    )


class Award(StrEnum):
    BONUS = "bonus_jackpot"
    FOUR_OF_A_KIND = "four_of_a_kind"
    FULL_HOUSE = "full_house"
    FLUSH = "flush"
    STRAIGHT_FLUSH = "straight_flush"
    ROYAL_FLUSH = "royal_flush"
    REFUND = "refund"


_FIXED_AWARD = {
    Category.FOUR_OF_A_KIND: (Award.FOUR_OF_A_KIND, "15.2.9.3"),
    Category.FULL_HOUSE: (Award.FULL_HOUSE, "15.2.9.4"),
    Category.FLUSH: (Award.FLUSH, "15.2.9.5"),
}


@dataclass(frozen=True)
class JackpotEntry:
    """One valid jackpot wager and its qualifying hand (15.2.6: two hole cards + the flop)."""

    box: int
    cards: tuple[Card, ...]
    wager: int = 100
    folded: bool = False  # 9.6.2, 10.4.1: a folded hand still qualifies; kept for the record

    def __post_init__(self) -> None:
        if len(self.cards) != 5:
            raise InputError(f"box {self.box}: the jackpot hand is 2 hole cards + the flop")
        check_distinct(self.cards)
        if self.wager <= 0:
            raise InputError(f"box {self.box}: bad jackpot wager {self.wager}")


@dataclass(frozen=True)
class Payout:
    box: int
    award: Award
    from_meter: int
    from_house: int
    rule: str

    @property
    def amount(self) -> int:
        return self.from_meter + self.from_house

    def as_json(self) -> dict[str, Any]:
        return {
            "box": self.box,
            "award": self.award.value,
            "amount": self.amount,
            "from_meter": self.from_meter,
            "from_house": self.from_house,
            "rule": self.rule,
        }


@dataclass(frozen=True)
class JackpotResult:
    payouts: tuple[Payout, ...]  # in payment order
    state: PoolState
    seed_from_house: int = 0  # part of a reset the reserve could not fund

    @property
    def house_paid(self) -> int:
        return self.seed_from_house + sum(p.from_house for p in self.payouts)


def _right_to_left(entries: Sequence[JackpotEntry]) -> list[JackpotEntry]:
    """15.2.12: from the playing area to the dealer's immediate right (the highest box)."""
    return sorted(entries, key=lambda e: -e.box)


def _check_entries(entries: Sequence[JackpotEntry]) -> None:
    boxes = [e.box for e in entries]
    if len(set(boxes)) != len(boxes):
        raise InputError(f"one jackpot wager per box (rules 5.6, 5.7): {sorted(boxes)}")


def award(
    state: PoolState, entries: Sequence[JackpotEntry], table: JackpotPayTable
) -> JackpotResult:
    """Award a round's jackpot events and return the payouts in payment order."""
    _check_entries(entries)
    ordered = _right_to_left(entries)
    category = {e.box: category_of(hand_rank(e.cards)) for e in entries}
    royals = [e for e in ordered if category[e.box] is Category.ROYAL_FLUSH]
    straights = [e for e in ordered if category[e.box] is Category.STRAIGHT_FLUSH]
    payouts: list[Payout] = []

    # Sweep 1, right to left (15.2.12): the payments that do not touch the meter. Bonus
    # jackpots go to every other valid jackpot wager when a Royal or Straight Flush is won
    # (15.2.10.2), never to its winner (15.2.10.3), before the progressive awards
    # (15.2.10.4). One bonus per player per round, at the Royal amount if a Royal was won.
    bonus = table.bonus_for_royal if royals else table.bonus_for_straight_flush
    winners = {e.box for e in royals + straights}
    for e in ordered:
        if winners and bonus and e.box not in winners:
            payouts.append(Payout(e.box, Award.BONUS, 0, bonus, "15.2.10"))
        if category[e.box] in _FIXED_AWARD:
            kind, rule = _FIXED_AWARD[category[e.box]]
            amount = table.fixed.get(category[e.box], 0)
            if amount:
                payouts.append(Payout(e.box, kind, 0, amount, rule))

    meter = state.amount
    # Straight Flushes before a Royal (15.2.14). k winners share the aggregate of k successive
    # 10% payouts, each taken from the meter left by the one before (15.2.13.2):
    # A = P * (1 - (1 - 10%)^k), or each get the minimum if greater.
    if straights:
        k = len(straights)
        rest = 1 - table.straight_flush_share
        aggregate = meter * (1 - rest**k)
        share = floor(aggregate / k)
        top_up = max(0, table.straight_flush_minimum - share)
        rule = "15.2.9.2" if k == 1 else "15.2.13.2"
        for e in straights:
            payouts.append(Payout(e.box, Award.STRAIGHT_FLUSH, share, top_up, rule))
        meter -= k * share  # the rounding remainder stays in the meter

    seed_from_house = 0
    reserve = state.reserve
    if royals:
        # 15.2.9.1 / 15.2.13.1: the winners share the meter or each get the minimum.
        k = len(royals)
        share = floor(meter * table.royal_share / k)
        top_up = max(0, table.royal_minimum - share)
        rule = "15.2.9.1" if k == 1 else "15.2.13.1"
        for e in royals:
            payouts.append(Payout(e.box, Award.ROYAL_FLUSH, share, top_up, rule))
        meter -= k * share
        # Reset to the seed on top of what is left; the reserve funds it first.
        from_reserve = min(reserve, state.seed)
        reserve -= from_reserve
        seed_from_house = state.seed - from_reserve
        meter += state.seed

    new_state = _overflow(replace(state, amount=meter, reserve=reserve))
    return JackpotResult(tuple(payouts), new_state, seed_from_house)


def cancel(state: PoolState, entries: Sequence[JackpotEntry]) -> JackpotResult:
    """15.3.1: a void hand or misdeal: the jackpot wagers are cancelled and returned."""
    _check_entries(entries)
    refunds = tuple(
        Payout(e.box, Award.REFUND, 0, e.wager, "15.3.1") for e in _right_to_left(entries)
    )
    return JackpotResult(refunds, state)


def jackpot_round(
    state: PoolState,
    entries: Sequence[JackpotEntry],
    table: JackpotPayTable,
    *,
    void: bool = False,
) -> JackpotResult:
    """A whole round: contributions of the accepted wagers, then the awards. A void round or
    misdeal cancels and returns the wagers and leaves the pool untouched (15.3.1)."""
    if void:
        return cancel(state, entries)
    return award(contribute(state, [e.wager for e in entries]), entries, table)


def expected_return(
    pool_amount: int, wager: int, table: JackpotPayTable, probability: dict[Category, Fraction]
) -> Fraction:
    """Expected payment per unit wagered on one jackpot wager with the meter at
    ``pool_amount`` (a single winner at the table; bonus jackpots excluded)."""
    value = Fraction(0)
    for cat, amount in table.fixed.items():
        value += probability[cat] * amount
    value += probability[Category.ROYAL_FLUSH] * max(
        table.royal_minimum, floor(pool_amount * table.royal_share)
    )
    value += probability[Category.STRAIGHT_FLUSH] * max(
        table.straight_flush_minimum, floor(pool_amount * table.straight_flush_share)
    )
    return value / wager
