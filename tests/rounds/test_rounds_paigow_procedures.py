"""Pai Gow procedures left from issue 13, each with its profile's clause (seeds 000 NSW, 002 + 004
NZ, 003 ACT): the OFF-box draw's profiles and timing, NZ 7.2, the delivery order, NZ 12.17."""

from __future__ import annotations

import copy
from itertools import product

import pytest

from controller.games.paigow.cuts import cut_table, option_sets
from controller.games.paigow.houseway import house_way
from controller.games.paigow.profiles import Profile
from controller.games.paigow.resolve import same_setting
from controller.games.paigow.settings import all_settings
from controller.games.paigow.tiles import parse_tiles
from tests.support.paigow_table import Table, at_phase, first, kinds, texts

RICH = 10_000_000


def at(profile: Profile, phase: str) -> Table:
    return at_phase(profile, phase)


# -- the OFF-box draw: NSW 15.9.1-15.9.3 and NZ 12.9-12.10 between rounds; ACT none ----------

WHEN = {Profile.NSW: "NSW 15.9.1-15.9.3", Profile.NZ: "NZ 12.9-12.10"}
REFUSED_PHASES = {
    Profile.NSW: ["closed", "off_draw", "shaking", "announced", "setting"],
    Profile.NZ: ["closed", "off_draw", "cutting", "shaking", "announced", "setting"],
}


@pytest.mark.parametrize(("profile", "phase"),
                         [(p, ph) for p, phs in REFUSED_PHASES.items() for ph in phs])
def test_the_off_draw_outside_betting_is_refused_with_its_clause(
    profile: Profile, phase: str
) -> None:
    t = at(profile, phase)
    before = t.m.to_json(t.state)
    effects = t.send("dealer.off_draw")
    assert kinds(effects) == ["log"] and WHEN[profile] in texts(effects)
    assert "between rounds" in texts(effects) and t.m.to_json(t.state) == before


@pytest.mark.parametrize("profile", [Profile.NSW, Profile.NZ])
def test_the_off_draw_is_made_in_betting_under_the_house(profile: Profile) -> None:
    t = at(profile, "betting")
    effects = t.send("dealer.off_draw")
    assert t.phase == "off_draw" and "device" in kinds(effects)


@pytest.mark.parametrize("phase", ["closed", "betting", "shaking", "announced", "setting"])
def test_act_has_no_off_draw_in_any_phase(phase: str) -> None:
    t = at(Profile.ACT, phase)
    before = t.m.to_json(t.state)
    effects = t.send("dealer.off_draw")
    assert kinds(effects) == ["log"] and "no OFF draw" in texts(effects)
    assert "NSW 15.9 and NZ 12.9-12.10 only" in texts(effects)
    assert t.m.to_json(t.state) == before


# -- NZ 7.2: one controlled box per player; the other set the house way by the dealer ----------


def other_setting(tiles: list[str]) -> str:
    """A legal setting of `tiles` that is not the NZ house way."""
    parsed = parse_tiles(tiles, 4)
    proper = house_way(parsed, Profile.NZ)
    return next(str(s) for s in all_settings(parsed) if not same_setting(s, proper))


BOX3 = ["6-6", "1-1", "4-4", "1-3"]
BOX5 = ["5-5", "3-3", "2-2", "5-6"]
BANK = {"tiles": ["6-6", "1-1", "4-6", "2-4"]}


def roamer_on_two_boxes(**data: object) -> Table:
    """NZ: "roamer" alone on boxes 3 and 5 controls both (NZ 7.1(a)), delivered."""
    t = Table(Profile.NZ)
    t.send("table.open")
    t.send("dealer.wager", box=3, player="roamer", amount=2000)
    t.send("dealer.wager", box=5, player="roamer", amount=2000)
    if data:
        t.send("dealer.control", **data)
    t.to_shaking()
    t.dice(2, 2, 2)
    t.send("dealer.delivered")
    return t


