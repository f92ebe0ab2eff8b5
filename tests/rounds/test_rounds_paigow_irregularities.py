"""Pai Gow irregularities through the round machine, each with its profile's clause (issue 13;
seeds 000 NSW, 002 + 004 NZ, 003 ACT)."""

from __future__ import annotations

import pytest

from controller.events import Event, Now
from controller.games.paigow.profiles import Profile
from controller.rounds.paigow import PaiGowConfig, PaiGowMachine
from controller.rounds.paigow.state import state_from_json
from tests.support.paigow_table import Table, first, kinds, texts

RICH = 10_000_000
HAND_RULE = {Profile.NSW: "NSW 15.3.1", Profile.NZ: "NZ 12.3(a)", Profile.ACT: "ACT 13.7"}


def banked(profile: Profile) -> Table:
    """p3 played a house round on box 3 (NZ 5.2, ACT 6.7: the house banks the first round),
    then takes the bank on box 3; p2 wagers; the dice are announced."""
    t = Table(profile)
    t.send("table.open")
    t.to_shaking(p3=2000)
    t.dice(2, 2, 2)
    t.send("dealer.delivered")
    t.send("dealer.result", hands={"3": {"tiles": ["6-6", "1-1", "4-4", "1-3"]}},
           bank_hand={"tiles": ["5-5", "3-3", "2-2", "5-6"]})
    t.send("dealer.bank", box=3, player="p3", funds=RICH)
    assert t.state.bank["box"] == 3 and t.state.bank["holder"] == "player"
    t.to_shaking(p2=2000)
    t.dice(2, 2, 2)
    assert t.phase == "announced"
    return t


def announced(profile: Profile, **wagers: int) -> Table:
    t = Table(profile)
    t.send("table.open")
    t.to_shaking(**wagers)
    t.dice(2, 2, 2)
    assert t.phase == "announced"
    return t


@pytest.mark.parametrize("profile", list(Profile))
def test_a_player_calls_their_hand_void_after_two_exposed_tiles(profile: Profile) -> None:
    t = announced(profile, p2=2000, p4=4000)
    effects = t.send("dealer.hand_void", box=4, exposed=2)
    assert HAND_RULE[profile] in texts(effects) and t.phase == "announced"
    assert [w["box"] for w in t.state.wagers] == [2]  # box 4's wager goes back
    t.send("dealer.delivered")
    effects = t.send("dealer.result", hands={"2": "6-6 6-6 / 1-1 1-1"},
                     bank_hand={"tiles": ["4-4", "4-4", "1-3", "1-3"]})
    summary = first(effects, "round")["summary"]
    assert summary["void_hands"] == [{
        "box": 4, "exposed": 2, "rule": HAND_RULE[profile],
        "returned": [{"box": 4, "player": "p4", "amount": 4000, "seated": False,
                      "distance_to_dealer": 0}],
    }]
    assert set(summary["outcomes"]) == {"2"}  # the void hand is not settled
    assert t.state.void_hands == []  # the next round starts clean


@pytest.mark.parametrize("profile", list(Profile))
def test_one_exposed_tile_the_hand_is_played(profile: Profile) -> None:
    # NZ 12.4, ACT 13.6: one exposed tile, the hand is played (NSW: two or more, 15.3).
    t = announced(profile, p2=2000)
    before = t.m.to_json(t.state)
    effects = t.send("dealer.hand_void", box=2, exposed=1)
    assert kinds(effects) == ["log"] and "played" in texts(effects)
    assert t.m.to_json(t.state) == before


@pytest.mark.parametrize("profile", list(Profile))
def test_tiles_exposed_in_the_houses_hand_it_is_played(profile: Profile) -> None:
    t = announced(profile, p2=2000)
    rule = {Profile.NSW: "NSW 15.5", Profile.NZ: "NZ 12.5", Profile.ACT: "ACT 13.4"}[profile]
    effects = t.send("dealer.hand_void", box=1, exposed=3)
    assert rule in texts(effects) and t.phase == "announced"


