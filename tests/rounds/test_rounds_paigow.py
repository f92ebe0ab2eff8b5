"""The Pai Gow round machine, transition by transition, each with its rule.

Every step goes through `Table.send`, which also replays it from the state's JSON snapshot.
"""

from __future__ import annotations

import json

import pytest

from controller.games.paigow.houseway import house_way
from controller.games.paigow.outcome import player_outcome
from controller.games.paigow.profiles import Profile
from controller.games.paigow.settings import all_settings, parse_setting
from controller.games.paigow.tiles import parse_tiles
from controller.rounds.base import Event
from tests.support.paigow_table import NOW, Table, at_phase, first, kinds, texts

RICH = 10_000_000
ALL = list(Profile)


def opened(profile: Profile, **config: object) -> Table:
    t = Table(profile, dict(config))
    t.send("table.open")
    return t


def play_house_round(t: Table, **wagers: int) -> None:
    """A full round from betting with the given wagers; every wagered box sets the house way."""
    t.to_shaking(**wagers)
    t.dice(2, 2, 2)
    t.send("dealer.delivered")
    hands = _deal_hands(t)
    t.send("dealer.result", hands={b: h for b, h in hands.items() if b != str(t.state.bank["box"])},
           bank_hand=hands[str(t.state.bank["box"])])
    assert t.phase == "betting", texts([])


def _deal_hands(t: Table) -> dict[str, dict[str, list[str]]]:
    boxes = sorted({w["box"] for w in t.state.wagers} | {t.state.bank["box"]})
    groups = [["6-6", "1-1", "4-4", "1-3"], ["5-5", "3-3", "2-2", "5-6"],
              ["4-6", "1-6", "1-5", "4-5"], ["3-6", "3-5", "2-6", "3-4"],
              ["2-5", "1-4", "2-3", "1-2"], ["2-4", "6-6", "1-1", "4-4"]]
    return {str(b): {"tiles": g} for b, g in zip(boxes, groups, strict=False)}


# -- opening and closing ---------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ALL)
def test_table_open_starts_round_one_with_the_house_on_box_1(profile: Profile) -> None:
    t = Table(profile)
    assert t.status["state"] == "closed" and t.status["awaiting"] == "table.open"
    effects = t.send("table.open")
    assert t.phase == "betting" and t.state.number == 1
    assert t.state.bank["holder"] == "house" and t.state.bank["box"] == 1  # NSW 6.10, NZ 11.1(a)
    assert "display" in kinds(effects)
    assert t.status["round"] == 1 and t.status["game"] == "paigow"


@pytest.mark.parametrize("profile", [Profile.NZ, Profile.ACT])
def test_house_banks_the_first_round_in_nz_and_act(profile: Profile) -> None:
    t = opened(profile)  # NZ 5.2, ACT 6.7
    before = t.m.to_json(t.state)
    effects = t.send("dealer.bank", box=3, player="p3", funds=RICH)
    assert kinds(effects) == ["alarm"] and "not open" in texts(effects)
    assert t.m.to_json(t.state) == before


def test_nsw_player_may_bank_at_the_commencement() -> None:
    t = opened(Profile.NSW)  # NSW 6.6: no previous round needed at commencement
    t.send("dealer.bank", box=3, player="p3", funds=RICH)
    assert t.state.bank == {**t.state.bank, "holder": "player", "box": 3}


def test_close_mid_round_is_refused_and_reopening_keeps_the_round_number() -> None:
    t = opened(Profile.NSW)
    t.to_shaking(p2=1000)
    before = t.m.to_json(t.state)
    assert kinds(t.send("table.close")) == ["alarm"]
    assert t.m.to_json(t.state) == before
    t.send("dealer.void", reason="test")
    assert t.state.number == 2
    t.send("table.close")
    assert t.phase == "closed"
    t.send("table.open")
    assert t.state.number == 2  # round 2 was never played: numbers stay contiguous


# -- wagers ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setup", "wager", "rule"),
    [
        ([], {"box": 1, "player": "a", "amount": 1000}, "NSW 6.10"),
        ([("off.pressed", {"box": 4})], {"box": 4, "player": "a", "amount": 1000}, "NSW 15.9"),
        ([("dealer.bank", {"box": 3, "player": "b", "funds": RICH})],
         {"box": 3, "player": "a", "amount": 1000}, "NSW 9.16"),
        ([("dealer.wager", {"box": 5, "player": n, "amount": 1000}) for n in "xyz"],
         {"box": 5, "player": "a", "amount": 1000}, "NSW 9.9"),
        ([], {"box": 2, "player": "a", "amount": 1050}, "chips"),
        ([], {"box": 9, "player": "a", "amount": 1000}, "outside 1..8"),
        ([], {"box": 2, "player": "a", "amount": -5}, "positive"),
    ],
)
def test_wagers_refused_name_the_rule(setup: list, wager: dict, rule: str) -> None:
    t = opened(Profile.NSW)
    for kind, data in setup:
        t.send(kind, **data)
    before = t.m.to_json(t.state)
    effects = t.send("dealer.wager", **wager)
    assert kinds(effects) == ["log"] and rule in texts(effects)
    assert t.m.to_json(t.state) == before


