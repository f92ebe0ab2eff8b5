"""Cents as a person reads them: the console's one money formatter (never a float)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any


def dollars(cents: Any) -> str:
    """12345 -> "$123.45", -5 -> "-$0.05"; anything that is not an integer number of cents
    (None, a float, a bool) -> "-": the page shows no figure rather than a wrong one."""
    if not isinstance(cents, int) or isinstance(cents, bool):
        return "-"
    sign = "-" if cents < 0 else ""
    return f"{sign}${abs(cents) // 100:,}.{abs(cents) % 100:02d}"


def percent(rate: Any) -> str:
    """An exact rate ("1/4", a Fraction) as a percentage to 0.01 %, rounded half to even."""
    try:
        hundredths = round(Fraction(rate) * 10_000)
    except (TypeError, ValueError, ZeroDivisionError):
        return "-"
    sign = "-" if hundredths < 0 else ""
    return f"{sign}{abs(hundredths) // 100}.{abs(hundredths) % 100:02d}%"


def basis_points(rate: Any) -> str:
    """An exact rate in basis points, as `pool set --increment-bp` takes it: "1/4" -> "2500";
    a rate that is no whole number of them shows as its exact fraction."""
    try:
        bp = Fraction(rate) * 10_000
    except (TypeError, ValueError, ZeroDivisionError):
        return "-"
    return str(bp.numerator) if bp.denominator == 1 else str(bp)
