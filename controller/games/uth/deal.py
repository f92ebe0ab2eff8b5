"""From the cards in dealing order to community, dealer and box cards (rules 7.1, 7.2-7.2.4,
7.3-7.3.5, 11.1).

Boxes are numbered 1..7 clockwise from the dealer's left, so dealing order (7.1, "clockwise,
starting from their left") is ascending box number and the dealer's immediate right is the
highest box in play (settlement 10.4 and jackpot payments 15.2.12 start there).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from controller.games.uth.cards import Card, check_distinct
from shared.errors import InputError

MAX_BOXES = 7


class Misdeal(InputError):
    """Rule 11.1: a wrong number of cards; all wagers void (11.3), jackpot wagers returned
    (15.3.1)."""


class DealMethod(StrEnum):
    """Where the cards come from (rule 3.2): a shuffling device (3.2.1), a card shoe (3.2.2) or
    the dealer's hand (3.2.3), which deals as a shoe does."""

    SHUFFLER = "shuffler"  # rule 7.2
    SHOE = "shoe"  # rule 7.3 (a card shoe, or dealt from the dealer's hand)


@dataclass(frozen=True)
class Deal:
    flop: tuple[Card, Card, Card]
    turn: Card
    river: Card
    dealer: tuple[Card, Card]
    boxes: dict[int, tuple[Card, Card]]  # box number -> hole cards, in dealing order

    @property
    def community(self) -> tuple[Card, ...]:
        return (*self.flop, self.turn, self.river)

    def seven(self, box: int) -> tuple[Card, ...]:
        """A box's two hole cards plus the five community cards (10.6)."""
        return (*self.boxes[box], *self.community)

    def dealer_seven(self) -> tuple[Card, ...]:
        return (*self.dealer, *self.community)

    def jackpot_hand(self, box: int) -> tuple[Card, ...]:
        """Rule 15.2.6: the two hole cards plus the flop."""
        return (*self.boxes[box], *self.flop)


def check_boxes(boxes: Iterable[int]) -> tuple[int, ...]:
    """Box numbers in dealing order (ascending = clockwise from the dealer's left)."""
    out = sorted(boxes)
    for box in out:
        if not isinstance(box, int) or not 1 <= box <= MAX_BOXES:
            raise InputError(f"bad box {box!r}: boxes are 1..{MAX_BOXES}")
    if len(set(out)) != len(out):
        raise InputError(f"box listed twice in {out}")
    return tuple(out)


def cards_needed(n_boxes: int) -> int:
    return 5 + 2 + 2 * n_boxes


def deal(cards: Sequence[Card], boxes: Iterable[int], method: DealMethod) -> Deal:
    """Assign ``cards`` (in the order they leave the shuffler or shoe) to their places.

    ``boxes``: the playing areas holding both an Ante and a Blind wager (7.2.4, 7.3.3); only
    they receive cards. A wrong number of cards is a misdeal (11.1).
    """
    order = check_boxes(boxes)
    check_distinct(cards)
    need = cards_needed(len(order))
    if len(cards) != need:
        raise Misdeal(
            f"misdeal (rule 11.1): {len(cards)} cards for {len(order)} box(es), need {need}"
        )
    if method is DealMethod.SHUFFLER:
        # 7.2.1-7.2.2: the first five cards are stacked (each new card on top) and spread left
        # to right with the top card on the River, the second on the Turn, the bottom three on
        # the Flop. So the 5th card out is the River, the 4th the Turn, the 1st-3rd the Flop.
        flop = (cards[0], cards[1], cards[2])
        turn, river = cards[3], cards[4]
        # 7.2.3-7.2.4: two cards to the dealer, then two at a time to each box, clockwise.
        dealer = (cards[5], cards[6])
        hands = {box: (cards[7 + 2 * i], cards[8 + 2 * i]) for i, box in enumerate(order)}
    else:
        # 7.3.1: community left to right, the first three the Flop; 7.3.2-7.3.5: one card to
        # the dealer, one to each box, a second to the dealer, a second to each box.
        flop = (cards[0], cards[1], cards[2])
        turn, river = cards[3], cards[4]
        n = len(order)
        dealer = (cards[5], cards[6 + n])
        hands = {box: (cards[6 + i], cards[7 + n + i]) for i, box in enumerate(order)}
    return Deal(flop, turn, river, dealer, hands)


def dealing_order(d: Deal, method: DealMethod) -> tuple[Card, ...]:
    """The inverse of ``deal``: the order in which the cards of ``d`` leave the device."""
    order = sorted(d.boxes)
    head = (*d.flop, d.turn, d.river)
    if method is DealMethod.SHUFFLER:
        return (*head, *d.dealer, *(c for box in order for c in d.boxes[box]))
    first = tuple(d.boxes[box][0] for box in order)
    second = tuple(d.boxes[box][1] for box in order)
    return (*head, d.dealer[0], *first, d.dealer[1], *second)
