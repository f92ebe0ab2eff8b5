"""Exact money arithmetic for Pai Gow settlement: integer cents, commission in basis points."""

from __future__ import annotations

from dataclasses import dataclass

from shared.errors import InputError

BASIS_POINTS = 10_000
STANDARD_COMMISSION_BP = 500  # 5% (NSW 14.1-14.2, NZ 6.11/6.14, ACT 12.6-12.8)


@dataclass(frozen=True, slots=True)
class TableMoney:
    """The money rules of one table, all integers.

    chip_unit: the smallest chip the table pays with, in cents (NSW 14.3 "collectable in chips").
    commission_bp: commission in basis points; ACT 12.9 lets the operator charge less than 5%,
    no profile allows more.
    house_liability: the maximum house liability displayed for co-banking, in cents (NZ 5.1(c)
    "up to the displayed maximum (if any)", ACT 5.4); None: none displayed.

    Two readings a regulator should confirm (docs/paigow.md), each changing money:
    cobank_box_maximum: whether the table maximum limits wagers while the house co-banks. None
    takes the profile's reading: not in ACT (5.4 "no box maximums"), yes in NZ (6.8 lifts it only
    for a player/banker "other than as a co-banker"). True/False force one reading.
    unpayable_up: ACT, under a multiples notice, a win that cannot be paid exactly in chips and that
    15.10's first sentence does not cut (a multiple of the minimum, or under it): True pays it up to
    the next payable amount as 15.10's second sentence does without a notice; False pays it down to
    the lower payable amount.
    """

    minimum: int
    maximum: int | None
    chip_unit: int = 100
    commission_bp: int = STANDARD_COMMISSION_BP
    house_liability: int | None = None
    cobank_box_maximum: bool | None = None
    unpayable_up: bool = True

    def __post_init__(self) -> None:
        if self.chip_unit <= 0:
            raise InputError(f"chip_unit must be a positive number of cents, got {self.chip_unit}")
        if not 0 <= self.commission_bp <= STANDARD_COMMISSION_BP:
            raise InputError(
                f"commission_bp {self.commission_bp} outside 0..{STANDARD_COMMISSION_BP}"
                " (no profile allows more than 5%)"
            )
        if self.minimum <= 0:
            raise InputError(f"table minimum must be positive, got {self.minimum}")
        if self.maximum is not None and self.maximum < self.minimum:
            raise InputError(f"table maximum {self.maximum} is below the minimum {self.minimum}")
        if self.house_liability is not None and self.house_liability <= 0:
            raise InputError(f"house liability must be positive, got {self.house_liability}")

    def commission_exact(self, won: int) -> tuple[int, int]:
        """Commission on an amount won as (whole cents, remainder in 1/10000 of a cent)."""
        return divmod(won * self.commission_bp, BASIS_POINTS)

    def commission_chips(self, won: int) -> int:
        """Commission taken in chips: the nearest lower collectable amount (NSW 14.3, ACT 12.8)."""
        cents, _ = self.commission_exact(won)
        return cents - cents % self.chip_unit

    def commission_chips_up(self, won: int) -> int:
        """Commission rounded up to the chips: the payment down to the lower payable amount."""
        cents, rest = self.commission_exact(won)
        cents += rest > 0
        return -(-cents // self.chip_unit) * self.chip_unit

    def payable_exactly(self, amount: int) -> bool:
        """Whether a win on `amount` less commission is an exact number of chips (NZ 6.12)."""
        cents, rest = self.commission_exact(amount)
        return rest == 0 and amount % self.chip_unit == 0 and cents % self.chip_unit == 0