def test_nz_wager_not_payable_exactly_in_chips_is_refused() -> None:
    t = opened(Profile.NZ)  # 5% of 1000 c is 50 c: no chip pays it (NZ 6.12)
    assert "NZ 6.12" in texts(t.send("dealer.wager", box=2, player="a", amount=1000))
    t.send("dealer.wager", box=2, player="a", amount=2000)
    assert t.state.wagers == [{"box": 2, "player": "a", "amount": 2000, "seated": False,
                               "distance_to_dealer": 0}]


@pytest.mark.parametrize(("profile", "rule"), [
    (Profile.ACT, "ACT 7.1"), (Profile.NSW, "NSW 9.6-9.7"), (Profile.NZ, "NZ 9.4")])
def test_wagers_lock_at_no_more_bets(profile: Profile, rule: str) -> None:
    # NSW 9.6-9.7: placed after the shuffle and before the dice; none after, when the House banks.
    t = opened(profile)
    t.to_shaking(p2=2000)
    effects = t.send("dealer.wager", box=3, player="p3", amount=2000)
    assert rule in texts(effects) and len(t.state.wagers) == 1


# -- no more bets, dice, announcement ----------------------------------------------------------


@pytest.mark.parametrize("profile", [Profile.NSW, Profile.ACT])
def test_no_more_bets_shakes_the_dice(profile: Profile) -> None:
    t = opened(profile)
    effects = t.send("dealer.no_more_bets")
    assert t.phase == "shaking" and t.status["awaiting"] == "shaker"
    shake = [e.data for e in effects if e.kind == "device"]
    assert shake == [{"device": "shaker", "command": "shake", "args": {}}]
    assert {"mode": "announce", "text": "NO MORE BETS"} in [e.data for e in effects]


@pytest.mark.parametrize("profile", ALL)
def test_a_die_not_flat_means_shake_again(profile: Profile) -> None:
    t = opened(profile)
    t.to_shaking()
    effects = t.send("dice.not_flat")  # NSW 8.3, NZ 9.8, ACT 13.1
    assert "device" in kinds(effects) and t.phase == "shaking" and t.state.reshakes == 1
    effects = t.send("dice.result", box_dice=[3, "not_flat", 2], cut_die=None)
    assert "device" in kinds(effects) and t.state.reshakes == 2
    t.dice(1, 2, 3)
    assert t.phase == "announced" and t.status["reshakes"] == 2


def test_nsw_cut_die_counts_too() -> None:
    t = opened(Profile.NSW)
    t.to_shaking()
    t.send("dice.result", box_dice=[1, 2, 3], cut_die="not_flat")  # NSW 8.3: all four dice
    assert t.phase == "shaking" and t.state.reshakes == 1


def test_house_bank_first_box_and_cut_die_nsw() -> None:
    t = opened(Profile.NSW)
    t.to_shaking(p2=1000)
    effects = t.dice(1, 2, 3, cut_die=3)
    # NSW 8.4.1: box 1 (the house's chung) counts as 1: total 6 -> box 6. Appendix 4: 3 = Cup Say.
    assert t.state.first_box == 6
    assert t.state.cut == {"cut": "Cup Say", "options": None, "source": "cut die"}
    display = first(effects, "display")
    assert display["text"] == "FIRST BOX 6 / CUT TIGER" and t.state.display == display


def test_nsw_cut_die_missing_when_needed_is_an_alarm() -> None:
    t = opened(Profile.NSW)
    t.to_shaking()
    before = t.m.to_json(t.state)
    effects = t.send("dice.result", box_dice=[1, 2, 3], cut_die=None)
    assert kinds(effects) == ["alarm"] and "NSW 8.4.3" in texts(effects)
    assert t.m.to_json(t.state) == before
    assert "device" in kinds(t.send("dealer.shake"))


