"""Cards and the deck (rules 3.1, 3.3).

A card is an ``int`` in 0..51: ``rank * 4 + suit`` with rank 0..12 for 2..A and suit 0..3 for
c, d, h, s. Ints keep the evaluator's hot path to list indexing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from shared.errors import InputError

RANKS = "23456789TJQKA"
SUITS = "cdhs"
DECK_SIZE = 52  # rule 3.1: one deck of 52 cards, no jokers

Card = int


def make_card(rank: int, suit: int) -> Card:
    return rank * 4 + suit


def rank_of(card: Card) -> int:
    """0 for a deuce .. 12 for an ace."""
    return card >> 2


def suit_of(card: Card) -> int:
    return card & 3


def parse_card(token: str) -> Card:
    """``As``, ``Td``, ``10d``, ``9h``, ``2c`` (case-insensitive); the error names the token."""
    text = token.strip()
    if len(text) == 3 and text[:2] == "10":
        text = "T" + text[2]
    if len(text) != 2:
        raise InputError(f"bad card {token!r}: expected rank 2-9/T/10/J/Q/K/A then suit c/d/h/s")
    rank = RANKS.find(text[0].upper())
    suit = SUITS.find(text[1].lower())
    if rank < 0:
        raise InputError(f"bad card {token!r}: unknown rank {text[0]!r}")
    if suit < 0:
        raise InputError(f"bad card {token!r}: unknown suit {text[1]!r}")
    return make_card(rank, suit)


def parse_cards(tokens: str | Iterable[str], *, count: int | None = None) -> tuple[Card, ...]:
    """Parse distinct cards from whitespace/comma separated text or tokens.

    Duplicates are errors: there is one deck (rule 3.1). ``count`` demands an exact number.
    """
    if isinstance(tokens, str):
        tokens = tokens.replace(",", " ").split()
    else:
        tokens = [part for tok in tokens for part in tok.replace(",", " ").split()]
    cards: list[Card] = []
    seen: dict[Card, str] = {}
    for token in tokens:
        card = parse_card(token)
        if card in seen:
            raise InputError(f"duplicate card {token!r} (already given as {seen[card]!r})")
        seen[card] = token
        cards.append(card)
    if count is not None and len(cards) != count:
        raise InputError(f"expected {count} cards, got {len(cards)}: {' '.join(tokens)!r}")
    return tuple(cards)


def check_distinct(cards: Iterable[Card]) -> None:
    """Reject out-of-range ints and repeated cards (rule 3.1, one deck)."""
    seen: set[Card] = set()
    for card in cards:
        if not isinstance(card, int) or not 0 <= card < DECK_SIZE:
            raise InputError(f"bad card {card!r}: not in 0..51")
        if card in seen:
            raise InputError(f"duplicate card {format_card(card)!r}")
        seen.add(card)


def format_card(card: Card) -> str:
    return RANKS[card >> 2] + SUITS[card & 3]


def format_cards(cards: Sequence[Card]) -> str:
    return " ".join(format_card(c) for c in cards)


def full_deck() -> tuple[Card, ...]:
    return tuple(range(DECK_SIZE))
