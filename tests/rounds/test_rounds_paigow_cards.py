"""Pai Gow carded play through the round machine (issue 29): NSW 9.1 (a valid Player Card at
the commencement of play), 16.1 (only the player's own card; otherwise the wager is invalid).
Head office is answered by hand here (its link: tests/link/test_link_patron.py)."""

from __future__ import annotations

from typing import Any

from controller.games.paigow.profiles import Profile
from controller.rounds.cards import CardsConfig
from tests.support.paigow_table import Table, texts

LINKED = CardsConfig(required=True, local=False)


def answer(t: Table, effects: list[Any], granted: int | None = None, valid: bool = True,
           **extra: Any) -> list[Any]:
    out = []
    for e in effects:
        if e.kind == "device" and e.data["device"] == "patron":
            a = e.data["args"]
            out += t.send("ho.card", req=a["req"], card=a["card"], valid=valid,
                          granted=a.get("amount") if granted is None else granted, **extra)
    return out


def test_nsw_9_1_16_1_a_wager_without_a_card_is_refused() -> None:
    t = Table(Profile.NSW, {"cards": LINKED})
    t.send("table.open")
    out = t.send("dealer.wager", box=2, player="p2", amount=2000)
    assert t.state.wagers == [] and "no valid Player Card" in texts(out) and "9.1" in texts(out)


def test_nsw_9_1_each_wager_names_its_card_and_settles_it() -> None:
    t = Table(Profile.NSW, {"cards": LINKED})
    t.send("table.open")
    out = t.send("dealer.wager", box=2, player="p2", amount=2000, card="CARD-0002")
    (req,) = [e.data for e in out if e.kind == "device" and e.data["device"] == "patron"]
    assert req["command"] == "card_reserve" and req["args"]["amount"] == 2000
    refused = t.send("dealer.no_more_bets")
    assert t.phase == "betting" and "waiting for head office" in texts(refused)
    answer(t, out)
    assert t.state.wagers[0]["card"] == "CARD-0002"
    t.send("dealer.no_more_bets")
    assert t.phase == "shaking"
    t.dice(1, 2, 3)
    t.send("dealer.delivered")
    end = t.send("dealer.void", reason="test")
    (settled,) = [e.data["payload"] for e in end
                  if e.kind == "outbox" and e.data["type"] == "card_settled"]
    assert settled == {"round": 1, "card": "CARD-0002", "reserved": 2000, "wagered": 2000,
                       "net": 0, "returned": 0, "void": True}
    summary = t.rounds[-1]["summary"]
    assert summary["returned"][0]["card"] == "CARD-0002"


def test_nsw_16_1_not_the_players_own_card_returns_the_wager() -> None:
    t = Table(Profile.NSW, {"cards": CardsConfig(required=True, simulated=True)})  # demo cards
    t.send("table.open")
    t.send("dealer.wager", box=2, player="p2", amount=2000, card="CARD-0002")
    assert len(t.state.wagers) == 1
    out = t.send("dealer.card_invalid", box=2, player="p2", reason="not the player's own card")
    assert t.state.wagers == [] and "not the player's own card" in texts(out)


def test_13_3_head_office_refusing_the_reservation_returns_the_wager() -> None:
    t = Table(Profile.NSW, {"cards": LINKED})
    t.send("table.open")
    out = t.send("dealer.wager", box=2, player="p2", amount=2000, card="CARD-0002")
    answer(t, out, granted=0, remaining=500)
    assert t.state.wagers == []
    assert "over the Loss Limit: $0.00 can be risked" in t.state.patrons["2/p2"]["reason"]


def test_nz_and_act_do_not_require_cards() -> None:
    for profile in (Profile.NZ, Profile.ACT):
        t = Table(profile)
        t.send("table.open")
        t.send("dealer.wager", box=2, player="p2", amount=2000)
        assert len(t.state.wagers) == 1


def test_nsw_16_6_a_forfeit_counts_as_the_cards_loss() -> None:
    """NSW 16.5.2, 16.6: the supervisor forfeits a fraudster's wager: the house keeps it, so
    the card's net is that loss (toward its Loss Limit), not 0; a refunded card's net is 0."""
    t = Table(Profile.NSW, {"cards": LINKED})
    t.send("table.open")
    for box, player, card in ((2, "p2", "CARD-0002"), (3, "p3", "CARD-0003")):
        answer(t, t.send("dealer.wager", box=box, player=player, amount=2000, card=card))
    t.send("dealer.no_more_bets")
    t.dice(1, 2, 3)
    t.send("dealer.delivered")
    end = t.send("dealer.void", kind="invalidated", cause="fraud", reason="marked tiles",
                 forfeit=["p2"], operator={"uid": 1001, "user": "sam"})
    settled = {e.data["payload"]["card"]: e.data["payload"] for e in end
               if e.kind == "outbox" and e.data["type"] == "card_settled"}
    assert (settled["CARD-0002"]["net"], settled["CARD-0002"]["void"]) == (-2000, True)
    assert (settled["CARD-0003"]["net"], settled["CARD-0003"]["void"]) == (0, True)