def test_player_banker_nominates_the_cut_and_steals_nsw() -> None:
    t = opened(Profile.NSW)
    t.send("dealer.bank", box=3, player="p3", funds=RICH)
    t.send("dealer.cut", cut="Dai Pin", options=["left"])  # NSW 8.4.3
    t.send("dealer.steal", value=2)  # NSW 8.2
    t.to_shaking(p5=1000)
    t.dice(3, 3, 4, cut_die=6)
    # chung box 3 counts as 1; total 10 + 2 = 12 -> box 3 + 11 positions = box 6 (8-cycle).
    assert t.state.first_box == 6
    assert t.state.cut == {"cut": "Dai Pin", "options": ["left"], "source": "player/banker"}
    assert t.state.display["text"] == "FIRST BOX 6 / CUT BIG SLICE LEFT"


def test_house_may_not_steal_or_nominate() -> None:
    t = opened(Profile.NSW)
    assert "not allowed" in texts(t.send("dealer.steal", value=1))
    assert "only a player/banker" in texts(t.send("dealer.cut", cut="Dai Pin", options=["left"]))
    assert t.state.steal == 0 and t.state.cut_choice is None


def test_act_house_uses_the_house_way_cut() -> None:
    t = opened(Profile.ACT)
    t.to_shaking(p2=1000)
    t.dice(6, 6, 6)  # total 18 -> box 2 (counted 1, 9, 17 from box 1)
    assert t.state.first_box == 2
    assert t.state.cut == {"cut": "Yat Dong Dong", "options": None, "source": "house way"}


def test_nz_random_cut_enters_as_an_event() -> None:
    t = opened(Profile.NZ)
    effects = t.send("dealer.no_more_bets")
    assert t.phase == "cutting" and t.status["awaiting"] == "cut.selected"  # NZ 9.3A(c)
    request = first(effects, "device")
    assert request["device"] == "rng" and request["command"] == "select_cut"
    assert [e.data for e in t.m.resume(t.state) if e.kind == "device"] == [request]
    bad = t.send("cut.selected", cut="Cup Say", options=["right"])  # Tiger needs two options
    assert kinds(bad) == ["log"] and t.phase == "cutting"
    assert "device" in kinds(t.send("cut.selected", cut="Cup Say", options=["top", "left"]))
    t.dice(1, 1, 1)
    assert t.state.cut == {"cut": "Cup Say", "options": ["left", "top"],
                           "source": "random selection"}


def test_nz_approved_cuts_restrict_the_random_selection() -> None:
    from controller.games.paigow.cuts import Cut

    t = opened(Profile.NZ, approved_cuts=(Cut.CHINA_BANK,))
    t.send("dealer.no_more_bets")
    assert "not approved" in texts(t.send("cut.selected", cut="Cup Say", options=["top", "left"]))
    t.send("cut.selected", cut="China Bank", options=[])
    assert t.phase == "shaking"


def test_nz_supervisor_cut_skips_the_random_selection() -> None:
    t = opened(Profile.NZ)
    t.send("dealer.cut", cut="Pong Yun", options=["right"], by="supervisor")  # NZ 9.3A(b)
    t.send("dealer.no_more_bets")
    assert t.phase == "shaking"
    t.dice(2, 2, 2)
    assert t.state.cut["source"] == "game supervisor"


def test_shaker_fault_waits_for_the_dealer() -> None:
    t = opened(Profile.NSW)
    t.to_shaking()
    effects = t.send("shaker.fault", reason="cover open")
    assert kinds(effects) == ["alarm"] and t.phase == "shaking"
    assert t.status["awaiting"] == "dealer"
    assert "device" not in kinds(t.m.resume(t.state))  # no shake re-issued into a fault
    assert "device" in kinds(t.send("dealer.shake"))
    assert t.status["awaiting"] == "shaker" and "device" in kinds(t.m.resume(t.state))


# -- delivery, result, settlement ----------------------------------------------------------------


