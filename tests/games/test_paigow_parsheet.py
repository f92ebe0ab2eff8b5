"""The par sheet's type-grouped count agrees with brute force over physical tiles."""

from __future__ import annotations

import itertools
import random
from functools import cache

import pytest

from controller.games.paigow import parsheet
from controller.games.paigow.houseway import house_way_function
from controller.games.paigow.outcome import Outcome, player_outcome
from controller.games.paigow.profiles import Profile
from controller.games.paigow.settings import Setting
from controller.games.paigow.tiles import FULL_SET, TILES, Tile


@cache
def house_way(profile: Profile, tiles: tuple[Tile, ...]) -> Setting:
    """The house way of these tiles in this order: a pure function, so worked out once for the
    many physical combinations of the same tiles (it was nearly all of the brute force's time)."""
    return house_way_function(profile)(tiles)


def brute_force(profile: Profile, hand: tuple[int, ...]) -> tuple[int, int, int]:
    """Every banker hand from the 28 remaining physical tiles, compared one by one."""
    player = house_way(profile, tuple(FULL_SET[i] for i in hand))
    rest = [i for i in range(32) if i not in hand]
    counts = {Outcome.WIN: 0, Outcome.PUSH: 0, Outcome.LOSE: 0}
    for combo in itertools.combinations(rest, 4):
        banker = house_way(profile, tuple(FULL_SET[i] for i in combo))
        counts[player_outcome(player, banker, profile)] += 1
    return counts[Outcome.WIN], counts[Outcome.PUSH], counts[Outcome.LOSE]


@pytest.mark.parametrize("profile", list(Profile))
def test_grouped_count_matches_brute_force_for_sample_hands(profile: Profile) -> None:
    types = parsheet.hand_types(profile, house_way_function(profile))
    index = {t: k for k, t in enumerate(TILES)}
    rng = random.Random(f"parsheet-{profile}")
    for hand in rng.sample(list(itertools.combinations(range(32), 4)), 3):
        kinds = [0] * len(TILES)
        for i in hand:
            kinds[index[FULL_SET[i]]] += 1
        row = next(r for r in range(len(types.counts)) if list(types.counts[r]) == kinds)
        grouped = parsheet.matchup_counts(types, row)
        assert grouped == brute_force(profile, hand)
        assert sum(grouped) == 20_475


def test_types_cover_every_hand_once() -> None:
    types = parsheet.hand_types(Profile.NZ, house_way_function(Profile.NZ))
    assert int(types.multiplicity.sum()) == 35_960


def test_edges_follow_from_counts() -> None:
    sheet = parsheet.ParSheet(Profile.NSW, 500, matchups=100, wins=30, pushes=40, losses=30)
    # Player: 30 wins paid 0.95, 30 losses: edge (30 - 28.5)/100 = 1.5%.
    assert sheet.house_edge_player == pytest.approx(0.015)
    assert float(sheet.house_edge_banker) == pytest.approx(0.015)
    sheet2 = parsheet.ParSheet(Profile.NSW, 0, matchups=10, wins=3, pushes=4, losses=3)
    assert sheet2.house_edge_player == 0 and sheet2.house_edge_banker == 0
