"""Pay tables: Trips (10.9), Blind (10.12) and the jackpot events (15.2.9). Seed values default.

Odds are exact integer ratios ("3 to 2"); a payment is ``stake * win // stake_unit`` cents, i.e.
rounded down to the cent (the house keeps a sub-cent remainder, e.g. 3:2 on an odd-cent Blind).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType

from controller.games.uth.evaluator import Category
from shared.errors import InputError

C = Category


@dataclass(frozen=True, order=True)
class Odds:
    """``win`` to ``per``: a winning stake of ``per`` cents wins ``win`` cents."""

    win: int
    per: int = 1

    def __post_init__(self) -> None:
        if self.win < 0 or self.per <= 0:
            raise InputError(f"bad odds {self.win}:{self.per}")

    def pay(self, stake: int) -> int:
        """Winnings on ``stake`` cents, rounded down to the cent."""
        return stake * self.win // self.per

    def __str__(self) -> str:
        return f"{self.win} to {self.per}"

    @classmethod
    def parse(cls, text: str) -> Odds:
        """``50`` (50 to 1), ``3:2`` or ``3/2`` (3 to 2)."""
        parts = text.replace("/", ":").split(":")
        try:
            values = [int(p) for p in parts]
        except ValueError:
            raise InputError(f"bad odds {text!r}") from None
        if len(values) == 1:
            return cls(values[0])
        if len(values) == 2:
            return cls(values[0], values[1])
        raise InputError(f"bad odds {text!r}")


PayTable = Mapping[Category, Odds]

# Rule 10.9 (Trips, regardless of the dealer's hand, 10.7.1).
TRIPS_PAYTABLE: PayTable = MappingProxyType(
    {
        C.ROYAL_FLUSH: Odds(50),  # 10.9.1
        C.STRAIGHT_FLUSH: Odds(40),  # 10.9.2
        C.FOUR_OF_A_KIND: Odds(30),  # 10.9.3
        C.FULL_HOUSE: Odds(8),  # 10.9.4
        C.FLUSH: Odds(7),  # 10.9.5
        C.STRAIGHT: Odds(4),  # 10.9.6
        C.THREE_OF_A_KIND: Odds(3),  # 10.9.7
    }
)

# Rule 10.12 (Blind, only with a straight or better that beats the dealer, 10.7.3.5).
BLIND_PAYTABLE: PayTable = MappingProxyType(
    {
        C.ROYAL_FLUSH: Odds(500),  # 10.12.1
        C.STRAIGHT_FLUSH: Odds(50),  # 10.12.2
        C.FOUR_OF_A_KIND: Odds(10),  # 10.12.3
        C.FULL_HOUSE: Odds(3),  # 10.12.4
        C.FLUSH: Odds(3, 2),  # 10.12.5
        C.STRAIGHT: Odds(1),  # 10.12.6
    }
)

PLAY_ODDS = Odds(1)  # 10.10
ANTE_ODDS = Odds(1)  # 10.11


def parse_paytable(text: str, categories: tuple[Category, ...]) -> PayTable:
    """Comma-separated odds for ``categories`` in order, e.g. ``50,40,30,8,7,4,3``."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != len(categories):
        names = ",".join(c.label for c in categories)
        raise InputError(f"pay table {text!r}: need {len(categories)} odds for {names}")
    return MappingProxyType({c: Odds.parse(p) for c, p in zip(categories, parts, strict=True)})


TRIPS_CATEGORIES = tuple(TRIPS_PAYTABLE)
BLIND_CATEGORIES = tuple(BLIND_PAYTABLE)


def _fixed_awards() -> Mapping[Category, int]:
    return MappingProxyType(
        {
            C.FOUR_OF_A_KIND: 50_000,  # 15.2.9.3: $500
            C.FULL_HOUSE: 15_000,  # 15.2.9.4: $150
            C.FLUSH: 10_000,  # 15.2.9.5: $100
        }
    )


@dataclass(frozen=True)
class JackpotPayTable:
    """Rule 15.2.9 (amounts in cents) and the optional bonus jackpot of 15.2.10-15.2.11.

    Royal Flush: the greater of ``royal_minimum`` and ``royal_share`` of the meter (15.2.9.1);
    Straight Flush: the greater of ``straight_flush_minimum`` and ``straight_flush_share``
    (15.2.9.2); the other events pay fixed amounts. A bonus jackpot amount of 0 means the
    operator does not offer it (15.2.10 "may offer"); the seed gives no amounts for it.
    """

    royal_minimum: int = 5_000_000
    royal_share: Fraction = Fraction(1)
    straight_flush_minimum: int = 500_000
    straight_flush_share: Fraction = Fraction(1, 10)
    fixed: Mapping[Category, int] = field(default_factory=_fixed_awards)
    bonus_for_royal: int = 0
    bonus_for_straight_flush: int = 0

    def __post_init__(self) -> None:
        for name in ("royal_minimum", "straight_flush_minimum"):
            if getattr(self, name) < 0:
                raise InputError(f"{name} must not be negative")
        for name in ("royal_share", "straight_flush_share"):
            share = getattr(self, name)
            if not 0 <= share <= 1:
                raise InputError(f"{name} must be within 0..1, got {share}")
        if any(v < 0 for v in self.fixed.values()):
            raise InputError("fixed jackpot awards must not be negative")
        if self.bonus_for_royal < 0 or self.bonus_for_straight_flush < 0:
            raise InputError("bonus jackpots must not be negative")
