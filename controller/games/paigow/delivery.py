"""The physical delivery of a cut: which group of four goes to which box, in which order.

What the seeds fix:
- the 32 tiles are stacked into 8 groups of 4 (NSW 7.2, ACT 8.2; NZ "Cut": "dividing, into 8
  groups of 4, ... which dictates the order in which the tiles shall be delivered to the boxes");
- the first group goes to the box the dice name (NSW 8.4.1, NZ 9.9, ACT 4.2; the steal NSW 8.2,
  NZ 9.6), then "4 tiles to each box" (NSW 12.1, NZ 10.1) in groups of 4, to every box whether
  or not anyone wagers there (NSW 12.1, NZ 10.2, ACT 9.1);
- the direction: ACT 9.1 deals clockwise from the first box (though ACT 4.2 counts anti-clockwise
  to find it). NSW and NZ do not say; we deliver counter-clockwise, the direction they count in
  (NSW 8.4.1, NZ 9.9) and expose hands in (NZ 11.1(f)); the other reading is `clockwise=True`
  (docs/rounds-paigow.md, "What a regulator should confirm");
- after the deal: groups at boxes without a wager are retrieved undisclosed to the designated
  area (NSW 12.3, ACT 9.1); NZ leaves them "in relation to this empty box" (10.2). Groups for
  consecutive empty boxes may be placed collectively (NSW 12.2: eight tiles or more; NZ 10.2A:
  adjacent empty boxes). On a layout of fewer than 8 boxes the groups of the missing boxes go
  undisclosed to the unused area (NZ 10.2B).

What the seeds do not fix: which stacks of the dealer's row form the cut's first, second, ...
group. NSW Appendix 3, NZ Appendix 5 and ACT Appendix E name the cuts and their options only;
NZ's "Approved Cut" is "conducted in a manner approved by the Secretary, in writing". So the
plan below numbers the groups in the order the cut's approved procedure produces them; how a
named cut splits the stacks is the dealer's procedure, not modelled.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from controller.games.paigow.bank import MAX_BOXES
from controller.games.paigow.profiles import Profile
from shared.errors import InputError

T = TypeVar("T")
GROUPS = 8  # NSW 7.2, NZ "Cut", ACT 8.2
GROUP_SIZE = 4

# Each profile's delivery direction and the clause (or reading) it rests on.
CLOCKWISE_RULE = {
    Profile.NSW: (False, "NSW 12.1 (direction not stated: as counted, 8.4.1)"),
    Profile.NZ: (False, "NZ 10.1 (direction not stated: as counted, 9.9)"),
    Profile.ACT: (True, "ACT 9.1"),
}
EMPTY_RULE = {Profile.NSW: "NSW 12.3", Profile.NZ: "NZ 10.2", Profile.ACT: "ACT 9.1"}
COLLECTIVE_RULE = {Profile.NSW: "NSW 12.2", Profile.NZ: "NZ 10.2A"}


class Destination(StrEnum):
    BANK = "bank"  # the chung's box: the bank's hand
    PLAYER = "player"  # a box with a wager
    EMPTY = "empty"  # a box without a wager (NSW 12.3, NZ 10.2, ACT 9.1)
    UNUSED = "unused"  # a missing box on a short layout (NZ 10.2B)


@dataclass(frozen=True)
class Drop:
    """Group `group` (1..8, in the cut's order) is delivered `order`-th to `position`."""

    group: int
    position: int  # counting position 1..8 (the box number where the box exists)
    box: int | None  # None: a missing box, the unused area
    to: Destination

    def as_json(self) -> dict[str, object]:
        return {"group": self.group, "position": self.position, "box": self.box,
                "to": self.to.value}


def clockwise(profile: Profile) -> bool:
    return CLOCKWISE_RULE[profile][0]


def delivery_plan(
    profile: Profile,
    first_position: int,
    *,
    bank_box: int,
    wagered: Collection[int] | None = None,
    n_boxes: int = MAX_BOXES,
    clockwise_delivery: bool | None = None,
) -> tuple[Drop, ...]:
    """The eight groups in delivery order: group k goes to the k-th position from
    `first_position` in the profile's direction (`clockwise_delivery` overrides it).

    wagered: the boxes with wagers (None: not recorded, every existing box counts as played).
    """
    if not 1 <= n_boxes <= MAX_BOXES:
        raise InputError(f"n_boxes {n_boxes} outside 1..{MAX_BOXES}")
    if isinstance(first_position, bool) or not isinstance(first_position, int) or not (
        1 <= first_position <= GROUPS
    ):
        raise InputError(f"first position {first_position!r} outside 1..{GROUPS}")
    if not 1 <= bank_box <= n_boxes:
        raise InputError(f"bank box {bank_box} outside 1..{n_boxes}")
    cw = clockwise(profile) if clockwise_delivery is None else clockwise_delivery
    step = -1 if cw else 1  # box numbers increase counter-clockwise (NSW 8.4.1, NZ 9.9)
    drops = []
    for k in range(GROUPS):
        position = (first_position - 1 + step * k) % GROUPS + 1
        box = position if position <= n_boxes else None
        if box is None:
            to = Destination.UNUSED
        elif box == bank_box:
            to = Destination.BANK
        elif wagered is None or box in wagered:
            to = Destination.PLAYER
        else:
            to = Destination.EMPTY
        drops.append(Drop(k + 1, position, box, to))
    return tuple(drops)


def hands_by_box(plan: tuple[Drop, ...], tiles: Sequence[T]) -> dict[int, tuple[T, ...]]:
    """The four tiles each existing box receives when `tiles` (32, in the cut's order: group 1
    first) are delivered by `plan`; missing boxes' groups go to the unused area."""
    if len(tiles) != GROUPS * GROUP_SIZE:
        raise InputError(f"{len(tiles)} tiles: a delivery is of {GROUPS * GROUP_SIZE}")
    out: dict[int, tuple[T, ...]] = {}
    for drop in plan:
        if drop.box is not None:
            start = (drop.group - 1) * GROUP_SIZE
            out[drop.box] = tuple(tiles[start:start + GROUP_SIZE])
    return out


def describe(plan: tuple[Drop, ...], profile: Profile, clockwise_delivery: bool | None = None
             ) -> str:
    """One line for the dealer: the direction, then each group's box in order."""
    cw = clockwise(profile) if clockwise_delivery is None else clockwise_delivery
    marks = {Destination.BANK: "B", Destination.EMPTY: "-", Destination.UNUSED: "U"}
    parts = [f"{d.position}{marks.get(d.to, '')}" for d in plan]
    return ("CLOCKWISE " if cw else "COUNTER-CLOCKWISE ") + " ".join(parts)