def test_nz_a_player_controlling_two_boxes_keeps_the_chosen_one_the_other_is_house_way() -> None:
    t = roamer_on_two_boxes(player="roamer", box=5)
    assert t.status["house_way_boxes"] == {"3": "roamer"}
    assert t.state.display["text"] == "SET YOUR HANDS / HOUSE WAY BOX 3"
    before = t.m.to_json(t.state)
    own = other_setting(BOX3)  # the player may not set box 3 their own way (NZ 7.2)
    effects = t.send("dealer.result", hands={"3": own, "5": other_setting(BOX5)}, bank_hand=BANK)
    assert kinds(effects) == ["alarm"] and "NZ 7.2" in texts(effects)
    assert t.m.to_json(t.state) == before
    effects = t.send("dealer.result", hands={"3": {"conceded": True}, "5": {"tiles": BOX5}},
                     bank_hand=BANK)
    assert "NZ 7.2" in texts(effects) and t.phase == "setting"  # nor concede it
    effects = t.send("dealer.result", hands={"3": {"tiles": BOX3}, "5": other_setting(BOX5)},
                     bank_hand=BANK)
    summary = first(effects, "round")["summary"]
    assert summary["house_way_boxes"] == {"3": "roamer"} and t.phase == "betting"


def test_nz_without_an_indication_the_first_box_wagered_on_is_kept() -> None:
    t = roamer_on_two_boxes()
    assert t.status["house_way_boxes"] == {"5": "roamer"}


@pytest.mark.parametrize("profile", [Profile.NSW, Profile.ACT])
def test_choosing_a_controlled_box_is_nz_only(profile: Profile) -> None:
    t = at(profile, "betting")
    t.send("dealer.wager", box=3, player="roamer", amount=2000)
    effects = t.send("dealer.control", player="roamer", box=3)
    assert kinds(effects) == ["log"] and "NZ 7.2" in texts(effects)
    assert t.state.controls == {} and t.status["house_way_boxes"] == {}


def test_nz_a_box_the_player_does_not_control_cannot_be_chosen() -> None:
    t = at(Profile.NZ, "betting")
    t.send("dealer.wager", box=3, player="p3", amount=2000, seated=True)
    t.send("dealer.wager", box=3, player="roamer", amount=4000)
    effects = t.send("dealer.control", player="roamer", box=3)
    assert "does not control box 3" in texts(effects) and t.state.controls == {}
    assert "has no wager on box 4" in texts(t.send("dealer.control", player="roamer", box=4))


# -- NZ 12.17: the dealer miscounts the bets, the player/banker makes up the difference --------


def nz_bank(holder: str, funds: int) -> Table:
    """p3 plays a house round on box 3 (NZ 5.2), then banks on box 3 with `funds`."""
    t = Table(Profile.NZ)
    t.send("table.open")
    t.to_shaking(p3=2000)
    t.dice(2, 2, 2)
    t.send("dealer.delivered")
    t.send("dealer.result", hands={"3": {"tiles": BOX3}}, bank_hand={"tiles": BOX5})
    t.send("dealer.bank", box=3, holder=holder, player="p3", funds=funds)
    t.to_shaking(p2=2000)
    t.dice(2, 2, 2)
    assert t.phase == "announced" and t.state.bank["holder"] == holder
    return t


WIN = {"2": "6-6 6-6 / 1-1 1-1"}
LOSE_BANK = {"tiles": ["4-4", "4-4", "1-3", "1-3"]}


@pytest.mark.parametrize(("holder", "funds", "pb", "house"),
                         [("player", 2000, 4000, 0), ("co-bank", 1000, 2000, 2000)])