ALLOWANCE = CardsConfig(required=True, local=False, offline="allowance",
                        offline_allowance=10_000)
BANK = {"tiles": ["4-4", "4-4", "1-3", "1-3"]}
HANDS = {"2": "6-6 6-6 / 1-1 1-1", "4": {"tiles": ["2-4", "1-2", "3-5", "2-6"]}}


def late_answer_round(**late: Any) -> tuple[list[Any], dict[str, Any]]:
    """p2 ($50, box 2) taken under the offline allowance, p4 ($30, box 4) confirmed; head
    office's late answer about p2's card comes after no more bets; p2's hand wins."""
    t = Table(Profile.NSW, {"cards": ALLOWANCE})
    t.send("table.open")
    (req,) = [e.data["args"] for e in t.send("dealer.wager", box=2, player="p2", amount=5000,
                                             card="CARD-0002") if e.kind == "device"]
    t.send("ho.card", req=req["req"], card="CARD-0002", offline=True)  # allowance: taken
    answer(t, t.send("dealer.wager", box=4, player="p4", amount=3000, card="CARD-0004"))
    t.send("dealer.no_more_bets")
    t.dice(2, 2, 2)
    t.send("dealer.delivered")
    assert t.phase == "setting"
    t.send("ho.card", req=req["req"], card="CARD-0002", **late)
    effects = t.send("dealer.result", hands=HANDS, bank_hand=BANK)
    return effects, next(e.data["summary"] for e in effects if e.kind == "round")


def test_nsw_16_1_15_21_2_a_card_found_invalid_after_no_more_bets_settles_no_winnings() -> None:
    """NSW 16.1 (the wager is invalid), 15.21.2 (in the course of the round: returned, no
    winnings): the winning wager of an invalid card settles at 0, the dealt result kept beside
    it; the house, banking alone, does not pay it; the card's net is 0."""
    effects, summary = late_answer_round(valid=False, reason="not the player's own card")
    s = summary["settlement"]
    p2 = next(r for r in s["results"] if r["player"] == "p2")
    assert (p2["net"], p2["paid_back"], p2["won"]) == (0, 5000, 0)
    assert p2["card_invalid"] == {"reason": "not the player's own card", "dealt_net": 4800,
                                  "rule": "NSW 16.1, 15.21.2"}
    p4 = next(r for r in s["results"] if r["player"] == "p4")
    assert s["conserved"] and s["house_net"] == -p4["net"]  # p2 costs the house nothing
    settled = {e.data["payload"]["card"]: e.data["payload"] for e in effects
               if e.kind == "outbox" and e.data["type"] == "card_settled"}
    assert settled["CARD-0002"]["net"] == 0


def test_nsw_a_loss_limit_found_short_after_no_more_bets_settles_up_to_it() -> None:
    """Head office's late answer grants $20 of the $50 taken offline: the wager is valid up to
    $20, settled on it (4800 x 20/50 = 1920), the $30 excess returned (the UTH 11.17
    treatment: docs/rounds-paigow.md, "What a regulator should confirm")."""
    _, summary = late_answer_round(valid=True, granted=2000, remaining=0)
    s = summary["settlement"]
    p2 = next(r for r in s["results"] if r["player"] == "p2")
    assert (p2["net"], p2["paid_back"]) == (1920, 5000 + 1920)
    assert p2["loss_limit"] == {"valid": 2000, "excess": 3000, "dealt_net": 4800}
    assert s["conserved"]


def test_nsw_16_1_with_a_player_bank_the_dealt_result_stands_for_the_supervisor() -> None:
    """With a player banking, the bank's commission depends on every wager: the table does not
    recompute it. The card found invalid is named in `card_unsettled` with the dealt result and
    the dealer alarmed to settle by hand (docs/rounds-paigow.md, "What a regulator should
    confirm")."""
    t = Table(Profile.NSW, {"cards": ALLOWANCE})
    t.send("table.open")
    t.send("dealer.bank", box=3, player="p3", funds=10_000_000)  # NSW 6.6
    (req,) = [e.data["args"] for e in t.send("dealer.wager", box=2, player="p2", amount=5000,
                                             card="CARD-0002") if e.kind == "device"]
    t.send("ho.card", req=req["req"], card="CARD-0002", offline=True)
    t.send("dealer.cut", cut="Dai Pin", options=["left"])
    t.send("dealer.no_more_bets")
    t.dice(3, 3, 4, cut_die=6)
    t.send("dealer.delivered")
    assert t.phase == "setting", t.phase
    t.send("ho.card", req=req["req"], card="CARD-0002", valid=False, reason="not own card")
    effects = t.send("dealer.result", hands={"2": HANDS["2"]}, bank_hand=BANK)
    summary = next(e.data["summary"] for e in effects if e.kind == "round")
    assert summary["card_unsettled"] == ["2/p2"]
    p2 = next(r for r in summary["settlement"]["results"] if r["player"] == "p2")
    assert p2["net"] > 0 and p2["card"] == "CARD-0002"  # the dealt result, for the supervisor
    assert "settle by hand" in texts(effects)
