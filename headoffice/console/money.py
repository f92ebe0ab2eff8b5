"""Rates as a person reads and types them in the console, and the parameter forms' dollars
(never a float). Amounts are shown by the one formatter, shared.money."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from shared.errors import InputError
from shared.money import dollars_or_dash, parse_cents

__all__ = ["param_changes", "parse_dollars", "parse_percent", "percent"]

_DOLLARS = re.compile(r"\$?(\d{1,13}|\d{1,3}(,\d{3}){1,4})(\.\d{1,2})?")


def percent(rate: Any) -> str:
    """An exact rate ("1/4", a Fraction) as a percentage to 0.01 %, rounded half to even."""
    try:
        hundredths = round(Fraction(rate) * 10_000)
    except (TypeError, ValueError, ZeroDivisionError):
        return "-"
    sign = "-" if hundredths < 0 else ""
    return f"{sign}{abs(hundredths) // 100}.{abs(hundredths) % 100:02d}%"


# A pool's parameters as a person reads them: (key in Params.as_json, label, formatter).
_PARAMS = (("seed", "seed", "money"), ("increment", "increment (to the pool)", "rate"),
           ("hidden", "hidden increment (reserve)", "rate"), ("ceiling", "ceiling", "money"),
           ("wager", "qualifying wager (UTH 15.2.5.3)", "money"))


def param_changes(old: dict[str, Any] | None,
                  new: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    """What a parameter change changes, only that: (what, before, after) in dollars and
    percent, from two `Params.as_json()` (None: the pool did not exist / has no new values)."""
    old, new = old or {}, new or {}
    rows = []
    for key, label, kind in _PARAMS:
        a, b = old.get(key), new.get(key)
        if a == b or (not old and b is None):
            continue
        rows.append((label, _show(a, kind, key in old), _show(b, kind, key in new)))
    if old.get("paytable") != new.get("paytable") and old and new:
        rows.append(("award pay table", "as before", "changed (see the parameter log)"))
    return rows


def _show(value: Any, kind: str, present: bool) -> str:
    if not present:
        return "-"
    if value is None:
        return "none"
    return percent(value) if kind == "rate" else dollars_or_dash(value)


def parse_dollars(text: str, what: str) -> int:
    """ "$1,234.50" / "1234.5" / "1234" -> cents (shared.money.parse_cents, exact); only
    plain dollars of at most 13 digits, so "1e9" or "-5" are refused; InputError (a
    ValueError) naming `what` otherwise."""
    if not _DOLLARS.fullmatch(text.strip()):
        raise InputError(f"{what}: dollars and cents such as 5000 or 5,000.00, got"
                         f" {text[:20]!r}")
    return parse_cents(text, what)


def parse_percent(text: str, what: str) -> Fraction:
    """ "25" / "2.5" / "0.25%" -> the exact rate (1/4, 1/40, 1/400), to 0.01 %; InputError
    (a ValueError) naming `what` otherwise (0 to 100 %)."""
    t = text.strip().removesuffix("%").strip()
    whole, _, frac = t.partition(".")
    if not whole.isdigit() or len(whole) > 3 or (frac and not frac.isdigit()) or len(frac) > 2:
        raise InputError(f"{what}: a percentage to 0.01 such as 25 or 2.5, got {text[:20]!r}")
    bp = int(whole) * 100 + int((frac + "00")[:2])
    if bp > 10_000:
        raise InputError(f"{what}: at most 100 %, got {text[:20]!r}")
    return Fraction(bp, 10_000)
