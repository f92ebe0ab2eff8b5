"""A linked pool's money, exactly: parameters, balances, meters, and the conservation check.

`Pool` is an immutable value; every operation returns a new one, so a message that fails
halfway changes nothing. Money is integer cents; rates and sub-cent carries are exact
`Fraction`s. The books balance when

    seed_in + contributions == current + paid + overflow + reserve

with `current` = meter + its sub-cent carry, `reserve` = hidden reserve + its carry, `seed_in`
= the initial seed plus what the house put in at resets and authorised adjustments,
`contributions` = every accepted jackpot wager times the rates in force, `paid` = what awards
took from the meter (the house pays fixed awards, bonuses and minimum top-ups directly: metered
as `house_paid`, outside the pool) and `overflow` = meter money above the ceiling.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from math import floor
from types import MappingProxyType
from typing import Any, NamedTuple

from controller.games.uth.evaluator import Category
from controller.games.uth.jackpot import JackpotEntry, JackpotResult, PoolState, award
from controller.games.uth.paytables import JackpotPayTable
from shared.errors import InputError, TablectlError
from shared.link import contract

BASIS_POINTS = 10_000


class PoolValue(NamedTuple):
    """What a pool value on the wire carries (shared/link/contract.py `pool_message`)."""

    amount: int  # the meter, cents
    version: int
    awards: int  # hits answered from the pool so far: a lower amount with more is an award
    wager: int | None  # the qualifying jackpot wager, cents (15.2.5.3); None: not configured


class ConservationError(TablectlError):
    """The pool's books do not balance: the pool stops until someone finds out why."""


def paytable_json(t: JackpotPayTable) -> dict[str, Any]:
    return {
        "royal_minimum": t.royal_minimum,
        "royal_share": str(t.royal_share),
        "straight_flush_minimum": t.straight_flush_minimum,
        "straight_flush_share": str(t.straight_flush_share),
        "fixed": {c.label: v for c, v in t.fixed.items()},
        "bonus_for_royal": t.bonus_for_royal,
        "bonus_for_straight_flush": t.bonus_for_straight_flush,
    }


def paytable_from_json(d: dict[str, Any]) -> JackpotPayTable:
    return JackpotPayTable(
        royal_minimum=int(d["royal_minimum"]),
        royal_share=Fraction(d["royal_share"]),
        straight_flush_minimum=int(d["straight_flush_minimum"]),
        straight_flush_share=Fraction(d["straight_flush_share"]),
        fixed=MappingProxyType({Category.from_label(k): int(v) for k, v in d["fixed"].items()}),
        bonus_for_royal=int(d["bonus_for_royal"]),
        bonus_for_straight_flush=int(d["bonus_for_straight_flush"]),
    )


@dataclass(frozen=True)
class Params:
    """What an operator sets. Changes go through `Ledger.set_params` (logged, refused while
    tables are live unless forced by an authorised operator)."""

    seed: int  # the base: the meter after a Royal Flush reset (15.2.5)
    increment: Fraction  # share of each jackpot wager to the meter
    hidden: Fraction = Fraction(0)  # share to the hidden reserve
    ceiling: int | None = None  # the limit: above it, meter money goes to overflow
    paytable: JackpotPayTable = field(default_factory=JackpotPayTable)
    # 15.2.5.3: the jackpot wager every linked table uses, cents; None: not checked.
    wager: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.seed, int) or self.seed < 0:
            raise InputError(f"seed must be whole cents >= 0, got {self.seed!r}")
        if self.wager is not None and (not isinstance(self.wager, int)
                                       or isinstance(self.wager, bool)
                                       or not 0 < self.wager <= contract.MAX_CENTS):
            raise InputError(f"wager must be whole cents in 1..{contract.MAX_CENTS},"
                             f" got {self.wager!r}")
        if not (self.increment >= 0 and self.hidden >= 0 and self.increment + self.hidden <= 1):
            raise InputError("increment and hidden rates must be >= 0 and sum to at most 1")
        if self.ceiling is not None and self.ceiling < self.seed:
            raise InputError(f"ceiling {self.ceiling} is below the seed {self.seed}")

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "seed": self.seed,
            "increment": str(self.increment),
            "hidden": str(self.hidden),
            "ceiling": self.ceiling,
            "paytable": paytable_json(self.paytable),
        }
        if self.wager is not None:  # absent otherwise: stored parameters keep their bytes
            out["wager"] = self.wager
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Params:
        return cls(
            seed=int(d["seed"]),
            increment=Fraction(d["increment"]),
            hidden=Fraction(d["hidden"]),
            ceiling=None if d.get("ceiling") is None else int(d["ceiling"]),
            paytable=paytable_from_json(d["paytable"]),
            wager=None if d.get("wager") is None else int(d["wager"]),
        )


