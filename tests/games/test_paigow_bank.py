"""The bank: holders, eligibility, rotation and round limits (NSW 6, NZ 5, ACT 6)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.games.paigow import bank as bk
from controller.games.paigow.bank import (
    BankHolder,
    BankState,
    Candidate,
    Refusal,
    accepts_wager,
    after_round,
    bank_open,
    house_banks,
    offer_order,
    refusals,
    rounds_limit,
    take_bank,
)
from controller.games.paigow.profiles import Profile
from shared.errors import InputError

ALL = range(1, 9)
RICH = 10**9


def ready(box: int, funds: int = RICH) -> Candidate:
    """A candidate who played the previous round on `box`, controls it and can cover anything."""
    return Candidate(box, frozenset({box}), box, funds)


def after_house_round(profile: Profile, n_boxes: int = 8) -> BankState:
    return after_round(bk.start(profile, n_boxes=n_boxes))


def player_bank(profile: Profile, box: int, rounds: int = 2, **kw: int) -> BankState:
    state = take_bank(
        after_house_round(profile, **kw), ready(box), BankHolder.PLAYER, other_wagers=0
    )
    for _ in range(rounds):
        state = after_round(state)
    return state


# --- the house -----------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", list(Profile))
def test_house_banks_on_box_one_and_takes_no_wagers_there(profile: Profile) -> None:
    """NSW 6.10, NZ 11.1(a)-(b) as amended, ACT 6.9."""
    state = bk.start(profile)
    assert (state.holder, state.box) == (BankHolder.HOUSE, 1)
    assert not accepts_wager(state, 1)
    assert not accepts_wager(state, 1, from_banker=True)
    assert all(accepts_wager(state, b) for b in range(2, 9))


@pytest.mark.parametrize("profile", list(Profile))
def test_player_banker_wager_is_the_only_one_on_their_box_nsw_9_16_nz_6_5(
    profile: Profile,
) -> None:
    state = player_bank(profile, 4, rounds=0)
    assert accepts_wager(state, 4, from_banker=True)
    assert not accepts_wager(state, 4)
    assert accepts_wager(state, 1)  # box 1 is an ordinary box once a player banks


@pytest.mark.parametrize("profile", [Profile.NZ, Profile.ACT])
def test_house_banks_the_first_round_nz_5_2_act_6_7(profile: Profile) -> None:
    state = bk.start(profile)
    assert not bank_open(state)
    with pytest.raises(InputError, match="first round"):
        take_bank(state, ready(3), BankHolder.PLAYER, other_wagers=0)
    with pytest.raises(InputError, match="first round"):
        offer_order(state, ALL)
    assert bank_open(after_round(state))


def test_nsw_player_may_bank_at_commencement_without_a_previous_round_nsw_6_6() -> None:
    state = bk.start(Profile.NSW)
    assert bank_open(state)
    new = Candidate(5, funds=100)
    assert refusals(state, new, BankHolder.PLAYER, other_wagers=100) == []
    taken = take_bank(state, new, BankHolder.PLAYER, other_wagers=100)
    assert (taken.holder, taken.box) == (BankHolder.PLAYER, 5)


def test_house_banks_resets_to_box_one_nsw_6_9_nz_5_6_act_6_8() -> None:
    state = house_banks(player_bank(Profile.NZ, 6, rounds=1))
    assert (state.holder, state.box, state.rounds_in_bank, state.banks_on_box) == (
        BankHolder.HOUSE,
        1,
        0,
        0,
    )


def test_house_is_not_taken_through_an_offer() -> None:
    with pytest.raises(InputError, match="house_banks"):
        take_bank(after_house_round(Profile.NZ), ready(2), BankHolder.HOUSE, other_wagers=0)


def test_state_refuses_house_off_box_one_and_nsw_co_bank() -> None:
    with pytest.raises(InputError, match="box 3"):
        BankState(Profile.NZ, BankHolder.HOUSE, box=3)
    with pytest.raises(InputError, match=r"11\.1"):
        BankState(Profile.NSW, BankHolder.CO_BANK, box=3)


# --- eligibility ---------------------------------------------------------------------------------


def test_nsw_must_have_played_previous_round_nsw_6_6() -> None:
    state = after_house_round(Profile.NSW)
    assert refusals(
        state, Candidate(3, controlled_box=3, funds=RICH), BankHolder.PLAYER, other_wagers=0
    ) == [Refusal.NOT_PLAYED_PREVIOUS_ROUND]


def test_nsw_bank_from_the_box_last_played_nsw_6_3() -> None:
    # NSW 6.3
    state = after_house_round(Profile.NSW)
    c = Candidate(3, frozenset({4}), None, RICH)
    assert Refusal.NOT_LAST_PLAYED_BOX in refusals(state, c, BankHolder.PLAYER, other_wagers=0)


def test_nsw_controller_banks_only_from_the_controlled_box_nsw_6_4() -> None:
    # NSW 6.4
    state = after_house_round(Profile.NSW)
    c = Candidate(3, frozenset({3, 5}), 5, RICH)
    assert refusals(state, c, BankHolder.PLAYER, other_wagers=0) == [Refusal.CONTROLS_ANOTHER_BOX]
    assert (
        refusals(state, Candidate(5, frozenset({3, 5}), 5, RICH), BankHolder.PLAYER, other_wagers=0)
        == []
    )


def test_nsw_non_controller_banks_from_box_furthest_from_chung_nsw_6_5() -> None:
    """NSW 6.5: counted counter-clockwise from the chung (box 6 here): 7, 8, 1, 2 ... 2 is
    furthest."""
    state = player_bank(Profile.NSW, 6)
    wagered = frozenset({7, 2})
    near = Candidate(7, wagered, None, RICH)
    far = Candidate(2, wagered, None, RICH)
    assert refusals(state, near, BankHolder.PLAYER, other_wagers=0) == [
        Refusal.NOT_FURTHEST_FROM_CHUNG
    ]
    assert refusals(state, far, BankHolder.PLAYER, other_wagers=0) == []


def test_nsw_funds_must_cover_all_wagers_nsw_9_15_13_2_2() -> None:
    # NSW 9.15, 13.2.2
    state = after_house_round(Profile.NSW)
    assert refusals(state, ready(3, 999), BankHolder.PLAYER, other_wagers=1000) == [
        Refusal.INSUFFICIENT_FUNDS
    ]
    assert refusals(state, ready(3, 1000), BankHolder.PLAYER, other_wagers=1000) == []


def test_nsw_has_no_co_bank_nsw_11_1() -> None:
    # NSW 11.1: the House banks (11.1.1) or a player/banker covers all (11.1.2), nothing else.
    with pytest.raises(InputError, match=r"11\.1"):
        take_bank(after_house_round(Profile.NSW), ready(3), BankHolder.CO_BANK, other_wagers=0)
    assert refusals(after_house_round(Profile.NSW), ready(3), BankHolder.PLAYER,
                    other_wagers=0) == []


def test_nz_played_previous_round_controls_box_and_covers_nz_5_3() -> None:
    state = after_house_round(Profile.NZ)
    nobody = Candidate(3, frozenset(), None, 0)
    assert refusals(state, nobody, BankHolder.PLAYER, other_wagers=500) == [
        Refusal.NOT_PLAYED_PREVIOUS_ROUND,
        Refusal.DOES_NOT_CONTROL_BOX,
        Refusal.INSUFFICIENT_FUNDS,
    ]
    # NZ 5.3(a) asks only that the player played; the box played need not be this one.
    moved = Candidate(1, frozenset({4}), 1, 500)
    assert refusals(state, moved, BankHolder.PLAYER, other_wagers=500) == []


@pytest.mark.parametrize("profile", [Profile.NZ, Profile.ACT])
def test_co_bank_needs_half_player_bank_needs_all_nz_5_3_c_act_6_4_6_5(profile: Profile) -> None:
    # NZ 5.3(c), ACT 6.4-6.5
    state = after_house_round(profile)
    assert refusals(state, ready(3, 500), BankHolder.CO_BANK, other_wagers=1000) == []
    assert refusals(state, ready(3, 499), BankHolder.CO_BANK, other_wagers=999) == [
        Refusal.INSUFFICIENT_FUNDS
    ]  # 50% of 999 is 499.5: 499 does not cover it
    assert refusals(state, ready(3, 500), BankHolder.PLAYER, other_wagers=1000) == [
        Refusal.INSUFFICIENT_FUNDS
    ]


def test_act_box_one_exception_after_house_bank_act_6_3() -> None:
    # ACT 6.3
    state = after_house_round(Profile.ACT)
    fresh = Candidate(1, frozenset(), None, RICH)
    assert refusals(state, fresh, BankHolder.PLAYER, other_wagers=0) == []
    elsewhere = Candidate(2, frozenset({3}), 2, RICH)
    assert refusals(state, elsewhere, BankHolder.PLAYER, other_wagers=0) == [
        Refusal.NOT_LAST_PLAYED_BOX
    ]
    # Not after a player's bank: box 1 must have been played like any other box.
    after_player = player_bank(Profile.ACT, 8)
    assert refusals(after_player, fresh, BankHolder.PLAYER, other_wagers=0) == [
        Refusal.NOT_LAST_PLAYED_BOX
    ]


def test_take_bank_error_lists_every_reason_with_its_rule() -> None:
    state = after_house_round(Profile.NZ)
    with pytest.raises(InputError) as err:
        take_bank(state, Candidate(3), BankHolder.PLAYER, other_wagers=100)
    message = str(err.value)
    for rule in ("NZ 5.3(a)", "NZ 5.3(b)", "NZ 5.3(c)", "box 3"):
        assert rule in message


@pytest.mark.parametrize("bad", [0, 9])
def test_candidate_box_must_exist(bad: int) -> None:
    # Boxes 1 to 8 (ACT 1(a), NZ 3.1-3.2).
    with pytest.raises(InputError, match=f"box {bad}"):
        refusals(after_house_round(Profile.NZ), ready(bad), BankHolder.PLAYER, other_wagers=0)


def test_negative_amounts_are_refused() -> None:
    state = after_house_round(Profile.NZ)
    with pytest.raises(InputError, match="funds -1"):
        refusals(state, ready(2, -1), BankHolder.PLAYER, other_wagers=0)
    with pytest.raises(InputError, match="other_wagers -5"):
        refusals(state, ready(2), BankHolder.PLAYER, other_wagers=-5)


# --- rotation ------------------------------------------------------------------------------------


def test_nsw_offer_starts_directly_left_of_last_bank_nsw_6_1() -> None:
    # NSW 6.1
    assert offer_order(player_bank(Profile.NSW, 3), ALL) == [4, 5, 6, 7, 8, 1, 2]
    # After the House's bank on box 1: box 2 first, box 1 last.
    assert offer_order(after_house_round(Profile.NSW), ALL) == [2, 3, 4, 5, 6, 7, 8, 1]


def test_nz_offer_after_house_first_round_starts_at_box_1_nz_5_2() -> None:
    assert offer_order(after_house_round(Profile.NZ), [5, 1, 3]) == [1, 3, 5]


def test_nz_offer_after_player_bank_starts_right_of_the_banker_nz_5_4() -> None:
    assert offer_order(player_bank(Profile.NZ, 6), ALL) == [7, 8, 1, 2, 3, 4, 5]


def test_act_offer_goes_to_the_next_player_act_6_7() -> None:
    assert offer_order(after_house_round(Profile.ACT), [2, 4]) == [2, 4]
    assert offer_order(player_bank(Profile.ACT, 2), [1, 2, 4]) == [4, 1]


def test_offer_skips_unoccupied_boxes_and_wraps_on_smaller_tables() -> None:
    assert offer_order(player_bank(Profile.NZ, 5, n_boxes=6), [1, 2, 6]) == [6, 1, 2]
    with pytest.raises(InputError, match="box 7"):
        offer_order(player_bank(Profile.NZ, 5, n_boxes=6), [7])


def test_no_offer_while_a_player_bank_runs() -> None:
    with pytest.raises(InputError, match="1 of 2 rounds"):
        offer_order(player_bank(Profile.NSW, 3, rounds=1), ALL)
    with pytest.raises(InputError, match="not open"):
        take_bank(
            player_bank(Profile.NSW, 3, rounds=1), ready(4), BankHolder.PLAYER, other_wagers=0
        )


@given(
    st.sampled_from(list(Profile)),
    st.integers(1, 8),
    st.data(),
)
def test_rotation_visits_every_occupied_box_once(
    profile: Profile, n: int, data: st.DataObject
) -> None:
    occupied = data.draw(st.sets(st.integers(1, n)))
    holder_box = data.draw(st.integers(1, n))
    if data.draw(st.booleans()):
        state = after_house_round(profile, n_boxes=n)
        expected = occupied
        start = 2 if profile is Profile.NSW else 1
    else:
        state = player_bank(profile, holder_box, n_boxes=n)
        expected = occupied - {holder_box}  # the round limit keeps the holder out
        start = holder_box + 1
    order = offer_order(state, occupied)
    assert sorted(order) == sorted(expected)
    # Counter-clockwise: distances from the starting box strictly increase.
    distances = [(b - start) % n for b in order]
    assert distances == sorted(distances)


# --- round limits --------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", list(Profile))
def test_a_bank_is_two_rounds_nsw_6_7_nz_5_4_act_6_7(profile: Profile) -> None:
    one = player_bank(profile, 3, rounds=1)
    assert not bank_open(one)
    two = after_round(one)
    assert bank_open(two)
    with pytest.raises(InputError, match="offer the bank"):
        after_round(two)


@pytest.mark.parametrize("profile", [Profile.NZ, Profile.ACT])
def test_no_more_than_two_consecutive_rounds_nz_5_4_act_6_7(profile: Profile) -> None:
    state = player_bank(profile, 3)
    assert 3 not in offer_order(state, ALL)
    with pytest.raises(InputError, match="maximum number of rounds"):
        take_bank(state, ready(3), BankHolder.PLAYER, other_wagers=0)
    with pytest.raises(InputError, match="max_banks_per_box 2"):
        bk.start(profile, max_banks_per_box=2)


def test_nsw_house_may_allow_up_to_three_banks_per_playing_area_nsw_6_7() -> None:
    opened = after_round(bk.start(Profile.NSW, max_banks_per_box=3))
    state = take_bank(opened, ready(3), BankHolder.PLAYER, other_wagers=0)
    for bank_number in (1, 2, 3):
        assert state.banks_on_box == bank_number
        state = after_round(after_round(state))
        if bank_number < 3:
            assert offer_order(state, ALL)[0] == 3  # the area may hold another bank first
            state = take_bank(state, ready(3), BankHolder.PLAYER, other_wagers=0)
    assert offer_order(state, ALL) == [4, 5, 6, 7, 8, 1, 2]
    with pytest.raises(InputError, match=r"NSW 6\.7"):
        take_bank(state, ready(3), BankHolder.PLAYER, other_wagers=0)
    with pytest.raises(InputError, match="max_banks_per_box 4"):
        bk.start(Profile.NSW, max_banks_per_box=4)


def test_nsw_default_is_one_bank_per_area() -> None:
    state = player_bank(Profile.NSW, 3)
    assert offer_order(state, ALL) == [4, 5, 6, 7, 8, 1, 2]
    assert rounds_limit(state) == 2


@given(
    st.sampled_from(list(Profile)),
    st.integers(1, 3),
    st.lists(st.tuples(st.integers(0, 8), st.booleans()), max_size=60),
)
def test_round_limits_are_never_exceeded(
    profile: Profile, banks: int, script: list[tuple[int, bool]]
) -> None:
    """Whatever the sequence of offers, no box holds a player bank for more consecutive rounds
    than its profile allows (NSW 6.7: 2 per bank x up to 3 banks; NZ 5.4, ACT 6.7: 2)."""
    max_banks = banks if profile is Profile.NSW else 1
    limit = 2 * max_banks
    state = bk.start(profile, max_banks_per_box=max_banks)
    streak_box, streak = None, 0
    for box, co in script:
        if box and bank_open(state):
            holder = BankHolder.CO_BANK if co and profile is not Profile.NSW else BankHolder.PLAYER
            with contextlib.suppress(InputError):
                state = take_bank(state, ready(box), holder, other_wagers=0)
        try:
            state = after_round(state)
        except InputError:
            state = after_round(house_banks(state))
        if state.holder is BankHolder.HOUSE:
            streak_box, streak = None, 0
        elif state.box == streak_box:
            streak += 1
        else:
            streak_box, streak = state.box, 1
        assert streak <= limit
        assert streak <= rounds_limit(state)