def test_completed_round_records_outcomes_and_settlement() -> None:
    t = opened(Profile.NSW)
    t.to_shaking(p2=5000, p4=3000)
    t.dice(2, 2, 2)
    t.send("dealer.delivered")
    assert t.phase == "setting"
    bank = {"tiles": ["4-4", "4-4", "1-3", "1-3"]}
    effects = t.send("dealer.result", hands={"2": "6-6 6-6 / 1-1 1-1",
                                             "4": {"tiles": ["2-4", "1-2", "3-5", "2-6"]}},
                     bank_hand=bank)
    rec = first(effects, "round")
    out = first(effects, "outbox")
    assert rec["number"] == 1 and rec["status"] == "completed"
    assert out == {"type": "round_result", "payload": rec["summary"]}
    summary = rec["summary"]
    banker = house_way(parse_tiles(bank["tiles"]), Profile.NSW)
    # Box 4 gave its tiles: the dealer set them the House way at the player's request (NSW 12.6).
    p4 = house_way(parse_tiles(["2-4", "1-2", "3-5", "2-6"]), Profile.NSW)
    assert summary["outcomes"] == {
        "2": player_outcome(parse_setting("6-6 6-6 / 1-1 1-1"), banker, Profile.NSW).value,
        "4": player_outcome(p4, banker, Profile.NSW).value,
    }
    s = summary["settlement"]
    assert s["conserved"] and s["players_net"] + s["banker_net"] + s["house_net"] == 0
    row2 = next(r for r in s["results"] if r["box"] == 2)
    # 5% of 5000 c is 250 c; 100 c chips collect 200 c (NSW 14.1, 14.3).
    assert row2["outcome"] == "win" and row2["commission"] == 200 and row2["net"] == 4800
    assert t.phase == "betting" and t.state.number == 2 and t.state.wagers == []
    assert t.state.bank["rounds_played"] == 1


def test_result_without_wagers_gives_outcomes_only() -> None:
    t = opened(Profile.ACT)
    t.to_shaking()
    t.dice(1, 1, 1)
    t.send("dealer.delivered")
    effects = t.send("dealer.result", hands={"5": {"tiles": ["6-6", "1-1", "4-4", "1-3"]}},
                     bank_hand="5-5 3-3 / 2-2 5-6")
    summary = first(effects, "round")["summary"]
    assert summary["settlement"] is None and set(summary["outcomes"]) == {"5"}
    # Box 5 gave its tiles: set the House way at the player's request (ACT 10.5).
    p5 = house_way(parse_tiles(["6-6", "1-1", "4-4", "1-3"]), Profile.ACT)
    bank = parse_setting("5-5 3-3 / 2-2 5-6")
    assert summary["outcomes"]["5"] == player_outcome(p5, bank, Profile.ACT).value


def _to_setting(profile: Profile, **wagers: int) -> Table:
    t = opened(profile)
    t.to_shaking(**wagers)
    t.dice(1, 2, 4)
    t.send("dealer.delivered")
    return t


@pytest.mark.parametrize(
    ("hands", "bank", "needle"),
    [
        ({"2": "6-6 6-6 / 1-1 1-1", "3": "6-6 4-4 / 1-1 2-2"}, "5-5 3-3 / 2-2 5-6",
         "appears 3 times"),  # one set of 32 tiles (NSW 3.1, 15.17)
        ({"2": "6-6 6-6 / 1-1 1-1"}, "5-5 3-3 / 2-2 5-6", "no hand"),
        ({"2": "6-6 6-6 / 1-1 1-1", "3": "4-4 4-4 / 1-3 1-3", "5": "2-2 2-2 / 3-3 3-3"},
         "5-5 5-5 / 5-6 5-6", "no wager"),  # NSW 12.3
        ({"2": "6-6 6-6 / 1-1 1-1", "3": "4-4 4-4 / 1-3 1-3"}, {"conceded": True}, "concede"),
        ({"2": "1-1 1-1 / 6-6 6-6", "3": "4-4 4-4 / 1-3 1-3"}, "5-5 3-3 / 2-2 5-6",
         "outranks"),
        ({"2": {"conceded": True}, "3": "4-4 4-4 / 1-3 1-3"}, "5-5 3-3 / 2-2 5-6", "NSW 12.17"),
    ],
)
def test_bad_results_are_refused_unchanged(hands: dict, bank: object, needle: str) -> None:
    t = _to_setting(Profile.NSW, p2=1000, p3=1000)
    t.send("dealer.wager", box=2, player="x", amount=1000)  # locked: stays two wagers
    if needle == "NSW 12.17":
        t = opened(Profile.NSW)
        t.send("dealer.wager", box=2, player="x", amount=1000)
        t.to_shaking(p2=1000, p3=1000)
        t.dice(1, 2, 4)
        t.send("dealer.delivered")
    before = t.m.to_json(t.state)
    effects = t.send("dealer.result", hands=hands, bank_hand=bank)
    assert kinds(effects) == ["alarm"] and needle in texts(effects), texts(effects)
    assert t.m.to_json(t.state) == before


def test_act_has_no_concession() -> None:
    t = _to_setting(Profile.ACT, p2=1000)
    effects = t.send("dealer.result", hands={"2": {"conceded": True}},
                     bank_hand="5-5 3-3 / 2-2 5-6")
    assert kinds(effects) == ["alarm"] and t.phase == "setting"