def test_nz_a_miscount_short_of_the_winners_is_made_up(
    holder: str, funds: int, pb: int, house: int
) -> None:
    t = nz_bank(holder, funds)
    effects = t.send("dealer.miscount", box=2, player="p2", amount=6000)
    assert "NZ 12.17" in texts(effects) and t.state.wagers[0]["amount"] == 6000
    t.send("dealer.delivered")
    summary = first(t.send("dealer.result", hands=WIN, bank_hand=LOSE_BANK), "round")["summary"]
    # p2's 6000 wins; the bank holds 2000 (co-bank: 1000 + the house's 1000): 4000 short.
    assert summary["make_up"] == {"rule": "NZ 12.17", "banker_wager": funds, "shortfall": 4000,
                                  "player_banker": pb, "house": house}
    assert summary["miscounts"] == [{"box": 2, "player": "p2", "keyed": 2000, "counted": 6000,
                                     "rule": "NZ 12.17"}]
    settlement = summary["settlement"]
    assert settlement["results"][0]["won"] == 6000 and settlement["conserved"]
    assert settlement["banker_net"] == -(6000 if holder == "player" else 3000)


def test_nz_a_miscount_the_bank_still_covers_needs_no_make_up() -> None:
    t = nz_bank("player", 10_000)
    t.send("dealer.miscount", box=2, player="p2", amount=4000)
    t.send("dealer.delivered")
    summary = first(t.send("dealer.result", hands=WIN, bank_hand=LOSE_BANK), "round")["summary"]
    assert "make_up" not in summary and summary["settlement"]["results"][0]["won"] == 4000


def test_nz_a_miscount_when_the_winners_are_paid_from_the_losers_makes_up_nothing() -> None:
    t = nz_bank("player", 2000)
    t.send("dealer.miscount", box=2, player="p2", amount=6000)
    t.send("dealer.delivered")
    # p2 loses: nothing is owed, the shortfall is 0 although the bank's wager did not cover.
    summary = first(t.send("dealer.result", hands={"2": "4-4 4-4 / 1-3 1-3"},
                           bank_hand={"tiles": ["6-6", "6-6", "1-1", "1-1"]}), "round")["summary"]
    assert summary["make_up"]["shortfall"] == 0
    assert summary["settlement"]["banker_wager"] == 2000


@pytest.mark.parametrize("profile", [Profile.NSW, Profile.ACT])
def test_a_miscount_is_nz_only(profile: Profile) -> None:
    t = at(profile, "setting")
    before = t.m.to_json(t.state)
    effects = t.send("dealer.miscount", box=2, player="p2", amount=6000)
    assert "no miscount rule (NZ 12.17)" in texts(effects) and t.m.to_json(t.state) == before


# -- the delivery order on the display: every dice total x every cut, per profile -------------


def _dice_for(total: int) -> tuple[int, int, int]:
    a = min(6, total - 2)
    b = min(6, total - a - 1)
    return a, b, total - a - b


def _cut_choices(profile: Profile) -> list[dict[str, object]]:
    if profile is Profile.NSW:
        return [{"cut_die": face} for face in range(1, 7)]  # NSW Appendix 4, house banking
    if profile is Profile.ACT:
        return [{}]  # ACT 8.3: the house way cut
    return [{"cut": spec.cut.value, "options": sorted(o.value for o in opts)}
            for spec in cut_table(Profile.NZ) for opts in option_sets(Profile.NZ, spec.cut)]


