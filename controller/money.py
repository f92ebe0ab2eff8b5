"""Money on a person's terminal: integer cents <-> dollars-and-cents text, in one place.

Amounts are integer cents everywhere inside tablectl; these are the only conversions to and from
what people read and type. Integer and Decimal arithmetic only, never float. The formatter itself
is shared/money.py's (the meter's driver, which never imports controller, uses it too); the
table and head office import it from here.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from shared.errors import InputError
from shared.money import dollars, dollars_or_dash

__all__ = ["dollars", "dollars_or_dash", "parse_cents"]


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