@pytest.mark.parametrize(("profile", "rule"),
                         [(Profile.NSW, "NSW 15.3.2"), (Profile.NZ, "NZ 12.3(b)")])
def test_the_player_banker_calling_their_hand_void_voids_the_round(
    profile: Profile, rule: str
) -> None:
    t = banked(profile)
    effects = t.send("dealer.hand_void", box=3, exposed=2)
    rec = first(effects, "round")
    assert rec["status"] == "voided" and rec["summary"]["rule"] == rule
    assert t.phase == "betting" and t.state.number == 3


def test_act_gives_the_player_banker_no_such_option() -> None:
    t = banked(Profile.ACT)
    before = t.m.to_json(t.state)
    effects = t.send("dealer.hand_void", box=3, exposed=2)
    assert "ACT 13.7" in texts(effects) and t.m.to_json(t.state) == before


def test_a_hand_is_called_void_only_between_the_deal_and_the_result() -> None:
    t = Table(Profile.NSW)
    t.send("table.open")
    effects = t.send("dealer.hand_void", box=2, exposed=2)
    assert "not accepted in state betting" in texts(effects)


def test_a_bug_in_a_step_is_journaled_with_an_alarm_and_the_round_kept() -> None:
    # Both machines alike (issue 13): the event is answered, an alarm raised, the state kept.
    m = PaiGowMachine(PaiGowConfig(Profile.NSW))
    state = m.initial()

    def broken(*_: object) -> None:
        raise KeyError("bug")

    m.routes["table.open"] = type(m.routes["table.open"])(broken, m.routes["table.open"].phases)
    after, effects = m.step(state, Event("table.open"), Now("2026-11-26T08:00:00Z", 0))
    assert after == state
    assert [(e.kind, e.data["severity"]) for e in effects] == [("alarm", "technician")]
    assert "internal error KeyError" in effects[0].data["text"]


def test_snapshots_of_ordinary_play_keep_their_fields_and_old_ones_load() -> None:
    t = announced(Profile.NZ, p2=2000)
    snap = t.m.to_json(t.state)
    assert "void_hands" not in snap
    assert state_from_json(snap) == t.state


# -- a wrong distribution (NSW 15.11-15.13, NZ 12.13, ACT 13.9) ---------------------------------
def test_nsw_a_reconstructed_or_handled_wrong_distribution_goes_on() -> None:
    for flag, rule in [("reconstructed", "NSW 15.11"), ("handled", "NSW 15.13")]:
        t = announced(Profile.NSW, p2=2000)
        before = t.m.to_json(t.state)
        effects = t.send("dealer.void", kind="distribution", **{flag: True})
        assert rule in texts(effects) and not [e for e in effects if e.kind == "round"]
        assert t.m.to_json(t.state) == before
    t = announced(Profile.NSW, p2=2000)  # neither: reconstruction impossible (NSW 15.12)
    assert first(t.send("dealer.void", kind="distribution"), "round")["summary"]["rule"] == (
        "NSW 15.12")


@pytest.mark.parametrize(("profile", "rule"), [(Profile.NZ, "NZ 12.13"), (Profile.ACT, "ACT 13.9")])
def test_nz_and_act_void_a_wrong_distribution_even_after_handling(
    profile: Profile, rule: str
) -> None:
    t = announced(profile, p2=2000)
    effects = t.send("dealer.void", kind="distribution", handled=True)
    assert first(effects, "round")["summary"]["rule"] == rule


# -- NZ 12.15 hands mixed beyond reconstruction ----------------------------------------------
def test_nz_hands_mixed_beyond_reconstruction_are_void() -> None:
    t = announced(Profile.NZ, p2=2000, p4=4000, p5=2000)
    t.send("dealer.delivered")
    effects = t.send("dealer.hands_mixed", boxes=[2, 4])
    assert "NZ 12.15" in texts(effects) and [w["box"] for w in t.state.wagers] == [5]
    assert [v["box"] for v in t.state.void_hands] == [2, 4]
    effects = t.send("dealer.hands_mixed", boxes=[1, 5])  # the bank's hand among them
    assert first(effects, "round")["summary"]["rule"] == "NZ 12.15"