def test_nsw_concession_loses_the_wager() -> None:
    t = _to_setting(Profile.NSW, p2=1000)  # NSW 12.17
    effects = t.send("dealer.result", hands={"2": {"conceded": True}},
                     bank_hand={"tiles": ["5-5", "3-3", "2-2", "5-6"]})
    summary = first(effects, "round")["summary"]
    assert summary["outcomes"] == {"2": "lose"}
    assert summary["settlement"]["results"][0]["net"] == -1000


def _not_house_way(profile: Profile, tiles: list[str]) -> str:
    proper = house_way(parse_tiles(tiles), profile)
    other = next(s for s in all_settings(parse_tiles(tiles)) if str(s) != str(proper))
    return str(other)


@pytest.mark.parametrize(("profile", "stands"), [(Profile.NSW, True), (Profile.ACT, False)])
def test_house_hand_not_set_the_house_way(profile: Profile, stands: bool) -> None:
    tiles = ["6-6", "4-5", "3-3", "1-2"]
    wrong = _not_house_way(profile, tiles)
    t = _to_setting(profile, p2=1000)
    effects = t.send("dealer.result", hands={"2": "4-4 1-1 / 1-3 2-2"}, bank_hand=wrong)
    rule = "NSW 15.7" if stands else "ACT 13.8"
    assert "alarm" in kinds(effects) and rule in texts(effects)
    summary = first(effects, "round")["summary"]
    expected = parse_setting(wrong) if stands else house_way(parse_tiles(tiles), profile)
    assert summary["bank_hand"] == expected.as_json()


# -- void rounds (NSW 15.12, NZ 12.13, ACT 13.9) ---------------------------------------------------


VOID_RULES = {Profile.NSW: "NSW 15.12", Profile.NZ: "NZ 12.13", Profile.ACT: "ACT 13.9"}


@pytest.mark.parametrize(
    ("profile", "stage"),
    [(p, s) for p in ALL for s in ("cutting", "shaking", "announced", "setting")
     if s != "cutting" or p is Profile.NZ],  # only NZ waits for a cut after no more bets
)
def test_void_returns_all_wagers_and_opens_the_next_round(profile: Profile, stage: str) -> None:
    rule = VOID_RULES[profile]
    t = opened(profile)
    t.send("dealer.wager", box=2, player="p2", amount=2000)
    t.send("dealer.no_more_bets")
    if stage != "cutting" and t.phase == "cutting":
        t.send("cut.selected", cut="China Bank", options=[])
    if stage in ("announced", "setting"):
        t.dice(4, 5, 6)
    if stage == "setting":
        t.send("dealer.delivered")
    assert t.phase == stage
    bank_before = dict(t.state.bank)
    effects = t.send("dealer.void", reason="tiles to the wrong boxes")
    rec = first(effects, "round")
    assert rec["status"] == "voided" and rec["number"] == 1
    assert rec["summary"]["rule"] == rule
    assert rec["summary"]["returned"] == [{"box": 2, "player": "p2", "amount": 2000,
                                           "seated": False, "distance_to_dealer": 0}]
    assert "outbox" in kinds(effects) and "re-shuffle all 32 tiles" in texts(effects)
    assert t.phase == "betting" and t.state.number == 2
    # A void round has no result, so it is not counted for the bank ("void", NSW 1.1).
    assert t.state.bank == bank_before


def test_void_refused_before_no_more_bets_and_tile_void_is_nsw_only() -> None:
    t = opened(Profile.NSW)
    assert kinds(t.send("dealer.void")) == ["log"] and t.phase == "betting"
    t.to_shaking()
    effects = t.send("dealer.void", kind="tile", reason="foreign tile found")
    assert first(effects, "round")["summary"]["rule"] == "NSW 15.17.2"
    n = opened(Profile.NZ)
    n.to_shaking()
    assert kinds(n.send("dealer.void", kind="tile")) == ["log"] and n.phase == "shaking"


# -- OFF boxes and the OFF draw (NSW 15.9, NZ 12.9-12.11) -------------------------------------


