"""The dice: reading a shake, the banker's steal, the first box to receive tiles, the OFF-box draw.

Counting goes round 8 tile positions, box numbers increasing counter-clockwise from box 1: the
32 tiles are always cut into 8 groups of 4 (NSW 7.2, NZ "Cut", ACT 8.2) and the chung's box is
"counted as 1, 9 or 17" (NSW 8.4.1, NZ 9.9, ACT 4.2), which fixes a cycle of 8. On a layout with
fewer boxes, positions above `n_boxes` are missing boxes whose tiles go to the unused area
(NZ 10.2B).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from controller.games.paigow.bank import HOUSE_BOX, MAX_BOXES, BankHolder, BankState, check_box
from controller.games.paigow.profiles import Profile
from shared.errors import InputError

TILE_POSITIONS = 8
BOX_DICE = 3  # NSW 2.3, NZ 3.3(b), ACT 4.1
MIN_TOTAL, MAX_TOTAL = BOX_DICE, 6 * BOX_DICE
STEAL_LIMIT = 4  # NSW 2.5.3 / 8.2: -4..+4; NZ 9.6: +4 or -4


class Tilt(Enum):
    NOT_FLAT = "not flat"


NOT_FLAT = Tilt.NOT_FLAT  # a die not lying flat on the base of the cup
Die = int | Tilt


def _check_die(name: str, value: object) -> None:
    if value is NOT_FLAT:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 6:
        raise InputError(f"{name} reads {value!r}: a die shows 1..6 (or is not flat)")


@dataclass(frozen=True)
class Shake:
    """What the dealer sees when the cup is uncovered.

    box_dice: the three box dice. cut_die: NSW's differently coloured fourth die (NSW 2.4),
    read when the house banks or a player/banker declines to nominate a cut (NSW 8.4.3-8.4.4);
    None when not part of the shake.
    """

    box_dice: tuple[Die, ...]
    cut_die: Die | None = None

    def __post_init__(self) -> None:
        if len(self.box_dice) != BOX_DICE:
            raise InputError(f"box dice {self.box_dice!r}: expected {BOX_DICE} dice")
        for i, die in enumerate(self.box_dice, start=1):
            _check_die(f"box die {i}", die)
        if self.cut_die is not None:
            _check_die("cut die", self.cut_die)

    @property
    def needs_reshake(self) -> bool:
        """A die not flat: shake again (NSW 8.3 all four dice, NZ 9.8, ACT 13.1)."""
        return NOT_FLAT in self.box_dice or self.cut_die is NOT_FLAT

    @property
    def total(self) -> int:
        """Total of the box dice; InputError when the shake must be repeated."""
        if self.needs_reshake:
            raise InputError(f"{self.describe()}: a die is not flat, shake again (NSW 8.3)")
        return sum(d for d in self.box_dice if isinstance(d, int))

    def describe(self) -> str:
        dice = ", ".join("not flat" if d is NOT_FLAT else str(d) for d in self.box_dice)
        if self.cut_die is None:
            return f"box dice {dice}"
        cut = "not flat" if self.cut_die is NOT_FLAT else str(self.cut_die)
        return f"box dice {dice}, cut die {cut}"


def check_shake(profile: Profile, shake: Shake) -> Shake:
    """Only NSW uses a cut die (NSW 2.4-2.5.1); NZ 3.3(b) and ACT 4.1 shake three dice."""
    if shake.cut_die is not None and profile is not Profile.NSW:
        raise InputError(f"cut die {shake.cut_die!r}: profile {profile} has no cut die")
    return shake


def allowed_steals(
    profile: Profile, *, player_banker: bool, steal_offered: bool = True
) -> frozenset[int]:
    """The values the banker may add to the dice total ("stealing the cut").

    Only a player/banker steals (NSW 8.2, NZ 9.6; a co-banker is a player/banker by the NZ
    definition). NSW: any value -4..+4. NZ: +4 or -4, where the operator offers it. ACT: no steal.
    """
    if not player_banker:
        return frozenset({0})
    if profile is Profile.NSW:
        return frozenset(range(-STEAL_LIMIT, STEAL_LIMIT + 1))
    if profile is Profile.NZ and steal_offered:
        return frozenset({-STEAL_LIMIT, 0, STEAL_LIMIT})
    return frozenset({0})


def check_steal(
    profile: Profile, steal: int, *, player_banker: bool, steal_offered: bool = True
) -> int:
    allowed = allowed_steals(profile, player_banker=player_banker, steal_offered=steal_offered)
    if isinstance(steal, bool) or not isinstance(steal, int) or steal not in allowed:
        values = ", ".join(f"{v:+d}" for v in sorted(allowed))
        who = "the player/banker" if player_banker else "the house's bank"
        raise InputError(
            f"steal {steal!r} not allowed for {who} in profile {profile} (allowed: {values};"
            " NSW 8.2, NZ 9.6)"
        )
    return steal


def first_box(chung_box: int, total: int, steal: int = 0, *, n_boxes: int = MAX_BOXES) -> int:
    """The position (1..8) that receives the first group of tiles (NSW 8.4.1, NZ 9.9, ACT 4.2).

    Counting counter-clockwise from the chung's box as 1, 9 or 17, after adding the steal
    (NSW 8.2, NZ 9.6). An adjusted total below 1 counts backwards from the chung (0 is the box
    before it), which is the same position the 8-cycle gives. A result above `n_boxes` is a
    missing box: the first group goes to the unused area (NZ 10.2B).
    """
    if not 1 <= n_boxes <= MAX_BOXES:
        raise InputError(f"n_boxes {n_boxes} outside 1..{MAX_BOXES}")
    check_box(chung_box, n_boxes)
    if isinstance(total, bool) or not isinstance(total, int) or not MIN_TOTAL <= total <= MAX_TOTAL:
        raise InputError(f"dice total {total!r} outside {MIN_TOTAL}..{MAX_TOTAL}")
    if isinstance(steal, bool) or not isinstance(steal, int) or abs(steal) > STEAL_LIMIT:
        raise InputError(f"steal {steal!r} outside -{STEAL_LIMIT}..+{STEAL_LIMIT}")
    return (chung_box - 1 + total + steal - 1) % TILE_POSITIONS + 1


def box_at(position: int, n_boxes: int = MAX_BOXES) -> int | None:
    """The box at a counting position, or None for a missing box (NZ 10.2B)."""
    if not 1 <= position <= TILE_POSITIONS:
        raise InputError(f"position {position!r} outside 1..{TILE_POSITIONS}")
    return position if position <= n_boxes else None


def first_box_for_shake(
    state: BankState, shake: Shake, steal: int = 0, *, steal_offered: bool = True
) -> int:
    """First position for a shake under the current bank; refuses a shake to be repeated."""
    check_shake(state.profile, shake)
    player_banker = state.holder is not BankHolder.HOUSE
    check_steal(state.profile, steal, player_banker=player_banker, steal_offered=steal_offered)
    return first_box(state.box, shake.total, steal, n_boxes=state.n_boxes)


class OffDraw(NamedTuple):
    box: int
    rolls: int  # totals consumed, the last one being the one that chose `box`


def off_box(state: BankState, totals: Iterable[int]) -> OffDraw:
    """The box removed from play with the OFF button (NSW 15.9.3-15.9.4, NZ 12.10).

    Counting counter-clockwise from box 1 as 1, re-rolling while a total indicates the bank's box:
    box 1 when the house banks alone; under an NZ co-bank, the co-banker's box, which holds the
    house's hand (NZ 11.3(a)). A total indicating a missing box (fewer than 8) is re-rolled too,
    as it names no box to remove. Only while the house banks: NSW 15.9.1 (house), NZ 12.9(b)
    (alone or with a co-banker); ACT has no such rule.
    """
    allowed = {
        Profile.NSW: {BankHolder.HOUSE},
        Profile.NZ: {BankHolder.HOUSE, BankHolder.CO_BANK},
    }.get(state.profile, set())
    if state.holder not in allowed:
        raise InputError(
            f"no OFF box with a {state.holder} bank in profile {state.profile}"
            " (NSW 15.9.1: house banking; NZ 12.9(b): house alone or with a co-banker)"
        )
    rolls = 0
    for total in totals:
        rolls += 1
        box = first_box(HOUSE_BOX, total, n_boxes=MAX_BOXES)
        if box != state.box and box <= state.n_boxes:
            return OffDraw(box, rolls)
    raise InputError(
        f"dice totals ran out after {rolls} rolls without indicating a box other than the"
        f" bank's box {state.box} (NSW 15.9.4, NZ 12.10)"
    )
