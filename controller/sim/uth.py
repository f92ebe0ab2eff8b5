"""Simulated UTH players and dealer (docs/rounds-uth.md, "Simulation").

`UthSim.next_events(status)` looks at the machine's status while it waits for people and returns
what a dealer and players would do next: wagers and jackpot chips while betting, `dealer.deal`
once the deck is shuffled, each box's decision by a loose basic strategy, the dealer's street
confirmations, and now and then a misdeal. Cards come from the daemon's simulated shuffler
(it answers `shuffle` with `shuffler.ready` and `dispense {count}` with `card.dispensed`), so
while the machine waits for the shuffler this returns nothing.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from controller.events import Kind
from controller.games.uth.cards import Card, parse_card, rank_of, suit_of
from controller.games.uth.evaluator import Category, category_of, hand_rank
from controller.rounds.base import Event

ANTES = (500, 1000, 2500, 5000)  # cents
ACE, KING, QUEEN, JACK, TEN = 12, 11, 10, 9, 8  # rank_of values
JSON = dict[str, Any]


class UthSim:
    """Players and a dealer driven by a seeded `random.Random` (deterministic for a seed)."""

    def __init__(
        self,
        rng: random.Random,
        boxes: int = 7,
        *,
        trips_rate: float = 0.3,
        jackpot_rate: float = 0.5,
        misdeal_rate: float = 0.02,
        absent_rate: float = 0.02,
    ) -> None:
        self.rng = rng
        self.boxes = boxes
        self.trips_rate = trips_rate
        self.jackpot_rate = jackpot_rate
        self.misdeal_rate = misdeal_rate
        self.absent_rate = absent_rate  # a player who never decides on the river (11.10)
        self._rechecked: tuple[int, int] | None = None  # (round, deck) of the last deck check

    def next_events(self, status: JSON) -> list[Event]:
        phase = status["state"]
        if phase == "closed":
            return [Event(Kind.TABLE_OPEN)]
        if phase == "betting":
            return self._betting(status)
        if phase in ("preflop", "flop", "river"):
            return self._street(status, phase)
        return []  # dealing: the shuffler is dispensing

    # -- betting -----------------------------------------------------------------------------
    def _betting(self, status: JSON) -> list[Event]:
        seated = [b for b in status["boxes"] if b["ante"]]
        if seated:
            if status["deck_ready"]:
                return [Event(Kind.DEALER_DEAL)]
            return self._recheck(status)
        players = self.rng.sample(range(1, self.boxes + 1), self.rng.randint(1, self.boxes))
        events: list[Event] = []
        online = status["jackpot"] == "online"
        chips = {b["box"] for b in status["boxes"] if b["sensor"]}
        for box in sorted(players):
            ante = self.rng.choice(ANTES)
            # Half the Ante in whole dollars: wagers above the minimum go in the chip unit (6.1).
            trips = ante // 200 * 100 if self.rng.random() < self.trips_rate else 0
            # Each simulated player presents a simulated Player Card (13.1; issue 29).
            events.append(Event(Kind.DEALER_WAGER, {"box": box, "ante": ante, "trips": trips,
                                                    "card": f"SIM-{box:04d}"}))
            wants_jackpot = online and self.rng.random() < self.jackpot_rate
            if wants_jackpot and box not in chips:
                events.append(Event(Kind.BET_ON, {"box": box}))
            elif not wants_jackpot and box in chips:
                events.append(Event(Kind.BET_OFF, {"box": box}))
        # Players who left take their jackpot chips with them.
        events += [Event(Kind.BET_OFF, {"box": b}) for b in sorted(chips - set(players))]
        return events

    def _recheck(self, status: JSON) -> list[Event]:
        """A deck out after 11.7: the technician asks for one deck check per round (11.7.3)."""
        key = (status["round"], status["deck"])
        if status["deck"] not in status["suspect_decks"] or self._rechecked == key:
            return []  # the shuffler is working
        self._rechecked = key
        return [Event(Kind.DEALER_DECK_CHECK, {"deck": status["deck"]})]

    # -- decisions ---------------------------------------------------------------------------
    def _street(self, status: JSON, phase: str) -> list[Event]:
        hands = [b for b in status["boxes"] if b["ante"]]
        undecided = [b for b in hands if not b["decision"] and not b["checked"]]
        untouched = phase == "preflop" and len(undecided) == len(hands)
        if untouched and self.rng.random() < self.misdeal_rate:
            return [Event(Kind.DEALER_MISDEAL, {"reason": "cards_revealed"})]  # 11.2
        board = [parse_card(c) for c in status["community"]]
        events = []
        for b in undecided:
            action = self._decide(phase, [parse_card(c) for c in b["hole"]], board)
            if action:
                events.append(Event(Kind.DEALER_DECISION, {"box": b["box"], "action": action}))
        advance = {"preflop": Kind.DEALER_FLOP, "flop": Kind.DEALER_TURN_RIVER}
        return [*events, Event(advance.get(phase, Kind.DEALER_DEALER_HAND))]

    def _decide(self, phase: str, hole: Sequence[Card], board: Sequence[Card]) -> str | None:
        if phase == "preflop":
            if not strong_preflop(hole):
                return "check"
            return "play3" if self.rng.random() < 0.05 else "play4"
        if phase == "flop":
            return "play2" if hidden_pair_or_better(hole, board) else "check"
        if self.rng.random() < self.absent_rate:
            return None  # no decision: deemed folded (11.10)
        return "play1" if hidden_pair_or_better(hole, board) or _high(hole) else "fold"


def strong_preflop(hole: Sequence[Card]) -> bool:
    """A loose version of the usual 4x chart: any pair but deuces, any ace, kings and queens
    with a fair kicker or suited, suited J-8 or better."""
    hi, lo = sorted((rank_of(c) for c in hole), reverse=True)
    suited = suit_of(hole[0]) == suit_of(hole[1])
    if hi == lo:
        return hi > 0
    if hi == ACE:
        return True
    if hi == KING:
        return suited or lo >= 3  # K5+
    if hi == QUEEN:
        return lo >= (4 if suited else 6)  # Q6s+, Q8+
    return hi == JACK and suited and lo >= 6  # J8s+


def hidden_pair_or_better(hole: Sequence[Card], board: Sequence[Card]) -> bool:
    """Pair or better that uses a hole card, or a straight or better the board does not have."""
    ranks = [rank_of(c) for c in hole]
    if ranks[0] == ranks[1] or any(r in {rank_of(c) for c in board} for r in ranks):
        return True
    mine = category_of(hand_rank([*hole, *board]))
    if len(board) < 5:
        return mine >= Category.STRAIGHT
    return mine >= Category.STRAIGHT and mine > category_of(hand_rank(board))


def _high(hole: Sequence[Card]) -> bool:
    return max(rank_of(c) for c in hole) == ACE  # an ace kicker often beats a non-qualifier


def royal_flush_top(suit: str = "h") -> list[str]:
    """The first cards of a stacked shuffler deck (7.2 mapping, `SimShuffler.stack_next`) that
    give the lowest box playing a Royal Flush with the flop (15.2.6): flop Q J T of `suit`,
    turn and river, the dealer's two cards, then that box's A K of `suit`."""
    others = [c for c in ("2c", "3d", "4s", "5s", "7c", "8d") if c[1] != suit]
    return [f"Q{suit}", f"J{suit}", f"T{suit}", others[0], others[1], others[2], others[3],
            f"A{suit}", f"K{suit}"]
