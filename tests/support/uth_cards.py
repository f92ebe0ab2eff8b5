"""Shared helpers for the UTH tests (plain functions, imported by name)."""

from __future__ import annotations

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
