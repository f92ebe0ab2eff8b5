"""Money as a person reads and types it: integer cents <-> dollars-and-cents text, in one place.

Amounts are integer cents everywhere inside tablectl; these are the only conversions to and from
what people read and type: the table's (controller), the meter's driver's (devices) and head
office's. Here, in shared/, because all three use them and devices/ never imports controller.
Integer and Decimal arithmetic only, never float.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from shared.errors import InputError


def dollars(cents: int) -> str:
    """1234567 -> "$12,345.67"; -250 -> "-$2.50" (the sign before the dollar sign)."""
    sign = "-" if cents < 0 else ""
    return f"{sign}${abs(cents) // 100:,}.{abs(cents) % 100:02d}"


def dollars_or_dash(cents: Any) -> str:
    """`dollars` of an integer amount, "-" for anything else (None, a float, a bool: a field a
    record may lack): a page or a line shows no figure rather than a wrong one."""
    if not isinstance(cents, int) or isinstance(cents, bool):
        return "-"
    return dollars(cents)


def parse_cents(text: str, what: str = "amount") -> int:
    """Dollars with at most two decimals ("12.50", "$1,000") -> integer cents, exactly;
    InputError naming `what` otherwise (negative amounts are refused)."""
    raw = text.strip().lstrip("$").replace(",", "")
    try:
        value = Decimal(raw)
    except InvalidOperation:
        raise InputError(f"bad {what} {text!r}: dollars such as 10 or 12.50") from None
    cents = value * 100
    if not value.is_finite() or value < 0 or cents != cents.to_integral_value():
        raise InputError(f"bad {what} {text!r}: dollars >= 0 with at most two decimals")
    return int(cents)