@dataclass(frozen=True)
class Pool:
    id: str
    params: Params
    amount: int  # current: the meter, cents
    carry: Fraction = Fraction(0)  # meter sub-cents not yet shown
    reserve: int = 0
    reserve_carry: Fraction = Fraction(0)
    seed_in: Fraction = Fraction(0)
    contributions: Fraction = Fraction(0)
    paid: int = 0  # from the meter
    house_paid: int = 0  # fixed awards, bonuses, minimum top-ups (not pool money)
    overflow: int = 0
    wagers_in: int = 0  # "in": jackpot wagers accepted, net of cancellations, cents
    hits: int = 0  # rounds with a jackpot hit answered
    wins: int = 0  # cents awarded (meter + house)
    version: int = 1
    stopped: str | None = None

    @classmethod
    def new(cls, pool_id: str, params: Params) -> Pool:
        return cls(pool_id, params, amount=params.seed, seed_in=Fraction(params.seed))

    def value(self) -> PoolValue:
        return PoolValue(self.amount, self.version, self.hits, self.params.wager)

    # -- the books ------------------------------------------------------------------------------
    def imbalance(self) -> Fraction:
        """seed_in + contributions - (current + paid + overflow + reserve); zero when sound."""
        held = self.amount + self.carry + self.reserve + self.reserve_carry
        return self.seed_in + self.contributions - (held + self.paid + self.overflow)

    def check(self) -> Pool:
        off = self.imbalance()
        if off != 0 or self.amount < 0 or self.reserve < 0:
            raise ConservationError(
                f"pool {self.id}: seed_in {self.seed_in} + contributions {self.contributions}"
                f" != current {self.amount + self.carry} + paid {self.paid} + overflow"
                f" {self.overflow} + reserve {self.reserve + self.reserve_carry}"
                f" (off by {off} cents)"
            )
        return self

    def _capped(self) -> Pool:
        ceiling = self.params.ceiling
        if ceiling is not None and self.amount > ceiling:
            excess = self.amount - ceiling
            return replace(self, amount=ceiling, overflow=self.overflow + excess)
        return self

    # -- operations ---------------------------------------------------------------------------
    def contribute(self, staked: int) -> tuple[Pool, Fraction, Fraction]:
        """Accepted jackpot wagers totalling `staked` cents. Returns the new pool and the exact
        meter and reserve parts (kept to reverse them on a cancellation)."""
        meter_part = staked * self.params.increment
        reserve_part = staked * self.params.hidden
        pool = self.contributed(meter_part, reserve_part, staked, 1)
        return pool.check(), meter_part, reserve_part

    def contributed(self, meter_part: Fraction, reserve_part: Fraction, staked: int,
                    changes: int) -> Pool:
        """`changes` contributions at once, their exact parts summed: the same pool as
        applying them one by one (the carries are exact, the ceiling only ever cuts what
        comes in). Contributions commute, so a batch's, or another worker's share (the
        ledger's `pool_shares`), is added in one step. Not checked here: the caller checks
        (a report shows an unbalanced pool as it is)."""
        if changes == 0:
            return self
        m = self.carry + meter_part
        r = self.reserve_carry + reserve_part
        whole_m, whole_r = floor(m), floor(r)
        amount, overflow = self.amount + whole_m, self.overflow
        ceiling = self.params.ceiling
        if ceiling is not None and amount > ceiling:
            amount, overflow = ceiling, overflow + amount - ceiling
        pool = replace(
            self,
            amount=amount,
            carry=m - whole_m,
            reserve=self.reserve + whole_r,
            reserve_carry=r - whole_r,
            overflow=overflow,
            contributions=self.contributions + meter_part + reserve_part,
            wagers_in=self.wagers_in + staked,
            version=self.version + changes,
        )
        return pool

    def cancel(self, staked: int, meter_part: Fraction, reserve_part: Fraction) -> Pool:
        """15.3.1: a void round's jackpot wagers are returned; their contributions come out."""
        pool = self._moved(-meter_part, -reserve_part)
        if pool.amount < 0 or pool.reserve < 0:
            raise InputError(f"pool {self.id}: cancelling {staked} would take the meter below 0")
        pool = replace(
            pool,
            contributions=self.contributions - meter_part - reserve_part,
            wagers_in=self.wagers_in - staked,
            version=self.version + 1,
        )
        return pool.check()

    def _moved(self, meter: Fraction, reserve: Fraction) -> Pool:
        m = self.carry + meter
        r = self.reserve_carry + reserve
        return replace(
            self,
            amount=self.amount + floor(m),
            carry=m - floor(m),
            reserve=self.reserve + floor(r),
            reserve_carry=r - floor(r),
        )

    def award(self, entries: Sequence[JackpotEntry],
              meter_at_hit: int | None = None) -> tuple[Pool, JackpotResult]:
        """A round's jackpot hands, awarded by the UTH engine's `award` (15.2). A hit held
        for approval is awarded on the meter as it was at the hit (`meter_at_hit`): what
        tables added since stays in the meter, for the next jackpot."""
        later = 0
        if meter_at_hit is not None and 0 <= meter_at_hit < self.amount:
            later = self.amount - meter_at_hit
        state = PoolState(
            amount=self.amount - later,
            seed=self.params.seed,
            increment=self.params.increment,
            hidden=self.params.hidden,
            reserve=self.reserve,
            ceiling=None,  # head office keeps overflow apart from the reserve (_capped)
            carry=self.carry,
            reserve_carry=self.reserve_carry,
        )
        result = award(state, entries, self.params.paytable)
        from_meter = sum(p.from_meter for p in result.payouts)
        from_house = sum(p.from_house for p in result.payouts)
        pool = replace(
            self,
            amount=result.state.amount + later,
            reserve=result.state.reserve,
            seed_in=self.seed_in + result.seed_from_house,
            paid=self.paid + from_meter,
            house_paid=self.house_paid + from_house,
            hits=self.hits + 1,
            wins=self.wins + from_meter + from_house,
            version=self.version + 1,
        )
        return pool._capped().check(), result

    def with_params(self, params: Params) -> Pool:
        """New parameters; a lower ceiling moves meter money above it to overflow now."""
        return replace(self, params=params, version=self.version + 1)._capped().check()

    # -- storage ------------------------------------------------------------------------------
    def row(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "params": json.dumps(self.params.as_json(), sort_keys=True),
            "amount": self.amount,
            "carry": str(self.carry),
            "reserve": self.reserve,
            "reserve_carry": str(self.reserve_carry),
            "seed_in": str(self.seed_in),
            "contributions": str(self.contributions),
            "paid": self.paid,
            "house_paid": self.house_paid,
            "overflow": self.overflow,
            "wagers_in": self.wagers_in,
            "hits": self.hits,
            "wins": self.wins,
            "version": self.version,
            "stopped": self.stopped,
        }

    @classmethod
    def from_row(cls, r: dict[str, Any]) -> Pool:
        return cls(
            id=r["id"],
            params=Params.from_json(json.loads(r["params"])),
            amount=int(r["amount"]),
            carry=Fraction(r["carry"]),
            reserve=int(r["reserve"]),
            reserve_carry=Fraction(r["reserve_carry"]),
            seed_in=Fraction(r["seed_in"]),
            contributions=Fraction(r["contributions"]),
            paid=int(r["paid"]),
            house_paid=int(r["house_paid"]),
            overflow=int(r["overflow"]),
            wagers_in=int(r["wagers_in"]),
            hits=int(r["hits"]),
            wins=int(r["wins"]),
            version=int(r["version"]),
            stopped=r["stopped"],
        )

    def meters(self) -> dict[str, Any]:
        p = self.params
        return {
            "pool": self.id,
            "in": self.wagers_in,
            "current": self.amount,
            "hits": self.hits,
            "wins": self.wins,
            "overflow": self.overflow,
            "reserve": self.reserve,
            "base": p.seed,
            "limit": p.ceiling,
            "rate": str(p.increment),
            "hidden_rate": str(p.hidden),
            "paid_from_meter": self.paid,
            "paid_by_house": self.house_paid,
            "seed_in": str(self.seed_in),
            "contributions": str(self.contributions),
            "imbalance": str(self.imbalance()),
            "version": self.version,
            "stopped": self.stopped,
        }


def requested_changes(*, seed: int | None = None, increment: Fraction | None = None,
                      hidden: Fraction | None = None, ceiling: int | None = None,
                      no_ceiling: bool = False, wager: int | None = None) -> dict[str, Any]:
    """The parameter changes an operator asks for, as `Ledger.set_params` takes them: the
    CLI's `pool set` and the console's form both build theirs here (None: unchanged;
    `no_ceiling`: the ceiling removed). InputError for a ceiling and no ceiling together or for
    nothing to change; `Params` checks each value."""
    changes: dict[str, Any] = {name: value for name, value in (
        ("seed", seed), ("increment", increment), ("hidden", hidden), ("ceiling", ceiling),
        ("wager", wager)) if value is not None}
    if no_ceiling:
        if ceiling is not None:
            raise InputError("a ceiling and no ceiling together")
        changes["ceiling"] = None
    if not changes:
        raise InputError("nothing to change: give a seed, an increment, a hidden increment,"
                         " a ceiling or a wager")
    return changes
