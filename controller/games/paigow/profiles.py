"""The jurisdictions whose approved Pai Gow rules this engine implements.

- nsw: The Star Sydney, 2024 (seed 000)
- nz:  New Zealand casino table-game rules (seed 002) with the 2001 Gazette
       amendment of 11.1-11.3 (seed 004)
- act: Casino Canberra, 1993 (seed 003)
"""

from __future__ import annotations

from enum import StrEnum

from shared.errors import InputError


class Profile(StrEnum):
    NSW = "nsw"
    NZ = "nz"
    ACT = "act"


def parse_profile(text: str) -> Profile:
    try:
        return Profile(text.strip().lower())
    except ValueError:
        names = ", ".join(p.value for p in Profile)
        raise InputError(f"unknown rules profile {text!r} (expected one of: {names})") from None
