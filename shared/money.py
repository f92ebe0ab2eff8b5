"""Integer cents as a person reads them: the one formatter of money in tablectl.

Here rather than in controller/money.py (which re-exports it and adds parsing) because the
meter's driver formats amounts too, and devices/ never imports controller. Integer arithmetic
only, never float.
"""

from __future__ import annotations

from typing import Any


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
