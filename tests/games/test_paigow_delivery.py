"""The physical delivery of a cut (NSW 7.2, 8.4.1, 8.4.6, 12.1-12.3; NZ "Cut", 9.9, 10.1-10.2B;
ACT 4.2, 8.2, 9.1): exhaustive over chung boxes, dice totals, steals and layouts."""

from __future__ import annotations

from itertools import pairwise, product

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.games.paigow.delivery import (
    Destination,
    clockwise,
    delivery_plan,
    describe,
    hands_by_box,
)
from controller.games.paigow.dice import allowed_steals, first_box
from controller.games.paigow.profiles import Profile
from shared.errors import InputError

TOTALS = range(3, 19)


@pytest.mark.parametrize("profile", list(Profile))
def test_every_chung_total_steal_and_layout(profile: Profile) -> None:
    step = -1 if profile is Profile.ACT else 1  # ACT 9.1 clockwise; NSW/NZ as counted
    steals = sorted(allowed_steals(profile, player_banker=True))
    checked = 0
    for n_boxes, chung, total, steal in product(range(1, 9), range(1, 9), TOTALS, steals):
        if chung > n_boxes:
            continue
        first = first_box(chung, total, steal, n_boxes=n_boxes)
        plan = delivery_plan(profile, first, bank_box=chung, n_boxes=n_boxes)
        positions = [d.position for d in plan]
        assert positions[0] == first and sorted(positions) == list(range(1, 9))
        assert [d.group for d in plan] == list(range(1, 9))
        for a, b in pairwise(positions):
            assert (b - a) % 8 == step % 8
        for d in plan:
            assert (d.box is None) == (d.position > n_boxes)
            assert (d.to is Destination.UNUSED) == (d.box is None)  # NZ 10.2B
            assert (d.to is Destination.BANK) == (d.box == chung)
        checked += 1
    assert checked == sum(n for n in range(1, 9)) * len(TOTALS) * len(steals)


def test_direction_per_profile_and_the_dealers_line() -> None:
    assert [clockwise(p) for p in Profile] == [False, False, True]
    nsw = delivery_plan(Profile.NSW, 5, bank_box=1, wagered={6, 2})
    assert describe(nsw, Profile.NSW) == "COUNTER-CLOCKWISE 5- 6 7- 8- 1B 2 3- 4-"
    act = delivery_plan(Profile.ACT, 5, bank_box=1, wagered={6, 2})
    assert describe(act, Profile.ACT) == "CLOCKWISE 5- 4- 3- 2 1B 8- 7- 6"
    short = delivery_plan(Profile.NZ, 7, bank_box=3, n_boxes=6)
    assert describe(short, Profile.NZ) == "COUNTER-CLOCKWISE 7U 8U 1 2 3B 4 5 6"
    other = delivery_plan(Profile.NZ, 7, bank_box=3, clockwise_delivery=True)
    assert [d.position for d in other] == [7, 6, 5, 4, 3, 2, 1, 8]


@given(st.sampled_from(list(Profile)), st.integers(1, 8), st.integers(1, 8),
       st.permutations(range(32)))
def test_each_box_gets_its_groups_four_tiles(
    profile: Profile, first: int, n_boxes: int, tiles: list[int]
) -> None:
    plan = delivery_plan(profile, first, bank_box=1, n_boxes=n_boxes)
    hands = hands_by_box(plan, tiles)
    assert sorted(hands) == list(range(1, n_boxes + 1))
    for d in plan:
        if d.box is not None:
            assert hands[d.box] == tuple(tiles[4 * (d.group - 1): 4 * d.group])
    dealt = [t for h in hands.values() for t in h]
    assert len(dealt) == len(set(dealt)) == 4 * n_boxes


@pytest.mark.parametrize(("first", "bank_box", "n_boxes"), [(0, 1, 8), (9, 1, 8), (1, 7, 6)])
def test_out_of_range_is_refused(first: int, bank_box: int, n_boxes: int) -> None:
    with pytest.raises(InputError):
        delivery_plan(Profile.NSW, first, bank_box=bank_box, n_boxes=n_boxes)
    with pytest.raises(InputError):
        hands_by_box(delivery_plan(Profile.NSW, 1, bank_box=1), list(range(31)))
