"""Shared helpers for the UTH tests (plain functions, imported by name)."""

from __future__ import annotations

from collections import Counter
from functools import cache
from itertools import combinations

from controller.games.uth.cards import parse_cards
from controller.games.uth.evaluator import hand_rank

RANKS = "23456789TJQKA"
SUITS = "cdhs"


def cards(text: str) -> tuple[int, ...]:
    return parse_cards(text)


def rank(text: str) -> int:
    return hand_rank(parse_cards(text))


def to_text(hand: tuple[int, ...] | list[int]) -> str:
    return "".join(RANKS[c >> 2] + SUITS[c & 3] for c in hand)


@cache
def _five_card_rank_counts() -> tuple[tuple[int, int], ...]:
    return tuple(Counter(map(hand_rank, combinations(range(52), 5))).items())


def five_card_rank_counts() -> Counter[int]:
    """How many of the 2,598,960 five-card hands have each rank: `hand_rank` of every hand, once
    a test process (the evaluator's and the par sheet's exhaustive checks both read it)."""
    return Counter(dict(_five_card_rank_counts()))
