"""NZ 7.2: a player may not control the tiles on more than 1 box; the other boxes they would
control are set by the dealer the house way (property over random layouts)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controller.games.paigow.profiles import Profile
from controller.games.paigow.wagers import Wager, box_controller, house_way_boxes

PLAYERS = ["a", "b", "c", "d"]
wagers_st = st.lists(
    st.builds(Wager, st.integers(2, 8), st.sampled_from(PLAYERS),
              st.integers(1, 5).map(lambda n: n * 1000), st.booleans(), st.integers(0, 3)),
    min_size=1, max_size=12,
).map(lambda ws: list({(w.box, w.player): w for w in ws}.values()))  # one wager per player/box


@given(wagers_st, st.dictionaries(st.sampled_from(PLAYERS), st.integers(2, 8)))
def test_nz_each_player_sets_at_most_one_box(wagers: list[Wager], chosen: dict[str, int]) -> None:
    by_box: dict[int, list[Wager]] = {}
    for w in wagers:
        by_box.setdefault(w.box, []).append(w)
    controller = {box: box_controller(ws, Profile.NZ) for box, ws in by_box.items()}
    house = house_way_boxes(wagers, Profile.NZ, chosen)
    for box, player in house.items():
        assert controller[box] == player
    kept: dict[str, list[int]] = {}
    for box, player in controller.items():
        if box not in house:
            kept.setdefault(player, []).append(box)
    assert all(len(boxes) == 1 for boxes in kept.values())
    assert set(kept) == set(controller.values())  # everyone keeps one box
    for player, box in chosen.items():
        if controller.get(box) == player:
            assert box not in house  # the indicated box is the one kept
    assert house_way_boxes(wagers, Profile.NSW, chosen) == {}
    assert house_way_boxes(wagers, Profile.ACT, chosen) == {}