@pytest.mark.parametrize("profile", [Profile.NSW, Profile.NZ])
def test_off_draw_rerolls_on_the_house_box(profile: Profile) -> None:
    t = opened(profile)
    t.send("dealer.wager", box=5, player="p5", amount=2000)
    effects = t.send("dealer.off_draw")
    assert t.phase == "off_draw" and "device" in kinds(effects)
    effects = t.dice(3, 3, 3)  # 9 counted from box 1 is box 1, the house: roll again
    assert t.phase == "off_draw" and "device" in kinds(effects) and t.state.off_rolls == [9]
    effects = t.dice(1, 1, 3)  # 5 -> box 5
    assert t.phase == "betting" and t.state.off_boxes == [5]
    assert {"mode": "announce", "text": "BOX 5 OFF", "box": 5} in [e.data for e in effects]
    assert t.state.wagers == []  # the wager on the removed box went back
    assert (profile is Profile.NSW) == ("NSW 15.9.2" in texts(effects))
    assert 5 not in t.status["open_boxes"]
    t.send("off.released", box=5)  # NSW 15.9.5, NZ 12.11
    assert t.state.off_boxes == [] and 5 in t.status["open_boxes"]


def test_off_draw_refusals() -> None:
    act = opened(Profile.ACT)
    assert "act" in texts(act.send("dealer.off_draw")) and act.phase == "betting"
    nsw = opened(Profile.NSW)
    nsw.send("off.pressed", box=4)
    assert "NSW 15.9.1" in texts(nsw.send("dealer.off_draw"))  # all playing areas in play
    nsw.send("dealer.off_clear")
    nsw.send("dealer.bank", box=3, player="p3", funds=RICH)
    assert "NSW 15.9.1" in texts(nsw.send("dealer.off_draw"))  # the House must be banking
    assert nsw.phase == "betting"


def test_off_button_on_the_bank_box_is_refused() -> None:
    t = opened(Profile.NSW)
    effects = t.send("off.pressed", box=1)
    assert kinds(effects) == ["alarm"] and t.state.off_boxes == []


def test_off_draw_can_be_cancelled_and_nz_co_bank_box_is_the_house_box() -> None:
    t = opened(Profile.NZ)
    t.send("dealer.off_draw")
    t.send("dealer.off_cancel")
    assert t.phase == "betting"
    play_house_round(t, p4=2000)
    t.send("dealer.bank", box=4, holder="co-bank", player="p4", funds=RICH)
    t.send("dealer.off_draw")  # NZ 12.9(b): house banking with a co-banker
    t.dice(1, 1, 2)  # 4 -> box 4, the co-banker's box holding the bank's hand: roll again
    assert t.phase == "off_draw"
    t.dice(3, 3, 3)  # 9 -> box 1, an ordinary box under a co-bank
    assert t.state.off_boxes == [1]


# -- bank rotation and round limits (NSW 6, NZ 5, ACT 6) --------------------------------------


def _banked_rounds(t: Table) -> list[tuple[str, int]]:
    return [(r["summary"]["banker"]["holder"], r["summary"]["banker"]["box"]) for r in t.rounds]


@pytest.mark.parametrize("profile", ALL)
def test_a_bank_lasts_two_rounds_then_rotates(profile: Profile) -> None:
    t = opened(profile)
    play_house_round(t, p3=2000, p5=2000)
    t.send("dealer.bank", box=3, player="p3", funds=RICH)
    assert t.state.bank["holder"] == "player"
    play_house_round(t, p5=2000)
    effects = t.send("dealer.bank", box=5, player="p5", funds=RICH)  # mid-bank: not open
    assert kinds(effects) == ["alarm"]
    play_house_round(t, p5=2000)
    effects = t.send("dealer.bank", box=3, player="p3", funds=RICH)  # a third round: refused
    assert kinds(effects) == ["alarm"] and "round" in texts(effects).lower()
    assert t.status["bank_offer"] == [5]
    effects = t.send("dealer.no_more_bets")  # nobody took it: the house banks
    rule = {Profile.NSW: "NSW 6.9", Profile.NZ: "NZ 5.6", Profile.ACT: "ACT 6.8"}[profile]
    assert t.state.bank["holder"] == "house" and rule in texts(effects)
    assert _banked_rounds(t) == [("house", 1), ("player", 3), ("player", 3)]


def test_a_void_house_round_does_not_split_a_finished_bank() -> None:
    t = opened(Profile.ACT)
    play_house_round(t, p3=2000, p5=2000)
    t.send("dealer.bank", box=3, player="p3", funds=RICH)
    play_house_round(t, p5=2000)
    play_house_round(t, p5=2000)
    t.send("dealer.no_more_bets")  # nobody took the finished bank: the house banks (ACT 6.8)
    assert t.state.bank["holder"] == "house"
    t.send("dealer.void", reason="wrong delivery")  # ACT 13.9: no round of play
    assert t.state.bank["holder"] == "player" and t.state.bank["rounds_in_bank"] == 2
    effects = t.send("dealer.bank", box=3, player="p3", funds=RICH)
    assert kinds(effects) == ["alarm"] and "ACT 6.7" in texts(effects)


