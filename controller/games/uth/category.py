"""The poker hand categories of rule 8.2, lowest first: the evaluator's (evaluator.py, which
names it for its users), its tables' (tables_compute.py) and the pay tables'."""

from __future__ import annotations

from enum import IntEnum

from shared.errors import InputError


class Category(IntEnum):
    """Rule 8.2 (a)-(j), lowest first so that comparison follows the rule's order."""

    HIGH_CARD = 0
    ONE_PAIR = 1
    TWO_PAIR = 2
    THREE_OF_A_KIND = 3
    STRAIGHT = 4
    FLUSH = 5
    FULL_HOUSE = 6
    FOUR_OF_A_KIND = 7
    STRAIGHT_FLUSH = 8
    ROYAL_FLUSH = 9

    @property
    def label(self) -> str:
        """The name used in JSON output, e.g. ``four_of_a_kind``."""
        return self.name.lower()

    @classmethod
    def from_label(cls, label: str) -> Category:
        try:
            return cls[label.upper()]
        except KeyError:
            raise InputError(f"unknown hand category {label!r}") from None