@pytest.mark.parametrize("profile", list(Profile))
def test_the_announcement_shows_each_groups_box_for_every_total_and_cut(profile: Profile) -> None:
    step = -1 if profile is Profile.ACT else 1
    runs = 0
    # Every run starts from the same table after no more bets: played once (states are immutable).
    betting_closed = Table(profile)
    betting_closed.send("table.open")
    betting_closed.send("dealer.wager", box=2, player="p2", amount=2000)
    betting_closed.send("dealer.no_more_bets")
    for choice, total in product(_cut_choices(profile), range(3, 19)):
        t = copy.copy(betting_closed)
        t.rounds = []
        if profile is Profile.NZ:
            t.send("cut.selected", **choice)
        a, b, c = _dice_for(total)
        t.send("dice.result", box_dice=[a, b, c], cut_die=choice.get("cut_die"))
        display = t.state.display
        first_pos = (total - 1) % 8 + 1  # counted from the house's box 1 (NSW 8.4.1 ...)
        assert t.phase == "announced" and display["first_box"] == first_pos
        positions = [d["position"] for d in display["delivery"]]
        assert positions == [(first_pos - 1 + step * k) % 8 + 1 for k in range(8)]
        assert [d["to"] for d in display["delivery"] if d["box"] == 2] == ["player"]
        assert [d["to"] for d in display["delivery"] if d["box"] == 1] == ["bank"]
        assert t.status["delivery"] == display["delivery"]
        assert display["order"].startswith("CLOCKWISE" if step < 0 else "COUNTER-CLOCKWISE")
        runs += 1
    assert runs == len(_cut_choices(profile)) * 16


# -- lajas and re-shuffles before the deal (NSW 7.3, 15.1-15.4; NZ 9.2-12.7; ACT 13.2-13.3)


def refused(t: Table, kind: str, words: str, **data: object) -> None:
    before = t.m.to_json(t.state)
    effects = t.send(kind, **data)
    assert kinds(effects) == ["log"] and words in texts(effects), texts(effects)
    assert t.m.to_json(t.state) == before


def nz_player_bank(profile: Profile = Profile.NZ) -> Table:
    t = Table(profile)
    t.send("table.open")
    t.to_shaking(p3=2000)
    t.dice(2, 2, 2)
    t.send("dealer.delivered")
    t.send("dealer.result", hands={"3": {"tiles": BOX3}}, bank_hand={"tiles": BOX5})
    t.send("dealer.bank", box=3, player="p3", funds=RICH)
    return t


def test_nz_one_requested_laja_per_round_by_whom_the_bank_decides() -> None:
    t = at(Profile.NZ, "betting")  # the house is the sole banker: a player asks (NZ 9.2(a))
    refused(t, "dealer.laja", "NZ 9.2(a)", by="banker")
    assert "NZ 9.2(a)" in texts(t.send("dealer.laja", by="player"))
    refused(t, "dealer.laja", "only 1 laja", by="player")  # NZ 9.3
    t.send("dealer.laja", by="dealer", exposed=1)  # NZ 12.1: an irregularity laja, not counted
    assert [x["rule"] for x in t.state.lajas] == ["NZ 9.2(a)", "NZ 12.1"]
    b = nz_player_bank()
    refused(b, "dealer.laja", "NZ 9.2(b)", by="player")
    assert "NZ 9.2(b)" in texts(b.send("dealer.laja", by="banker"))


@pytest.mark.parametrize("profile", [Profile.NSW, Profile.NZ])
def test_a_laja_comes_before_the_cut_is_determined(profile: Profile) -> None:
    # NSW 7.3.2: the bank may perform its own laja "before determining the cut"; NZ 9.2.
    t = nz_player_bank(profile)
    t.send("dealer.cut", cut="Cup Say", options=["right", "top"], by="banker")
    refused(t, "dealer.laja", {Profile.NSW: "NSW 7.3.2", Profile.NZ: "NZ 9.2"}[profile],
            by="banker")


@pytest.mark.parametrize("profile", [Profile.NSW, Profile.NZ])
def test_more_than_two_tiles_exposed_in_a_laja_re_shuffle(profile: Profile) -> None:
    t = at(profile, "betting")
    effects = t.send("dealer.laja", by="dealer", exposed=3)
    rule = {Profile.NSW: "NSW 15.2", Profile.NZ: "NZ 12.2"}[profile]
    assert f"re-shuffle all 32 tiles ({rule})" in texts(effects)
    assert t.state.lajas[0]["reshuffle"] == rule
    t.send("dealer.laja", by="dealer", exposed=2)  # two: no re-shuffle
    assert "reshuffle" not in t.state.lajas[1]
    t.to_shaking(p2=2000)
    t.dice(2, 2, 2)
    t.send("dealer.delivered")
    effects = t.send("dealer.result", hands={"2": WIN["2"]}, bank_hand=LOSE_BANK)
    assert [x["exposed"] for x in first(effects, "round")["summary"]["lajas"]] == [3, 2]


