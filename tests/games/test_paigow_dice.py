"""Dice: shake, steal, first box (NSW 8, NZ 9.6-9.9, ACT 4.2), OFF box (NSW 15.9, NZ 12.10)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.games.paigow import bank as bk
from controller.games.paigow.bank import BankHolder, BankState
from controller.games.paigow.dice import (
    NOT_FLAT,
    Shake,
    allowed_steals,
    box_at,
    check_shake,
    check_steal,
    first_box,
    first_box_for_shake,
    off_box,
)
from controller.games.paigow.profiles import Profile
from shared.errors import InputError

totals = st.integers(3, 18)
steals = st.integers(-4, 4)
boxes = st.integers(1, 8)


def walk_count(chung: int, count: int, positions: int = 8) -> int:
    """The dealer's count done by hand: touch the chung box as 1 and step one box per number,
    counter-clockwise (increasing numbers) for counts above 1, clockwise for counts below 1."""
    box, n = chung, 1
    while n < count:
        box = box % positions + 1
        n += 1
    while n > count:
        box = (box - 2) % positions + 1
        n -= 1
    return box


# --- reading a shake -----------------------------------------------------------------------------


def test_shake_total_is_the_sum_of_the_box_dice() -> None:
    """NSW 8.4 / NZ "Total": the dots on the uppermost faces of the three box dice."""
    assert Shake((6, 5, 4), cut_die=1).total == 15
    assert Shake((1, 1, 1)).total == 3


@pytest.mark.parametrize("bad", [0, 7, -1, True, "3", 2.0])
def test_die_outside_one_to_six_is_refused_naming_the_die(bad: object) -> None:
    with pytest.raises(InputError, match="box die 2"):
        Shake((1, bad, 3))  # type: ignore[arg-type]
    with pytest.raises(InputError, match="cut die"):
        Shake((1, 2, 3), cut_die=bad)  # type: ignore[arg-type]


def test_shake_needs_three_box_dice() -> None:
    """NSW 2.3, NZ 3.3(b), ACT 4.1: three box dice."""
    with pytest.raises(InputError, match="expected 3"):
        Shake((1, 2))


@pytest.mark.parametrize("position", [0, 1, 2])
def test_box_die_not_flat_means_reshake_nsw_8_3_nz_9_8_act_13_1(position: int) -> None:
    dice: list[int | object] = [3, 4, 5]
    dice[position] = NOT_FLAT
    shake = Shake(tuple(dice))  # type: ignore[arg-type]
    assert shake.needs_reshake
    with pytest.raises(InputError, match="not flat"):
        _ = shake.total


def test_cut_die_not_flat_also_means_reshake_nsw_8_3() -> None:
    """NSW 8.3: all four dice must rest flat, the cut die included."""
    shake = Shake((3, 4, 5), cut_die=NOT_FLAT)
    assert shake.needs_reshake
    assert not Shake((3, 4, 5), cut_die=2).needs_reshake


@pytest.mark.parametrize("profile", [Profile.NZ, Profile.ACT])
def test_cut_die_is_nsw_only_nsw_2_4(profile: Profile) -> None:
    """NZ 3.3(b) and ACT 4.1 shake three dice; only NSW 2.4 adds a cut die (the four dice of
    NSW 2.5, 2.5.1)."""
    with pytest.raises(InputError, match="no cut die"):
        check_shake(profile, Shake((1, 2, 3), cut_die=4))
    check_shake(Profile.NSW, Shake((1, 2, 3), cut_die=4))


# --- first box -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chung", "total", "expected"),
    [
        (1, 9, 1),  # the chung's box counts as 9 ...
        (1, 17, 1),  # ... and as 17
        (1, 3, 3),
        (1, 10, 2),
        (1, 18, 2),
        (3, 5, 7),
        (6, 5, 2),  # 6,7,8,1,2
        (8, 2 + 8, 1),  # 8,1: 10 = 8 + 2
    ],
)
def test_count_counter_clockwise_from_chung_as_1_9_17_nsw_8_4_1_nz_9_9_act_4_2(
    chung: int, total: int, expected: int
) -> None:
    assert first_box(chung, total) == expected
    assert walk_count(chung, total) == expected


def test_steal_is_added_to_the_total_nsw_8_2_nz_9_6() -> None:
    assert first_box(1, 10, +4) == first_box(1, 14)
    assert first_box(1, 10, -4) == first_box(1, 6)
    assert first_box(2, 5, -2) == 4


def test_adjusted_total_below_one_counts_backwards_from_chung() -> None:
    """3 dice minimum 3, minus 4 (NSW 8.2) = -1: the chung is 1, the box before it 0, then -1."""
    assert first_box(1, 3, -3) == 8
    assert first_box(1, 3, -4) == 7
    assert first_box(4, 4, -4) == 3


@given(boxes, totals, steals)
def test_every_total_and_steal_maps_to_a_position_1_to_8(chung: int, total: int, s: int) -> None:
    assert 1 <= first_box(chung, total, s) <= 8


@given(boxes, totals, steals)
def test_first_box_matches_a_hand_count(chung: int, total: int, s: int) -> None:
    assert first_box(chung, total, s) == walk_count(chung, total + s)


@given(st.integers(1, 7), totals, steals)
def test_counting_is_a_rotation_shifting_chung_shifts_first_box(
    chung: int, total: int, s: int
) -> None:
    assert first_box(chung + 1, total, s) == first_box(chung, total, s) % 8 + 1


@given(boxes, st.integers(3, 17), steals)
def test_one_more_on_the_dice_is_one_box_further(chung: int, total: int, s: int) -> None:
    assert first_box(chung, total + 1, s) == first_box(chung, total, s) % 8 + 1


@pytest.mark.parametrize("total", [2, 19, 0])
def test_total_outside_3_to_18_is_refused(total: int) -> None:
    with pytest.raises(InputError, match=f"dice total {total}"):
        first_box(1, total)


def test_chung_box_must_exist() -> None:
    with pytest.raises(InputError, match="box 9"):
        first_box(9, 10)
    with pytest.raises(InputError, match="box 7"):
        first_box(7, 10, n_boxes=6)


def test_fewer_boxes_still_count_eight_positions_nz_10_2b() -> None:
    """NZ 10.2B: on a 6-box layout the tiles of positions 7 and 8 go to the unused area;
    the chung still counts as 1, 9 or 17."""
    assert first_box(1, 9, n_boxes=6) == 1
    assert first_box(1, 7, n_boxes=6) == 7
    assert box_at(7, 6) is None
    assert box_at(6, 6) == 6


@given(st.integers(1, 8), totals, steals, st.data())
def test_with_fewer_boxes_the_position_is_the_eight_box_position(
    n: int, total: int, s: int, data: st.DataObject
) -> None:
    chung = data.draw(st.integers(1, n))
    assert first_box(chung, total, s, n_boxes=n) == first_box(chung, total, s)


# --- steal per profile ---------------------------------------------------------------------------


def test_nsw_steal_any_value_minus_4_to_plus_4_nsw_2_5_3_and_8_2() -> None:
    # NSW 2.5.3 (the plus or minus buttons, +4 to -4), 8.2
    assert allowed_steals(Profile.NSW, player_banker=True) == frozenset(range(-4, 5))
    with pytest.raises(InputError, match="steal 5"):
        check_steal(Profile.NSW, 5, player_banker=True)


def test_nz_steal_only_plus_or_minus_4_where_offered_nz_9_6() -> None:
    assert allowed_steals(Profile.NZ, player_banker=True) == frozenset({-4, 0, 4})
    with pytest.raises(InputError, match="steal 2"):
        check_steal(Profile.NZ, 2, player_banker=True)
    with pytest.raises(InputError, match="steal 4"):
        check_steal(Profile.NZ, 4, player_banker=True, steal_offered=False)
    assert check_steal(Profile.NZ, -4, player_banker=True) == -4


def test_act_has_no_steal_act_4_2() -> None:
    with pytest.raises(InputError, match="steal 1"):
        check_steal(Profile.ACT, 1, player_banker=True)


@pytest.mark.parametrize("profile", list(Profile))
def test_only_a_player_banker_steals_nsw_8_2_nz_9_6(profile: Profile) -> None:
    with pytest.raises(InputError, match="house"):
        check_steal(profile, -4, player_banker=False)
    assert check_steal(profile, 0, player_banker=False) == 0


def test_first_box_for_shake_uses_the_chung_of_the_bank() -> None:
    state = BankState(Profile.NSW, BankHolder.PLAYER, box=5, rounds_played=3)
    assert first_box_for_shake(state, Shake((2, 2, 2), cut_die=3), steal=-1) == first_box(5, 6, -1)
    house = bk.start(Profile.NSW)
    assert first_box_for_shake(house, Shake((1, 2, 3), cut_die=3)) == 6


def test_first_box_for_shake_refuses_a_reshake_and_a_house_steal() -> None:
    house = bk.start(Profile.NSW)
    with pytest.raises(InputError, match="not flat"):
        first_box_for_shake(house, Shake((1, NOT_FLAT, 3)))
    with pytest.raises(InputError, match="steal"):
        first_box_for_shake(house, Shake((1, 2, 3)), steal=2)


# --- OFF box -------------------------------------------------------------------------------------


def test_off_box_counts_from_box_one_nsw_15_9_3_nz_12_10() -> None:
    house = bk.start(Profile.NSW)
    assert off_box(house, [5]) == (5, 1)
    assert off_box(house, [12]) == (4, 1)


def test_off_box_rerolls_on_the_house_box_nsw_15_9_4_nz_12_10() -> None:
    house = bk.start(Profile.NZ)
    assert off_box(house, [9, 17, 9, 11]) == (3, 4)
    assert off_box(house, iter([17, 18])) == (2, 2)


def test_off_box_running_out_of_totals_is_refused() -> None:
    with pytest.raises(InputError, match="ran out after 2"):
        off_box(bk.start(Profile.NSW), [9, 17])


def test_off_box_only_while_the_house_banks_nsw_15_9_1() -> None:
    player = BankState(Profile.NSW, BankHolder.PLAYER, box=3, rounds_played=1)
    with pytest.raises(InputError, match="OFF"):
        off_box(player, [5])


def test_off_box_nz_co_bank_allowed_and_skips_the_bank_box_nz_12_9() -> None:
    """NZ 12.9(b): house banking alone or with a co-banker; the co-banker's box holds the bank's
    hand (11.3(a)), so it is the box re-rolled; box 1 is an ordinary box then."""
    co = BankState(Profile.NZ, BankHolder.CO_BANK, box=4, rounds_played=2)
    assert off_box(co, [4 + 8, 9]) == (1, 2)
    player = BankState(Profile.NZ, BankHolder.PLAYER, box=4, rounds_played=2)
    with pytest.raises(InputError, match="OFF"):
        off_box(player, [5])


def test_act_has_no_off_box() -> None:
    with pytest.raises(InputError, match="act"):
        off_box(bk.start(Profile.ACT), [5])


def test_off_box_on_fewer_boxes_rerolls_a_missing_box() -> None:
    six = bk.start(Profile.NSW, n_boxes=6)
    assert off_box(six, [7, 8, 16, 6]) == (6, 4)


@given(
    st.sampled_from([Profile.NSW, Profile.NZ]),
    st.integers(1, 8),
    st.lists(totals, min_size=1, max_size=30),
)
def test_off_draw_never_returns_the_house_box(profile: Profile, n: int, rolls: list[int]) -> None:
    state = bk.start(profile, n_boxes=n)
    try:
        box, used = off_box(state, rolls)
    except InputError:
        # Only when no roll named a box other than the house's.
        assert all((t - 1) % 8 + 1 == 1 or (t - 1) % 8 + 1 > n for t in rolls)
        return
    assert box != bk.HOUSE_BOX
    assert 1 <= box <= n
    assert 1 <= used <= len(rolls)
    assert box == (rolls[used - 1] - 1) % 8 + 1
    assert all((t - 1) % 8 + 1 == 1 or (t - 1) % 8 + 1 > n for t in rolls[: used - 1])