def test_a_bank_taken_in_a_void_round_is_kept() -> None:
    t = opened(Profile.NSW)
    t.send("dealer.bank", box=3, player="p3", funds=RICH)
    t.to_shaking(p5=1000)
    t.send("dealer.void")
    assert (t.state.bank["holder"], t.state.bank["rounds_in_bank"]) == ("player", 0)
    assert t.state.banker == {"player": "p3", "funds": None}


def test_nsw_house_may_allow_a_second_bank_on_the_area() -> None:
    t = opened(Profile.NSW, max_banks_per_box=2)  # NSW 6.7
    t.send("dealer.bank", box=3, player="p3", funds=RICH)
    play_house_round(t, p5=1000)
    play_house_round(t, p5=1000)
    assert t.status["bank_offer"][0] == 3  # the holder's area first
    t.send("dealer.bank", box=3, player="p3", funds=RICH)
    assert t.state.bank["banks_on_box"] == 2
    play_house_round(t, p5=1000)
    play_house_round(t, p5=1000)
    assert "round" in texts(t.send("dealer.bank", box=3, player="p3", funds=RICH)).lower()
    assert [h for h, _ in _banked_rounds(t)] == ["player"] * 4


def test_giving_up_the_bank_does_not_reset_its_round_limit() -> None:
    t = opened(Profile.NSW)
    t.send("dealer.bank", box=3, player="p3", funds=RICH)
    play_house_round(t, p5=1000)
    play_house_round(t, p5=1000)
    t.send("dealer.house_bank")
    effects = t.send("dealer.bank", box=3, player="p3", funds=RICH)
    assert kinds(effects) == ["alarm"] and t.state.bank["holder"] == "house"


def test_bank_refusals_name_the_rule() -> None:
    t = opened(Profile.NZ)
    play_house_round(t, p3=2000)
    effects = t.send("dealer.bank", box=5, player="p5", funds=RICH)
    assert "NZ 5.3(a)" in texts(effects)  # did not play the previous round
    t.send("dealer.wager", box=2, player="p2", amount=10_000)
    effects = t.send("dealer.bank", box=3, player="p3", funds=4000, holder="co-bank")
    assert "NZ 5.3(c)" in texts(effects)  # 4000 c cover less than 50% of 10000 c
    t.send("dealer.bank", box=3, player="p3", funds=5000, holder="co-bank")
    assert t.state.bank["holder"] == "co-bank"


def test_banker_who_cannot_cover_at_no_more_bets_hands_the_bank_to_the_house() -> None:
    t = opened(Profile.NSW)
    t.send("dealer.bank", box=3, player="p3", funds=5000)
    t.send("dealer.wager", box=1, player="p1", amount=2000)  # box 1 is a player box now
    t.send("dealer.wager", box=6, player="p6", amount=4000)
    effects = t.send("dealer.no_more_bets")
    assert "NSW 13.2.2" in texts(effects) and t.state.bank["holder"] == "house"
    assert [w["box"] for w in t.state.wagers] == [6]  # box 1 holds the house's tiles again


def test_player_bank_settles_against_the_banker() -> None:
    t = opened(Profile.NSW)
    t.send("dealer.bank", box=3, player="p3", funds=RICH)
    t.to_shaking(p5=2000)
    t.dice(1, 1, 1)
    t.send("dealer.delivered")
    effects = t.send("dealer.result", hands={"5": "5-5 3-3 / 4-4 1-3"},
                     bank_hand="6-6 6-6 / 1-1 1-1")
    s = first(effects, "round")["summary"]["settlement"]
    # The bank wins 2000 c: the player/banker nets 2000 - 5% (NSW 14.2); the house the 100 c.
    assert (s["players_net"], s["banker_net"], s["house_net"]) == (-2000, 1900, 100)


def test_chung_sensor_moves_the_bank() -> None:
    t = opened(Profile.NSW)
    t.send("chung.on", box=4)
    assert (t.state.bank["holder"], t.state.bank["box"]) == ("player", 4)
    t.send("chung.off", box=4)
    assert t.state.bank["holder"] == "house"
    t.send("chung.on", box=4)
    t.send("chung.on", box=1)  # the house chung back on box 1
    assert t.state.bank["holder"] == "house"


# -- invalid events in every state leave it unchanged ------------------------------------------


def _at(phase: str) -> Table:
    return at_phase(Profile.NZ if phase == "cutting" else Profile.NSW, phase, wager=1000)