def test_nsw_a_players_laja_needs_approval_and_stops_the_banks_shuffle() -> None:
    t = Table(Profile.NSW)
    t.send("table.open")
    refused(t, "dealer.laja", "NSW 7.3", by="player")  # not approved
    refused(t, "dealer.laja", "its laja is the dealer's", by="banker")  # the house banks
    t.send("dealer.laja", by="player", approved=True)
    refused(t, "dealer.reshuffle", "NSW 7.3.1", by="banker")
    assert [x["rule"] for x in t.state.lajas] == ["NSW 7.3"]


def test_act_has_no_laja_and_re_shuffles_an_exposed_tile() -> None:
    t = at(Profile.ACT, "betting")
    refused(t, "dealer.laja", "ACT 8.6", by="player")
    refused(t, "dealer.laja", "ACT 13.2", by="dealer", exposed=1)
    refused(t, "dealer.reshuffle", "key exposed", by="dealer")
    assert "ACT 13.2" in texts(t.send("dealer.reshuffle", by="dealer", exposed=1))
    assert "ACT 13.3" in texts(t.send("dealer.reshuffle", by="supervisor"))
    refused(t, "dealer.reshuffle", "no re-shuffle", by="banker")


@pytest.mark.parametrize("profile", [Profile.NSW, Profile.NZ])
def test_nsw_nz_an_exposed_stacking_tile_is_a_laja_not_a_re_shuffle(profile: Profile) -> None:
    t = at(profile, "betting")
    refused(t, "dealer.reshuffle", {Profile.NSW: "NSW 15.1", Profile.NZ: "NZ 12.1"}[profile],
            by="dealer", exposed=1)
    rule = {Profile.NSW: "NSW 15.4", Profile.NZ: "NZ 12.7"}[profile]
    assert rule in texts(t.send("dealer.reshuffle", by="supervisor"))


@pytest.mark.parametrize("profile", list(Profile))
def test_no_laja_or_re_shuffle_once_the_tiles_are_dealt(profile: Profile) -> None:
    for phase in ("announced", "setting"):
        t = at(profile, phase)
        refused(t, "dealer.reshuffle", "not accepted", by="supervisor")
        refused(t, "dealer.laja", "not accepted", by="dealer")


def test_the_other_reading_of_the_direction_is_a_table_option() -> None:
    t = Table(Profile.NSW, {"clockwise_delivery": True})
    t.send("table.open")
    t.to_shaking(p2=2000)
    t.dice(1, 2, 2)  # 5 from box 1
    assert [d["position"] for d in t.state.display["delivery"]] == [5, 4, 3, 2, 1, 8, 7, 6]
    assert t.state.display["order"].startswith("CLOCKWISE")


def test_nsw_applies_the_nz_12_17_make_up_only_by_the_tables_option() -> None:
    t = Table(Profile.NSW, {"miscount_make_up": True})
    t.send("table.open")
    t.to_shaking(p3=2000)
    t.dice(2, 2, 2)
    t.send("dealer.delivered")
    t.send("dealer.result", hands={"3": {"tiles": BOX3}}, bank_hand={"tiles": BOX5})
    t.send("dealer.bank", box=3, player="p3", funds=2000)
    t.to_shaking(p2=2000)
    t.dice(2, 2, 2)
    assert "by the table's option" in texts(t.send("dealer.miscount", box=2, player="p2",
                                                   amount=6000))
    t.send("dealer.delivered")
    summary = first(t.send("dealer.result", hands=WIN, bank_hand=LOSE_BANK), "round")["summary"]
    assert summary["make_up"]["shortfall"] == 4000 and summary["make_up"]["house"] == 0
