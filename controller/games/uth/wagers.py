"""Wagers and betting decisions (rules 5.3-5.5, 9.1-9.3, 10.5, 11.10, 15.2.1).

``Round`` is a small state machine for one round of play: wagers are placed while betting is
open and are locked once the first card leaves the shuffler (5.5); after that the only money a
player can add is one Play wager at the multiple the street allows (9.1.2, 9.2.3, 9.3.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum

from controller.games.uth.deal import check_boxes
from shared.errors import InputError


class WagerLocked(InputError):
    """Rule 5.5: nothing placed, increased or withdrawn after the first card is dealt."""


class Street(StrEnum):
    PREFLOP = "preflop"  # 9.1, before the flop
    FLOP = "flop"  # 9.2, after the flop
    RIVER = "river"  # 9.3, on the river


# Play wager as a multiple of the Ante: 3x or 4x before the flop (9.1.2), 2x after the flop
# (9.2.3), 1x on the river (9.3.2).
PLAY_MULTIPLES: dict[Street, tuple[int, ...]] = {
    Street.PREFLOP: (3, 4),
    Street.FLOP: (2,),
    Street.RIVER: (1,),
}
_STREET_OF_MULTIPLE = {m: s for s, ms in PLAY_MULTIPLES.items() for m in ms}


class Action(StrEnum):
    PLAY = "play"
    FOLD = "fold"  # 9.1.1, 9.2.1, 9.3.1: forfeits Ante, Blind and Trips
    CONCEDE = "concede"  # 10.5: fold after the dealer's hand; every wager is collected


@dataclass(frozen=True)
class Decision:
    """A box's one decision of the round. ``multiple`` is the Play wager over the Ante (0 for a
    fold; a concession keeps the multiple of the Play it gives up)."""

    action: Action
    street: Street
    multiple: int = 0

    def __post_init__(self) -> None:
        if self.action is Action.FOLD:
            if self.multiple:
                raise InputError("a fold places no Play wager")
        elif self.multiple not in PLAY_MULTIPLES[self.street]:
            allowed = " or ".join(f"{m}x" for m in PLAY_MULTIPLES[self.street])
            raise InputError(
                f"Play of {self.multiple}x not allowed {self.street.value}: {allowed} "
                "(rules 9.1.2, 9.2.3, 9.3.2)"
            )

    @classmethod
    def play(cls, multiple: int) -> Decision:
        """4x/3x are before the flop, 2x after the flop, 1x on the river."""
        if multiple not in _STREET_OF_MULTIPLE:
            raise InputError(f"bad Play multiple {multiple}x: 4x, 3x, 2x or 1x")
        return cls(Action.PLAY, _STREET_OF_MULTIPLE[multiple], multiple)

    @classmethod
    def parse(cls, token: str) -> Decision:
        """``4x``/``3x``/``2x``/``1x``; ``fold-preflop``/``fold-flop``/``fold-river``;
        ``concede-<N>x`` (played N x, then conceded after the dealer's hand)."""
        text = token.strip().lower()
        try:
            if text.endswith("x") and text[:-1].isdigit():
                return cls.play(int(text[:-1]))
            if text.startswith("fold-"):
                return cls(Action.FOLD, Street(text[5:]))
            if text.startswith("concede-") and text.endswith("x") and text[8:-1].isdigit():
                played = cls.play(int(text[8:-1]))
                return cls(Action.CONCEDE, played.street, played.multiple)
        except ValueError as exc:
            raise InputError(f"bad decision {token!r}: {exc}") from None
        raise InputError(
            f"bad decision {token!r}: 4x, 3x, 2x, 1x, fold-preflop, fold-flop, fold-river "
            "or concede-Nx"
        )

    def __str__(self) -> str:
        if self.action is Action.FOLD:
            return f"fold-{self.street.value}"
        if self.action is Action.CONCEDE:
            return f"concede-{self.multiple}x"
        return f"{self.multiple}x"


@dataclass(frozen=True)
class BoxWagers:
    """The wagers on one box, in cents. ``jackpot`` is the progressive jackpot wager."""

    ante: int
    blind: int
    trips: int = 0
    jackpot: int = 0

    def __post_init__(self) -> None:
        for name in ("ante", "blind", "trips", "jackpot"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InputError(f"bad {name} wager {value!r}: a whole number of cents >= 0")
        if self.trips and not (self.ante and self.blind):
            raise InputError("Trips only with an Ante and a Blind wager (rule 5.4.1)")
        if self.ante != self.blind:
            raise InputError(
                f"Blind {self.blind} must equal Ante {self.ante} (rule 5.3, Blind Wager defn)"
            )
        if not self.ante:
            # 7.2.4: only a box with Ante and Blind is dealt; 15.2.1: a jackpot wager needs a
            # wager for the round.
            raise InputError("a box needs an Ante and a Blind wager (rules 5.3, 7.2.4, 15.2.1)")

    def play_amount(self, decision: Decision) -> int:
        return self.ante * decision.multiple


@dataclass(frozen=True)
class BoxPlay:
    box: int
    wagers: BoxWagers
    decision: Decision


class Phase(IntEnum):
    BETTING = 0
    PREFLOP = 1
    FLOP = 2
    RIVER = 3
    SHOWDOWN = 4  # the dealer's hand is shown (10.1); only concessions remain (10.5)


_STREET_OF_PHASE = {
    Phase.PREFLOP: Street.PREFLOP,
    Phase.FLOP: Street.FLOP,
    Phase.RIVER: Street.RIVER,
}


class Round:
    """Wagers and decisions of one round, enforcing the order of play."""

    def __init__(self) -> None:
        self.phase = Phase.BETTING
        self._wagers: dict[int, BoxWagers] = {}
        self._decisions: dict[int, Decision] = {}

    # -- betting (before the first card) -------------------------------------------------------
    def place(self, box: int, wagers: BoxWagers) -> None:
        """Place or change a box's wagers while betting is open (5.3, 5.4)."""
        self.check_open("placed or changed")
        check_boxes([box])
        self._wagers[box] = wagers

    def withdraw(self, box: int) -> None:
        self.check_open("withdrawn")
        self._wagers.pop(box, None)

    def check_open(self, what: str) -> None:
        if self.phase is not Phase.BETTING:
            raise WagerLocked(
                f"no wager may be {what} after the first card leaves the shuffler (rule 5.5)"
            )

    def start_deal(self) -> tuple[int, ...]:
        """The first card leaves the shuffler: wagers lock (5.5). Returns the boxes dealt in."""
        self.check_open("dealt again")
        self.phase = Phase.PREFLOP
        return tuple(sorted(self._wagers))

    # -- decisions ------------------------------------------------------------------------------
    def decide(self, box: int, decision: Decision) -> None:
        if box not in self._wagers:
            raise InputError(f"box {box} has no hand this round")
        if decision.action is Action.CONCEDE:
            self._concede(box, decision)
            return
        if self.phase not in _STREET_OF_PHASE:
            raise InputError(f"box {box}: no decision possible now ({self.phase.name.lower()})")
        street = _STREET_OF_PHASE[self.phase]
        if box in self._decisions:
            done = self._decisions[box]
            rule = "9.5" if done.action is Action.FOLD else "9.2.3.1/9.3.2.1"
            raise InputError(f"box {box} already decided ({done}); one decision (rule {rule})")
        if decision.street is not street:
            raise InputError(f"box {box}: {decision} is not a {street.value} decision")
        self._decisions[box] = decision

    def _concede(self, box: int, decision: Decision) -> None:
        if self.phase is not Phase.SHOWDOWN:
            raise InputError("a concession comes after the dealer's hand (rule 10.5)")
        played = self._decisions.get(box)
        if played is None or played.action is not Action.PLAY:
            raise InputError(f"box {box} has no Play wager to concede")
        if (played.street, played.multiple) != (decision.street, decision.multiple):
            raise InputError(f"box {box} played {played}, not {decision.multiple}x")
        self._decisions[box] = decision

    def _advance(self, frm: Phase) -> None:
        if self.phase is not frm:
            raise InputError(f"cannot go on from {self.phase.name.lower()}")
        self.phase = Phase(frm + 1)

    def reveal_flop(self) -> None:
        self._advance(Phase.PREFLOP)  # boxes without a decision checked (9.1.3)

    def reveal_river(self) -> None:
        self._advance(Phase.FLOP)  # boxes without a decision checked (9.2.2)

    def reveal_dealer(self) -> None:
        """10.1. On the river there is no check (9.3): an undecided box is folded (11.10)."""
        self._advance(Phase.RIVER)
        for box in self._wagers:
            self._decisions.setdefault(box, Decision(Action.FOLD, Street.RIVER))

    def plays(self) -> tuple[BoxPlay, ...]:
        if self.phase is not Phase.SHOWDOWN:
            raise InputError("the round is not at the dealer's hand yet")
        return tuple(BoxPlay(b, self._wagers[b], self._decisions[b]) for b in sorted(self._wagers))


def run_round(wagers: dict[int, BoxWagers], decisions: dict[int, Decision]) -> tuple[BoxPlay, ...]:
    """Drive a ``Round`` street by street from final decisions, validating their legality."""
    rnd = Round()
    for box, w in sorted(wagers.items()):
        rnd.place(box, w)
    rnd.start_deal()
    steps = [
        (Street.PREFLOP, rnd.reveal_flop),
        (Street.FLOP, rnd.reveal_river),
        (Street.RIVER, rnd.reveal_dealer),
    ]
    for street, advance in steps:
        for box, d in sorted(decisions.items()):
            if d.street is street:
                rnd.decide(
                    box,
                    Decision(Action.PLAY, d.street, d.multiple)
                    if d.action is Action.CONCEDE
                    else d,
                )
        advance()
    for box, d in sorted(decisions.items()):
        if d.action is Action.CONCEDE:
            rnd.decide(box, d)
    return rnd.plays()