INVALID = {
    "closed": ["dealer.wager", "dealer.no_more_bets", "dice.result", "dealer.result",
               "dealer.void", "dealer.delivered", "table.close", "dealer.off_draw"],
    "betting": ["table.open", "dice.result", "dice.not_flat", "dealer.delivered",
                "dealer.result", "dealer.void", "cut.selected", "dealer.shake"],
    "off_draw": ["dealer.wager", "dealer.no_more_bets", "dealer.result", "dealer.void",
                 "dealer.bank"],
    "cutting": ["dealer.wager", "dice.result", "dealer.delivered", "dealer.no_more_bets",
                "table.close", "dealer.bank"],
    "shaking": ["dealer.wager", "dealer.no_more_bets", "dealer.delivered", "dealer.result",
                "table.close", "table.open", "dealer.bank", "dealer.house_bank"],
    "announced": ["dice.result", "dice.not_flat", "dealer.result", "dealer.no_more_bets",
                  "dealer.wager", "dealer.steal", "dealer.cut", "cut.selected"],
    "setting": ["dice.result", "dealer.delivered", "dealer.wager", "dealer.steal",
                "dealer.off_draw", "dealer.wager_remove"],
}
DATA = {
    "dealer.wager": {"box": 2, "player": "z", "amount": 1000},
    "dice.result": {"box_dice": [1, 2, 3], "cut_die": 1},
    "dealer.result": {"hands": {}, "bank_hand": "6-6 6-6 / 1-1 1-1"},
    "dealer.bank": {"box": 3, "player": "p3", "funds": RICH},
    "cut.selected": {"cut": "China Bank", "options": []},
    "dealer.steal": {"value": 1},
    "dealer.cut": {"cut": "China Bank", "options": []},
    "dealer.wager_remove": {"box": 2, "player": "p2"},
}


@pytest.mark.parametrize(("phase", "kind"), [(p, k) for p, ks in INVALID.items() for k in ks])
def test_invalid_event_leaves_the_state_unchanged(phase: str, kind: str) -> None:
    t = _at(phase)
    before = t.m.to_json(t.state)
    effects = t.send(kind, **DATA.get(kind, {}))
    assert effects and set(kinds(effects)) <= {"log", "alarm"}, (kind, texts(effects))
    assert t.m.to_json(t.state) == before


@pytest.mark.parametrize("data", [
    {"box_dice": [7, 1, 1]}, {"box_dice": "123"}, {"box_dice": [1, 2]},
    {"box_dice": [True, 1, 1]}, {"box_dice": [1, 2, 3], "cut_die": 0},
])
def test_unreadable_dice_are_an_alarm(data: dict) -> None:
    t = _at("shaking")
    before = t.m.to_json(t.state)
    assert kinds(t.send("dice.result", **data)) == ["alarm"]
    assert t.m.to_json(t.state) == before


def test_cut_die_outside_nsw_is_refused() -> None:
    t = opened(Profile.ACT)
    t.to_shaking()
    assert kinds(t.send("dice.result", box_dice=[1, 2, 3], cut_die=4)) == ["alarm"]
    assert t.phase == "shaking"


def test_unknown_and_malformed_events() -> None:
    t = _at("betting")
    before = t.m.to_json(t.state)
    state, effects = t.m.step(t.state, Event("bogus.kind", {}), NOW)
    assert kinds(effects) == ["log"] and t.m.to_json(state) == before
    state, effects = t.m.step(t.state, Event("dealer.wager", [1, 2]), NOW)  # type: ignore[arg-type]
    assert kinds(effects) == ["log"] and t.m.to_json(state) == before
    state, effects = t.m.step(t.state, Event("tick", {}), NOW)
    assert effects == [] and state == t.state


# -- status, resume, snapshots -------------------------------------------------------------------


def test_status_and_resume_re_issue_the_pending_shake_and_display() -> None:
    t = _at("shaking")
    st = t.status
    for key in ("game", "rules", "state", "round", "banker", "off_boxes", "awaiting"):
        assert key in st
    json.dumps(st)
    resumed = t.m.resume(t.state)
    assert {"device": "shaker", "command": "shake", "args": {}} in [e.data for e in resumed]
    assert resumed[0].data == t.state.display


def test_from_json_refuses_a_foreign_snapshot() -> None:
    from shared.errors import InputError

    m = Table(Profile.NSW).m
    with pytest.raises(InputError):
        m.from_json({"phase": "betting"})
    with pytest.raises(InputError):
        m.from_json({**m.to_json(m.initial()), "phase": "dancing"})