def test_mixed_hands_are_an_nz_rule() -> None:
    t = announced(Profile.NSW, p2=2000, p4=4000)
    t.send("dealer.delivered")
    assert "NZ 12.15" in texts(t.send("dealer.hands_mixed", boxes=[2, 4]))
    assert len(t.state.wagers) == 2


# -- NSW 13.2.2 the banker makes up the difference ------------------------------------------------
def test_nsw_a_banker_who_makes_up_the_difference_keeps_the_bank() -> None:
    t = Table(Profile.NSW)
    t.send("table.open")
    t.send("dealer.bank", box=3, player="p3", funds=5000)
    t.send("dealer.wager", box=6, player="p6", amount=8000)
    effects = t.send("dealer.no_more_bets", make_up=3000)
    assert "NSW 13.2.2" in texts(effects) and t.state.bank["holder"] == "player"
    assert t.state.banker == {"player": "p3", "funds": 8000}


def test_nsw_a_make_up_still_short_hands_the_bank_to_the_house() -> None:
    t = Table(Profile.NSW)
    t.send("table.open")
    t.send("dealer.bank", box=3, player="p3", funds=5000)
    t.send("dealer.wager", box=6, player="p6", amount=8000)
    effects = t.send("dealer.no_more_bets", make_up=1000)
    assert "NSW 13.2.2" in texts(effects) and t.state.bank["holder"] == "house"


# -- shared banks (NSW 6.8, NZ 5.5, ACT 6.6) ------------------------------------------------
@pytest.mark.parametrize(("profile", "rule"), [(Profile.NSW, "NSW 6.8"), (Profile.ACT, "ACT 6.6")])
def test_players_sharing_the_bank_wager_on_no_other_hand(profile: Profile, rule: str) -> None:
    t = Table(profile)
    t.send("table.open")
    t.to_shaking(p3=2000, p5=2000)
    t.dice(2, 2, 2)
    t.send("dealer.delivered")
    t.send("dealer.result", hands={"3": {"tiles": ["6-6", "1-1", "4-4", "1-3"]},
                                   "5": {"tiles": ["4-6", "1-6", "1-5", "4-5"]}},
           bank_hand={"tiles": ["5-5", "3-3", "2-2", "5-6"]})
    t.send("dealer.wager", box=5, player="p5", amount=2000)
    t.send("dealer.wager", box=6, player="p6", amount=2000)
    effects = t.send("dealer.bank", box=3, player="p3", funds=RICH, shared_with=["p5"])
    assert rule in texts(effects)  # p5's wager on box 5 goes back
    assert [w["player"] for w in t.state.wagers] == ["p6"]
    assert t.state.banker == {"player": "p3", "funds": RICH, "shared_with": ["p5"]}
    refused = t.send("dealer.wager", box=2, player="p5", amount=2000)
    assert "holds the bank" in texts(refused)
    t.send("dealer.no_more_bets")
    t.dice(2, 2, 2)
    t.send("dealer.delivered")
    effects = t.send("dealer.result", hands={"6": {"tiles": ["6-6", "1-1", "4-4", "1-3"]}},
                     bank_hand={"tiles": ["5-5", "3-3", "2-2", "5-6"]})
    assert first(effects, "round")["summary"]["banker"]["shared_with"] == ["p5"]


def test_the_player_handling_the_tiles_is_not_among_the_sharers() -> None:
    t = Table(Profile.NSW)
    t.send("table.open")
    effects = t.send("dealer.bank", box=3, player="p3", funds=RICH, shared_with=["p3"])
    assert "NSW 6.8" in texts(effects) and t.state.bank["holder"] == "house"
