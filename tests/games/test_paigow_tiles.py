"""Tiles: the 32-tile set, notation, names and errors that name the bad token."""

from __future__ import annotations

from collections import Counter

import pytest

from controller.games.paigow.tiles import (
    FULL_SET,
    TILES,
    check_available,
    parse_tile,
    parse_tiles,
)
from shared.errors import InputError


def test_the_set_has_32_tiles_of_21_kinds() -> None:
    # NSW 3.1, NZ 3.3(a), ACT 3.1: thirty-two tiles.
    assert len(FULL_SET) == 32
    assert len(TILES) == 21
    # Every pip combination a-b appears at most twice and the pips of the set add up to 227.
    assert sum(t.pips for t in FULL_SET) == 227
    counts = Counter(t.copies for t in TILES)
    assert counts == {2: 11, 1: 10}


def test_every_pair_rank_is_formed_by_exactly_two_tiles() -> None:
    # 16 pairs: 11 of identical tiles and 5 mixed (DESIGN tile set; NSW Appendix 1).
    by_rank = Counter(t.pair_rank for t in FULL_SET)
    assert sorted(by_rank) == list(range(1, 17))
    assert set(by_rank.values()) == {2}


def test_mixed_pair_tiles_rank_equally_as_singles() -> None:
    for a, b in (("4-5", "3-6"), ("3-5", "2-6"), ("3-4", "2-5"), ("1-4", "2-3"), ("1-2", "2-4")):
        assert parse_tile(a).single_rank == parse_tile(b).single_rank
        assert parse_tile(a).pips % 10 == parse_tile(b).pips % 10 or parse_tile(a).is_gee_joon


def test_the_individual_ranking_is_each_seeds_list() -> None:
    # NSW Appendix 1, NZ 4.4 and Appendix 3, ACT 3.7 and Appendix C: Teen highest, then Day,
    # High 8, High 4, High 10, High 6, Low 4, Eleven, Low 10, High 7, Low 6, the nines, low
    # eights, low sevens, fives, and Gee Joon lowest.
    order = ["6-6", "1-1", "4-4", "1-3", "5-5", "3-3", "2-2", "5-6", "4-6", "1-6", "1-5",
             "4-5", "3-5", "3-4", "1-4", "1-2"]
    ranks = [parse_tile(t).single_rank for t in order]
    assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks)


def test_gee_joon_is_the_lowest_single_and_the_highest_pair() -> None:
    # NSW 3.2.2: Gee Jun, ranked No 1 pair, are as individual tiles the lowest ranked.
    gee = parse_tile("gee-joon-3")
    assert gee.pair_rank == 1
    assert gee.single_rank == max(t.single_rank for t in TILES)


@pytest.mark.parametrize(
    ("token", "notation"),
    [("6-6", "6-6"), ("teen", "6-6"), ("Day", "1-1"), ("high-8", "4-4"), ("yun", "4-4"),
     ("6-2", "2-6"), ("gee-joon-6", "2-4"), ("high 4", "1-3"), ("eleven", "5-6"),
     ("nine-3-6", "3-6"), ("12", "6-6")],
)
def test_names_and_pips_parse(token: str, notation: str) -> None:
    assert parse_tile(token).notation == notation


@pytest.mark.parametrize("token", ["6-7", "0-1", "xx", "1-1-1", "", "3-1-"])
def test_bad_tokens_name_themselves(token: str) -> None:
    with pytest.raises(InputError) as err:
        parse_tile(token)
    assert repr(token) in str(err.value)


def test_ambiguous_name_lists_the_choices() -> None:
    with pytest.raises(InputError, match="4-5 or 3-6"):
        parse_tile("nine")


def test_more_copies_than_the_set_holds_is_an_error() -> None:
    check_available(parse_tiles(["6-6", "6-6"]))
    with pytest.raises(InputError, match="6-6 appears 3 times but a set holds 2"):
        parse_tiles(["6-6", "6-6", "teen", "1-1"])
    with pytest.raises(InputError, match="4-5 appears 2 times but a set holds 1"):
        parse_tiles(["4-5", "5-4"])


def test_wrong_count_is_an_error() -> None:
    with pytest.raises(InputError, match="expected 4 tiles, got 3"):
        parse_tiles(["6-6", "1-1", "4-4"], 4)
