"""Wager outcomes: NSW 9.2-9.4, NZ 4.5-4.7 and 6.1-6.2, ACT 12.1-12.5."""

from __future__ import annotations

import pytest
from hypothesis import given

from controller.games.paigow.outcome import Outcome, banker_outcome, player_outcome
from controller.games.paigow.profiles import Profile
from controller.games.paigow.settings import all_settings, parse_setting
from controller.games.paigow.tiles import parse_tiles
from shared.errors import InputError
from tests.support.paigow_strategies import dealt_settings

ALL = list(Profile)


def outcome(player: str, banker: str, profile: Profile = Profile.NSW) -> Outcome:
    return player_outcome(parse_setting(player), parse_setting(banker), profile)


@pytest.mark.parametrize("profile", ALL)
def test_both_hands_higher_wins_neither_loses_one_pushes(profile: Profile) -> None:
    # NSW 9.2.1.1 / 9.2.2.1 / 9.2.3; NZ 6.1(a)-(c); ACT 12.1-12.2.
    assert outcome("6-6 6-6 / 4-4 4-4", "1-1 1-1 / 5-5 5-5", profile) is Outcome.WIN
    assert outcome("1-1 1-1 / 5-5 5-5", "6-6 6-6 / 4-4 4-4", profile) is Outcome.LOSE
    assert outcome("6-6 6-6 / 2-2 2-2", "1-1 1-1 / 4-4 4-4", profile) is Outcome.PUSH


@pytest.mark.parametrize("profile", ALL)
def test_copies_go_to_the_bank(profile: Profile) -> None:
    # NSW 9.2.2.4, NZ 4.5-4.6, ACT 12.4: same points and equal highest tile -> the bank.
    # Player 5-5 4-5 (9, High 10 top) vs bank 5-5 3-6 (9, High 10 top): a copy.
    assert outcome("5-5 4-5 / 1-1 2-2", "5-5 3-6 / 6-6 1-4", profile) is Outcome.LOSE
    # Player takes the low hand outright (6-6 1-5: 8) so the high copy makes a push.
    assert outcome("5-5 4-5 / 6-6 1-5", "5-5 3-6 / 1-1 2-2", profile) is Outcome.PUSH


@pytest.mark.parametrize("profile", [Profile.NSW, Profile.NZ])
def test_zero_against_zero_goes_to_the_bank_in_either_hand(profile: Profile) -> None:
    # NSW 9.2.2.2 "either the high or low hand ... zero regardless of ranking"; NZ 4.7.
    # Zero hands without Gee Joon: 4-6 + 5-5 (0), 1-3 + 1-5 (0), 2-2 + 3-3 (0), 1-6 + 3-6 (16->6)
    player = "1-3 1-5 / 2-2 3-3"  # 0 (High 4 top), 0 (High 6 top)
    banker = "4-6 5-5 / 2-2 1-5"  # 0 (High 10 top), 0 (Low 4 top)
    assert outcome(player, banker, profile) is Outcome.LOSE


def test_act_zero_rule_names_only_the_low_hand() -> None:
    # ACT 12.5 gives zero-against-zero to the bank for the low hand; ACT 12.3 decides equal totals
    # by the highest-ranking tile, so the player's High 4 takes the zero high hand: a push.
    player = "1-3 1-5 / 2-2 3-3"
    banker = "4-6 5-5 / 2-2 1-5"
    assert outcome(player, banker, Profile.ACT) is Outcome.PUSH


@pytest.mark.parametrize("profile", [Profile.NSW, Profile.NZ])
def test_the_bank_wager_wins_loses_and_stands_off_by_its_own_clauses(profile: Profile) -> None:
    # NSW 9.4 (the text prints the bank's wager 9.4 and its items 9.3.1-9.3.3); NZ 6.2.
    def bank(player: str, banker: str) -> Outcome:
        return banker_outcome(parse_setting(player), parse_setting(banker), profile)

    assert bank("1-1 1-1 / 5-5 5-5", "6-6 6-6 / 4-4 4-4") is Outcome.WIN  # NSW 9.3.1, 9.3.1.1
    assert bank("1-3 1-5 / 2-2 3-3", "4-6 5-5 / 2-2 1-5") is Outcome.WIN  # NSW 9.3.1.2: zeros
    assert bank("5-5 4-5 / 1-1 2-2", "5-5 4-5 / 1-1 2-2") is Outcome.WIN  # NSW 9.3.1.3
    assert bank("5-5 4-5 / 1-1 2-2", "5-5 3-6 / 6-6 1-4") is Outcome.WIN  # NSW 9.3.1.4: copy
    assert bank("6-6 6-6 / 4-4 4-4", "1-1 1-1 / 5-5 5-5") is Outcome.LOSE  # NSW 9.3.2, 9.3.2.1
    # NSW 9.3.2.2: equal points (9 each), the player's highest tile (High 8) outranks the
    # bank's (High 10), and the player's low hand is higher: the bank loses.
    assert bank("4-4 5-6 / 6-6 1-5", "5-5 4-5 / 1-1 2-2") is Outcome.LOSE
    assert bank("6-6 6-6 / 2-2 2-2", "1-1 1-1 / 4-4 4-4") is Outcome.PUSH  # NSW 9.3.3


@pytest.mark.parametrize("profile", ALL)
@given(settings=dealt_settings(2))
def test_bank_wager_mirrors_the_player_wager(profile: Profile, settings) -> None:
    # The bank's wager (NSW 9.4) is the player's (NSW 9.3) seen from the bank; NZ 6.2 mirrors
    # 6.1.
    player, banker = settings
    p = player_outcome(player, banker, profile)
    assert banker_outcome(player, banker, profile) is p.mirrored()
    if p is Outcome.WIN:
        # Winning both hands strictly means losing both when the roles are swapped.
        assert player_outcome(banker, player, profile) is Outcome.LOSE


@pytest.mark.parametrize("profile", ALL)
@given(settings=dealt_settings(1))
def test_a_hand_never_beats_itself(profile: Profile, settings) -> None:
    # NSW 9.2.2.3: identical hands go to the bank.
    (s,) = settings
    assert player_outcome(s, s, profile) is Outcome.LOSE


def test_invalid_setting_is_refused() -> None:
    # Four tiles are set as two hands of two, a high and a low that may not outrank it (NSW 12.4,
    # NZ 1.0 "Set", ACT 10.1).
    with pytest.raises(InputError, match="outranks high hand"):
        parse_setting("1-4 2-3 / 6-6 6-6")
    assert len(all_settings(parse_tiles(["6-6", "6-6", "1-1", "1-1"]))) == 2
    assert len(all_settings(parse_tiles(["6-6", "4-5", "3-3", "1-2"]))) == 3
