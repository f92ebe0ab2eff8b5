"""UTH round machine: every transition, by rule (NSW UTH rules v4; docs/rounds-uth.md)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from controller.games.uth.jackpot import PoolState
from controller.rounds.uth import UthConfig, UthMachine
from tests.support.uth_table import (
    POOL,
    Table,
    kinds,
    lamps,
    of,
    replay,
    texts,
)

# Shuffler order (7.2): flop x3, turn, river, dealer x2, then two per box in ascending order.
ROYAL_DECK = "Ah Kh Qh 2c 7d 3s 4s Jh Th 9c 9d"  # box 2: royal flush on hole + flop (15.2.6)


def played_to_river(table: Table) -> None:
    table.step("dealer.flop")
    table.step("dealer.turn_river")


# -- a whole round ----------------------------------------------------------------------------
def test_full_round_settles_pays_the_royal_and_opens_the_next_round() -> None:
    t = Table()
    t.stack(ROYAL_DECK)
    t.run("dealer.deal")  # refused: no wagers yet
    assert t.state.phase == "betting"
    t.deal_round({2: (1000, 500), 5: (500, 0)}, jackpot=[2, 5])
    assert t.state.phase == "preflop" and t.state.round == 1
    t.step("dealer.decision", box=2, action="play4")
    t.step("dealer.decision", box=5, action="play3")
    played_to_river(t)
    mark = len(t.effects)
    t.step("dealer.dealer_hand")
    out = t.since(mark)
    (rnd,) = of(out, "round")
    assert rnd["number"] == 1 and rnd["status"] == "completed"
    boxes = {b["box"]: b for b in rnd["summary"]["boxes"]}
    # 10.4: settled from the dealer's right, the highest box first.
    assert [b["box"] for b in rnd["summary"]["boxes"]] == [5, 2]
    assert rnd["summary"]["dealer"] == {
        "cards": ["3s", "4s"],
        "category": "high_card",
        "qualifies": False,
    }
    spots2 = {s["spot"]: s for s in boxes[2]["spots"]}
    assert spots2["ante"]["outcome"] == "stand_off"  # 10.7.3.4
    assert spots2["blind"]["won"] == 500_000  # 10.12.1, 500:1
    assert spots2["play"]["won"] == 4000  # 10.7.2.1, 4x
    assert spots2["trips"]["won"] == 25_000  # 10.9.1, 50:1
    spots5 = {s["spot"]: s for s in boxes[5]["spots"]}
    assert spots5["blind"]["outcome"] == "stand_off"  # 10.7.3.7
    assert spots5["play"]["won"] == 1500
    assert rnd["summary"]["house_net"] == -(500_000 + 4000 + 25_000 + 1500)
    # 15.2.7: the jackpot is paid apart from the box's winning wagers (not among its spots, not
    # in house_net).
    # 15.2.9.1: the royal takes the whole meter (seed + this round's two contributions of
    # 10 cents, 15.2.5), then the meter resets to the seed.
    jp = rnd["summary"]["jackpot"]
    assert jp["payouts"] == [
        {
            "box": 2,
            "award": "royal_flush",
            "amount": 5_000_020,
            "from_meter": 5_000_020,
            "from_house": 0,
            "rule": "15.2.9.1",
        }
    ]
    assert of(out, "display", mode="win") == [{"mode": "win", "box": 2, "amount": 5_000_020}]
    assert t.status()["pool"]["amount"] == 5_000_000
    assert lamps(out)[2] == "win"
    (result,) = [o["payload"] for o in of(out, "outbox") if o["type"] == "round_result"]
    assert result["round"] == 1 and result["status"] == "completed"
    assert result == rnd["summary"]
    # Next round: number 2, the other deck shuffled (4.1.2, 4.2), wagers cleared.
    assert t.state.round == 2 and t.state.phase == "betting" and t.state.wagers == {}
    assert of(out, "device", command="shuffle") == [
        {"device": "shuffler", "command": "shuffle", "args": {"deck": 2}}
    ]


def test_decks_alternate_and_deal_waits_for_the_shuffler() -> None:
    t = Table(auto=False)
    assert t.status()["waiting_for"] == "wagers"
    t.step("dealer.wager", box=1, ante=500)
    t.step("dealer.deal")
    assert t.state.phase == "betting"  # deck 1 not shuffled yet (4.1)
    assert "not shuffled" in texts(t.effects[-1:]) or "shuffling" in texts(t.effects[-1:])
    t.step("shuffler.ready", deck=2)  # wrong deck
    assert t.state.deck_status == "shuffling"
    t.step("shuffler.ready", deck=1)
    out = t.step("dealer.deal")
    assert of(out, "device", command="dispense")[0]["args"] == {"count": 9, "deck": 1}
    t2 = Table()
    decks = []
    for _ in range(3):
        t2.deal_round({1: (500, 0)})
        decks.append(t2.state.deck)
        t2.step("dealer.void", reason="test")
        t2.pump()
    assert decks == [1, 2, 1]


# -- 5.5 lock ---------------------------------------------------------------------------------
def test_first_card_locks_wagers_and_jackpot_wagers() -> None:
    t = Table(auto=False)
    t.step("shuffler.ready", deck=1)
    t.step("dealer.wager", box=3, ante=1000)
    t.step("dealer.wager", box=6, ante=500, trips=200)
    t.step("bet.on", box=3)
    t.step("bet.on", box=4)  # no Ante/Blind on box 4: no jackpot wager (15.2.1)
    t.step("dealer.deal")
    before = t.state
    out = t.step("dealer.wager", box=3, ante=2000)
    assert t.state == before and kinds(out) == ["log"] and "7.1" in texts(out)
    mark = len(t.effects)
    t.step("card.dispensed", card="2c", index=0)
    out = t.since(mark)
    assert lamps(out) == {3: "locked", 4: "idle"}
    (inc,) = [o["payload"] for o in of(out, "outbox") if o["type"] == "jackpot_increment"]
    assert inc == {
        "round": 1,
        "pool_id": "uth",
        "boxes": [3],
        "wager": 100,
        "wagers": 1,
        "amount": 100,
    }
    # 10% of 100 cents to the meter, 2% to the reserve.
    assert t.state.pool["amount"] == 5_000_010 and t.state.pool["reserve"] == 2
    assert t.state.jackpot_boxes == [3]
    for kind, data in [
        ("dealer.wager", {"box": 3, "ante": 2000}),
        ("dealer.wager", {"box": 1, "ante": 500}),
        ("dealer.withdraw", {"box": 6}),
    ]:
        before = t.state
        out = t.step(kind, **data)
        assert t.state == before and kinds(out) == ["log"] and "5.5" in texts(out)
    out = t.step("bet.on", box=6)  # a chip after the first card is no wager
    assert "5.5" in texts(out) and t.state.jackpot_boxes == [3] and not lamps(out)
    out = t.step("bet.off", box=3)  # a locked jackpot wager stands
    assert "5.5" in texts(out) and t.state.jackpot_boxes == [3] and not lamps(out)


def test_wagers_validated_by_the_engine() -> None:
    t = Table()
    for data, rule in [
        ({"box": 1, "ante": 500, "blind": 400}, "5.3"),
        ({"box": 1, "ante": 0}, "5.3"),
        ({"box": 8, "ante": 500}, "boxes 1..7"),
        ({"box": 1, "ante": 5.0}, "whole number"),
        ({"box": 1, "ante": True}, "whole number"),
        ({"box": 1, "ante": -5}, ">= 0"),
    ]:
        before = t.state
        out = t.step("dealer.wager", **data)
        assert t.state == before and rule in texts(out)
    t.step("dealer.wager", box=1, ante=500, trips=100)
    t.step("dealer.wager", box=1, ante=700)  # changed before the deal (5.3)
    assert t.state.wagers == {"1": [700, 700, 0]}
    t.step("dealer.withdraw", box=1)
    assert t.state.wagers == {}


# -- decisions (9.1-9.3, 11.10) ---------------------------------------------------------------
def test_decisions_follow_the_order_of_play() -> None:
    t = Table()
    t.stack(ROYAL_DECK)
    t.deal_round({2: (1000, 0), 5: (500, 0)})
    refused = [
        ({"box": 2, "action": "play2"}, "not allowed preflop"),  # 9.1.2: 3x or 4x
        ({"box": 2, "action": "play1"}, "not allowed preflop"),
        ({"box": 3, "action": "play4"}, "no hand"),
        ({"box": 2, "action": "raise"}, "not allowed"),
    ]
    for data, why in refused:
        before = t.state
        out = t.step("dealer.decision", **data)
        assert t.state == before and why in texts(out)
    t.step("dealer.decision", box=2, action="check")
    out = t.step("dealer.decision", box=2, action="check")
    assert "already checked" in texts(out)
    t.step("dealer.decision", box=5, action="fold")
    out = t.step("dealer.decision", box=5, action="play4")
    assert "already decided" in texts(out)  # 9.5: a fold is final
    t.step("dealer.flop")
    assert t.status()["community"] == ["Ah", "Kh", "Qh"]
    out = t.step("dealer.decision", box=2, action="play4")
    assert "not allowed flop" in texts(out)  # 9.2.3: 2x after the flop
    t.step("dealer.decision", box=2, action="play2")
    t.step("dealer.turn_river")
    out = t.step("dealer.decision", box=2, action="play1")
    assert "already decided" in texts(out)  # 9.3.2.1
    assert t.status()["community"] == ["Ah", "Kh", "Qh", "2c", "7d"]
    t.step("dealer.dealer_hand")
    (rnd,) = t.rounds
    decisions = {b["box"]: b["decision"] for b in rnd["summary"]["boxes"]}
    assert decisions == {2: "2x", 5: "fold-preflop"}


def test_no_check_on_the_river_and_silence_is_a_fold() -> None:
    t = Table()
    t.deal_round({1: (500, 0), 4: (500, 0)})
    played_to_river(t)
    out = t.step("dealer.decision", box=1, action="check")
    assert "not allowed river" in texts(out)  # 9.3 offers play 1x or fold only
    t.step("dealer.decision", box=4, action="play1")
    t.step("dealer.dealer_hand")
    decisions = {b["box"]: b["decision"] for b in t.rounds[0]["summary"]["boxes"]}
    assert decisions == {1: "fold-river", 4: "1x"}  # 11.10: no decision -> deemed folded


def test_streets_only_in_order() -> None:
    t = Table()
    t.deal_round({1: (500, 0)})
    for kind in ("dealer.turn_river", "dealer.dealer_hand"):
        before = t.state
        out = t.step(kind)
        assert t.state == before and kinds(out) == ["log"]
    t.step("dealer.flop")
    before = t.state
    assert kinds(t.step("dealer.flop")) == ["log"] and t.state == before


# -- misdeal (11.1-11.4) ----------------------------------------------------------------------
def _returned(rnd: dict) -> dict[int, dict]:
    return {r["box"]: r for r in rnd["summary"]["returned"]}


def test_too_few_cards_when_the_dealer_says_dealt_is_a_misdeal() -> None:
    t = Table(auto=False)
    t.step("shuffler.ready", deck=1)
    t.step("dealer.wager", box=1, ante=500, trips=100)
    t.step("bet.on", box=1)
    t.step("dealer.deal")
    for i, card in enumerate(["2c", "3c", "4c", "5c"]):
        t.step("card.dispensed", card=card, index=i)
    out = t.step("dealer.dealt")
    (rnd,) = of(out, "round")
    assert rnd["status"] == "voided" and rnd["summary"]["rule"] == "11.1"
    assert _returned(rnd) == {
        1: {"box": 1, "ante": 500, "blind": 500, "trips": 100, "play": 0, "jackpot": 100}
    }
    # 15.3.1: the jackpot wager is cancelled and the local pool is as before the lock.
    assert [o["type"] for o in of(out, "outbox")] == ["jackpot_cancel", "round_result"]
    assert t.state.pool == UthMachine(t.config).initial().pool
    assert t.state.ledger["wagered"] == 0
    assert t.state.round == 2 and t.state.phase == "betting"


def test_misdeal_before_any_play_wager_but_not_after() -> None:
    t = Table()
    t.deal_round({1: (500, 0), 2: (500, 0)})
    t.step("dealer.decision", box=1, action="play4")
    before = t.state
    out = t.step("dealer.misdeal", reason="dealer_revealed")
    assert t.state == before and "11.4.2" in texts(out)  # play continues
    t2 = Table()
    t2.deal_round({1: (500, 0), 2: (500, 0)})
    t2.step("dealer.decision", box=1, action="check")
    out = t2.step("dealer.misdeal", reason="dealer_revealed")
    (rnd,) = of(out, "round")
    assert rnd["status"] == "voided" and rnd["summary"]["rule"] == "11.4.1"
    t2.pump()
    t2.deal_round({1: (500, 0)})
    t2.step("dealer.flop")
    before = t2.state
    out = t2.step("dealer.misdeal", reason="cards_revealed")
    assert t2.state == before and "flop" in texts(out)


def test_extra_card_after_the_deal_is_a_misdeal_even_after_a_play_wager() -> None:
    # Issue 13: a card too many is a wrong count (11.1, 11.3); the 11.4.2 exception ("a Play
    # wager has been made: play continues") covers only the dealer's revealed hole cards.
    t = Table()
    t.deal_round({1: (500, 0)})
    out = t.step("card.dispensed", card=t.order[9], index=9)
    assert of(out, "round")[0]["summary"]["rule"] == "11.1"
    t.pump()
    t.deal_round({1: (500, 0)})
    t.step("dealer.decision", box=1, action="play4")
    out = t.step("card.dispensed", card=t.order[9], index=9)
    (rnd,) = of(out, "round")
    assert rnd["status"] == "voided" and rnd["summary"]["rule"] == "11.1"
    assert rnd["summary"]["returned"][0]["play"] == 2000  # the Play wager goes back too (11.3)


def test_void_returns_play_wagers_too() -> None:
    # A supervisor invalidates the game (13.9, 13.9.1): every wager back, Play included.
    t = Table()
    t.deal_round({1: (500, 0)})
    t.step("dealer.decision", box=1, action="play4")
    out = t.step("dealer.void", reason="brawl", rule="13.9.1")
    assert _returned(of(out, "round")[0])[1]["play"] == 2000


# -- 11.7 missing or foreign card ---------------------------------------------------------------
@pytest.mark.parametrize("bad", ["Jk", "duplicate", None])
def test_foreign_duplicate_or_unreadable_card_voids_with_surveillance(bad: str | None) -> None:
    t = Table(auto=False)
    t.step("shuffler.ready", deck=1)
    t.step("dealer.wager", box=2, ante=1000, trips=500)
    t.step("bet.on", box=2)
    t.step("dealer.deal")
    t.step("card.dispensed", card="As", index=0)
    card = "As" if bad == "duplicate" else bad
    out = t.step("card.dispensed", card=card, index=1)
    (alarm,) = of(out, "alarm")
    assert alarm["severity"] == "surveillance" and alarm["rule"] == "11.7"
    (rnd,) = of(out, "round")
    assert rnd["status"] == "voided" and rnd["summary"]["rule"] == "11.7"  # 11.7.2
    assert _returned(rnd)[2] == {
        "box": 2,
        "ante": 1000,
        "blind": 1000,
        "trips": 500,
        "play": 0,
        "jackpot": 100,
    }
    assert lamps(out)[2] == "bet"  # the chip is still on the sensor: next round's wager
    assert t.state.pool["amount"] == POOL.amount and t.state.round == 2


def test_bad_deck_check_voids_the_round_and_keeps_the_deck_out_until_checked() -> None:
    t = Table()
    t.deal_round({1: (500, 0)})
    out = t.step(
        "deck.check", deck=1, ok=False, missing=["Qs"], extra=[], duplicate=[], unreadable=0
    )
    assert of(out, "alarm")[0]["severity"] == "surveillance"
    assert of(out, "round")[0]["summary"]["rule"] == "11.7"
    t.pump()  # deck 2 shuffled
    t.deal_round({1: (500, 0)})
    t.step("dealer.void", reason="test")
    t.pump()  # round 3 on deck 1, which is suspect (11.7.3)
    t.step("dealer.wager", box=1, ante=500)
    before = t.state
    out = t.step("dealer.deal")
    assert t.state == before and "11.7.3" in texts(out)
    out = t.step("dealer.deck_check")  # the number of cards checked and verified (3.5)
    assert of(out, "device", command="deck_check")[0]["args"] == {"deck": 1}
    out = t.run("deck.check", deck=1, ok=True, missing=[], extra=[], duplicate=[], unreadable=0)
    assert of(out, "device", command="shuffle")  # replaced cards are shuffled (4.7)
    t.run("dealer.deal")
    assert t.state.phase == "preflop" and t.state.round == 3


def test_bad_deck_check_between_rounds_voids_nothing() -> None:
    t = Table()
    t.step("dealer.wager", box=1, ante=500)
    out = t.step(
        "deck.check", deck=1, ok=False, missing=[], extra=["Jk"], duplicate=[], unreadable=0
    )
    assert not of(out, "round") and of(out, "alarm")[0]["severity"] == "surveillance"
    assert t.state.suspect == [1] and t.status()["waiting_for"] == "shuffler"


# -- 12.1 / 12.2 shuffler malfunction ---------------------------------------------------------
@pytest.mark.parametrize("kind", ["shuffler.jam", "shuffler.fault"])
def test_malfunction_before_the_first_card_reshuffles(kind: str) -> None:
    t = Table(auto=False)
    t.step("shuffler.ready", deck=1)
    t.step("dealer.wager", box=1, ante=500)
    t.step("dealer.deal")
    out = t.step(kind, reason="card jam")
    assert of(out, "alarm")[0]["rule"] == "12.1" and not of(out, "round")
    assert of(out, "device", command="shuffle")[0]["args"] == {"deck": 1}
    assert (
        t.state.round == 1 and t.state.phase == "betting" and t.state.wagers == {"1": [500, 500, 0]}
    )
    assert t.state.deck_status == "shuffling"
    assert of(out, "alarm")[0]["text"] == "shuffler: card jam; deck 1 reshuffled"
    # A shuffler that stays unplugged fails the shuffle again: asked again, not said to be
    # reshuffled once more (issue 28).
    again = t.step(kind, reason="disconnected")
    assert of(again, "alarm")[0]["text"] == \
        "shuffler: disconnected; deck 1 still to be shuffled, asked again"
    assert of(again, "device", command="shuffle")[0]["args"] == {"deck": 1}


@pytest.mark.parametrize("kind", ["shuffler.jam", "shuffler.fault"])
def test_malfunction_after_the_first_card_voids_the_round(kind: str) -> None:
    # 12.2, 12.2.1: that round of play is void.
    t = Table(auto=False)
    t.step("shuffler.ready", deck=1)
    t.step("dealer.wager", box=1, ante=500)
    t.step("dealer.deal")
    t.step("card.dispensed", card="9h", index=0)
    out = t.step(kind, reason="motor")
    (rnd,) = of(out, "round")
    assert rnd["status"] == "voided" and rnd["summary"]["rule"] == "12.2"
    assert t.state.round == 2 and of(out, "device", command="shuffle")[0]["args"] == {"deck": 2}


# -- 11.11 jackpot offline --------------------------------------------------------------------
LINKED = UthConfig(pool=POOL, linked=True, pool_id="p1", pool_timeout_ms=5000)


def test_linked_jackpot_offline_until_a_pool_value_and_after_the_timeout() -> None:
    t = Table(LINKED)
    assert t.status()["jackpot"] == "offline" and t.state.display["mode"] == "offline"
    out = t.step("bet.on", box=1)
    assert "11.11" in texts(out) and not lamps(out)  # refused
    out = t.step("ho.pool", pool="p1", amount=7_000_000, version=3)
    assert t.status()["jackpot"] == "online"
    assert of(out, "display") == [{"mode": "pool", "pool": "p1", "amount": 7_000_000}]
    assert lamps(out) == {1: "bet"}  # the chip on the sensor is now a wager
    before = t.state
    assert "older" in texts(t.step("ho.pool", pool="p1", amount=1, version=2))
    assert "p1" in texts(t.step("ho.pool", pool="p2", amount=1, version=9))
    assert t.state == before
    t.ms = 5000
    t.step("tick")
    assert t.status()["jackpot"] == "online"
    t.ms = 5001
    out = t.step("tick")
    assert t.status()["jackpot"] == "offline"
    assert of(out, "alarm")[0]["rule"] == "11.11"
    assert of(out, "display") == [{"mode": "offline", "pool": "p1"}] and lamps(out) == {1: "idle"}
    # The game continues without the jackpot (11.11): the chip is refused at the lock.
    t.step("dealer.wager", box=1, ante=500)
    out = t.run("dealer.deal")
    assert t.state.jackpot_boxes == [] and not [o for o in of(out, "outbox")]
    t.ms = 6000
    t.step("ho.pool", pool="p1", amount=7_000_000, version=4)
    assert t.status()["jackpot"] == "online"


def test_a_value_holds_for_the_links_fresh_ms_until_head_office_is_said_quiet() -> None:
    """11.11 with the link's horizon: a value journaled with fresh_ms (the link journals an
    unchanged value only every pool_refresh_s) holds past the pool timeout up to fresh_ms, and a
    tick saying head office has been quiet for the timeout takes the jackpot offline at once."""
    t = Table(LINKED)
    t.step("ho.pool", pool="p1", amount=7_000_000, version=3, fresh_ms=65_000)
    t.ms = 60_000
    t.step("tick")
    assert t.status()["jackpot"] == "online"  # 60 s on: the link has not said quiet
    t.ms = 65_001
    out = t.step("tick")
    assert t.status()["jackpot"] == "offline"  # past the horizon (the link itself went silent)
    assert of(out, "alarm")[0]["rule"] == "11.11"
    t.ms = 70_000
    t.step("ho.pool", pool="p1", amount=7_000_000, version=4, fresh_ms=65_000)
    assert t.status()["jackpot"] == "online"
    t.ms = 76_000
    out = t.step("tick", pool_quiet_ms=5_200)  # head office quiet past the timeout
    assert t.status()["jackpot"] == "offline"
    assert of(out, "alarm")[0]["rule"] == "11.11" and "5200 ms" in texts(out)
    t.ms = 77_000
    t.step("ho.pool", pool="p1", amount=7_000_000, version=4, fresh_ms=65_000)
    assert t.status()["jackpot"] == "online"  # the next value: at once


@pytest.mark.parametrize(("field", "value"), [
    ("fresh_ms", 4_999), ("fresh_ms", 600_001), ("fresh_ms", "65000"), ("fresh_ms", True),
    ("pool_quiet_ms", 4_999), ("pool_quiet_ms", "5200"),
])
def test_a_horizon_or_quiet_spell_out_of_bounds_is_refused(field: str, value: object) -> None:
    t = Table(LINKED)
    t.step("ho.pool", pool="p1", amount=100, version=1)
    before = t.state
    kind, data = (("ho.pool", {"pool": "p1", "amount": 100, "version": 2}) if field == "fresh_ms"
                  else ("tick", {}))
    out = t.step(kind, **data, **{field: value})
    assert field in texts(out) and t.state == before


def test_clock_going_backwards_means_stale_pool() -> None:
    t = Table(LINKED)
    t.ms = 10_000
    t.step("ho.pool", pool="p1", amount=100, version=1)
    t.ms = 50  # rebooted: a monotonic clock starts again
    t.step("tick")
    assert t.status()["jackpot"] == "offline"


def test_supervisor_takes_the_standalone_jackpot_out_and_back() -> None:
    t = Table()
    t.step("bet.on", box=1)
    out = t.step("dealer.jackpot_off")
    assert of(out, "display") == [{"mode": "offline", "pool": "uth"}] and lamps(out) == {1: "idle"}
    assert "11.11" in texts(t.step("bet.on", box=2))
    out = t.step("dealer.jackpot_on")
    assert lamps(out) == {1: "bet", 2: "bet"} and t.status()["jackpot"] == "online"


def test_linked_hit_is_pending_until_head_office_awards() -> None:
    t = Table(LINKED)
    t.step("ho.pool", pool="p1", amount=7_000_000, version=1)
    t.stack(ROYAL_DECK)
    t.deal_round({2: (1000, 0), 5: (500, 0)}, jackpot=[2, 5])
    incs = [o["payload"] for o in of(t.effects, "outbox") if o["type"] == "jackpot_increment"]
    assert incs == [
        {"round": 1, "pool_id": "p1", "boxes": [2, 5], "wager": 100, "wagers": 2, "amount": 200}
    ]
    t.step("dealer.decision", box=2, action="fold")  # folded hands still qualify (9.6.2)
    t.step("dealer.decision", box=5, action="play4")
    played_to_river(t)
    out = t.step("dealer.dealer_hand")
    (hit,) = [o["payload"] for o in of(out, "outbox") if o["type"] == "jackpot_hit"]
    assert hit["hits"] == [2] and hit["flop"] == ["Ah", "Kh", "Qh"]
    assert [(e["box"], e["category"], e["folded"]) for e in hit["entries"]] == [
        (2, "royal_flush", True),
        (5, "one_pair", False),
    ]
    assert of(out, "display", mode="pending") == [{"mode": "pending", "box": 2}]
    assert t.status()["pool"]["pending"] == [{"round": 1, "boxes": [2]}]
    assert t.rounds[0]["summary"]["jackpot"]["pending"] == [2]
    assert any(e.data == {"mode": "pending", "box": 2} for e in t.machine.resume(t.state))
    before = t.state
    assert "no pending" in texts(t.step("ho.award", round=7, payouts=[]))
    assert t.state == before
    out = t.step(
        "ho.award", round=1, payouts=[{"box": 2, "award": "royal_flush", "amount": 7_000_020}]
    )
    assert of(out, "display", mode="win") == [{"mode": "win", "box": 2, "amount": 7_000_020}]
    assert lamps(out) == {2: "win"}
    assert t.status()["pool"]["pending"] == [] and t.state.ledger["paid"] == 7_000_020


ATTENDANT = {"uid": 1001, "user": "carol"}  # what the control socket journals as `operator`


def test_jackpot_verify_is_refused_without_a_pending_hit_and_sent_for_one() -> None:
    """Rule 15: a large award waits for an attendant's verification at the table; the table
    sends it to head office only for its own hit still PENDING its award."""
    t = Table(LINKED)
    t.step("ho.pool", pool="p1", amount=7_000_000, version=1)
    before = t.state
    out = t.step("dealer.jackpot_verify", round=1, operator=ATTENDANT)
    assert "refused" in texts(out) and "no jackpot hit pending" in texts(out)
    assert of(out, "outbox") == [] and t.state == before
    t.stack(ROYAL_DECK)
    t.deal_round({2: (1000, 0), 5: (500, 0)}, jackpot=[2, 5])
    t.step("dealer.decision", box=2, action="fold")
    t.step("dealer.decision", box=5, action="play4")
    played_to_river(t)
    t.step("dealer.dealer_hand")
    before = t.state
    for bad in ({"round": 7, "operator": ATTENDANT}, {"round": 1},
                {"round": 1, "boxes": [5], "operator": ATTENDANT}):
        out = t.step("dealer.jackpot_verify", **bad)
        assert "refused" in texts(out) and of(out, "outbox") == [] and t.state == before
    out = t.step("dealer.jackpot_verify", round=1, operator=ATTENDANT)
    assert [(o["type"], o["payload"]) for o in of(out, "outbox")] == [
        ("jackpot_verified", {"round": 1, "pool_id": "p1", "boxes": [2],
                              "verified_by": ATTENDANT})]
    assert t.status()["pool"]["pending"] == [{"round": 1, "boxes": [2]}]  # until the award


# -- invalid events leave the state unchanged ---------------------------------------------------
def _at(phase: str) -> Table:
    t = Table()
    if phase == "closed":
        t.step("table.close")
    if phase in ("dealing", "preflop", "flop", "river"):
        t.deal_round({1: (500, 0), 3: (1000, 0)}, jackpot=[1])
    if phase == "dealing":  # rebuild with a partial deal
        t = Table(auto=False)
        t.step("shuffler.ready", deck=1)
        t.step("dealer.wager", box=1, ante=500)
        t.step("dealer.deal")
        t.step("card.dispensed", card="Kd", index=0)
    if phase in ("flop", "river"):
        t.step("dealer.flop")
    if phase == "river":
        t.step("dealer.turn_river")
    assert t.state.phase == phase
    return t


COMMON_INVALID = [
    ("no.such.event", {}),
    ("dealer.wager", {"box": "1", "ante": 500}),
    ("dealer.decision", {"box": 1, "action": "play9"}),
    ("bet.on", {"box": 0}),
    ("ho.pool", {"pool": "uth", "amount": 1, "version": 1}),  # standalone: no head office
    ("ho.award", {"round": 1, "payouts": []}),
    ("shuffler.ready", {"deck": 7}),
    ("deck.check", {"deck": 1, "missing": "Qs"}),
    ("table.open", {}),
    ("dealer.jackpot_on", {}),
]
BY_PHASE = {
    "closed": [("dealer.wager", {"box": 1, "ante": 500}), ("dealer.deal", {}), ("dealer.flop", {})],
    "betting": [
        ("dealer.deal", {}),
        ("dealer.misdeal", {}),
        ("dealer.void", {}),
        ("dealer.dealt", {}),
        ("dealer.decision", {"box": 1, "action": "check"}),
        ("dealer.dealer_hand", {}),
    ],
    "dealing": [
        ("dealer.flop", {}),
        ("dealer.decision", {"box": 1, "action": "play4"}),
        ("dealer.wager", {"box": 2, "ante": 500}),
        ("table.close", {}),
        ("dealer.deck_check", {}),
        ("card.dispensed", {"card": "Kd", "index": 0}),
    ],
    "preflop": [
        ("dealer.turn_river", {}),
        ("dealer.deal", {}),
        ("dealer.withdraw", {"box": 1}),
        ("dealer.decision", {"box": 2, "action": "play4"}),
        ("shuffler.ready", {"deck": 1}),
    ],
    "flop": [
        ("dealer.flop", {}),
        ("dealer.misdeal", {"reason": "cards_revealed"}),  # 11.2: only during the deal
        ("dealer.decision", {"box": 1, "action": "play3"}),
    ],
    "river": [
        ("dealer.decision", {"box": 1, "action": "check"}),
        ("dealer.turn_river", {}),
        ("dealer.wager", {"box": 1, "ante": 500}),
    ],
}


@pytest.mark.parametrize("phase", list(BY_PHASE))
def test_invalid_events_in_each_state_change_nothing(phase: str) -> None:
    t = _at(phase)
    for kind, data in COMMON_INVALID + BY_PHASE[phase]:
        if (kind, phase) == ("table.open", "closed"):
            continue
        before = t.state
        out = t.step(kind, **data)
        assert t.state == before, (kind, data)
        assert out and set(kinds(out)) <= {"log", "alarm"}, (kind, data, out)
        assert "internal error" not in texts(out)


# -- resume, JSON, replay ------------------------------------------------------------------------
def test_resume_reissues_the_pending_dispense_meter_and_lamps() -> None:
    t = _at("dealing")
    out = t.machine.resume(t.state)
    assert of(out, "device", command="dispense")[0]["args"] == {"count": 8, "deck": 1}
    assert of(out, "display") == [{"mode": "pool", "pool": "uth", "amount": 5_000_000}]
    assert lamps(out) == {b: "idle" for b in range(1, 8)}
    fresh = Table(auto=False).machine
    assert of(fresh.resume(fresh.initial()), "device", command="shuffle")[0]["args"] == {"deck": 1}


def test_replay_from_a_round_boundary_snapshot_rebuilds_the_same_state() -> None:
    t = Table(seed=7)
    t.stack(ROYAL_DECK)
    t.deal_round({2: (1000, 500), 5: (500, 0)}, jackpot=[2])
    t.step("dealer.decision", box=2, action="play4")
    played_to_river(t)
    t.step("dealer.dealer_hand")
    t.pump()
    snapshot = json.loads(json.dumps(t.machine.to_json(t.state)))
    mark = len(t.journal)
    t.deal_round({1: (500, 100)}, jackpot=[1])
    t.step("dealer.decision", box=1, action="check")
    t.step("dealer.flop")
    start = t.machine.from_json(snapshot)
    state, _ = replay(t.machine, start, t.journal[mark:])
    assert state == t.state
    full, effects = replay(t.machine, t.machine.initial(), t.journal)
    assert full == t.state and [e.as_json() for e in effects] == [
        e.as_json() for e in t.effects[-len(effects) :]
    ]


def test_from_json_refuses_a_foreign_snapshot() -> None:
    m = UthMachine()
    data = m.to_json(m.initial())
    with pytest.raises(ValueError):
        m.from_json({**data, "extra": 1})
    with pytest.raises(ValueError):
        m.from_json({**data, "phase": "dancing"})


def test_status_fields() -> None:
    t = Table()
    t.stack(ROYAL_DECK)
    t.deal_round({2: (1000, 0), 5: (500, 0)}, jackpot=[2])
    s = t.status()
    assert s["game"] == "uth" and s["state"] == "preflop" and s["round"] == 1
    assert s["jackpot"] == "online" and s["pool"]["mode"] == "standalone"
    assert s["pool"]["amount"] == POOL.amount + 10
    box2 = next(b for b in s["boxes"] if b["box"] == 2)
    assert box2["hole_cards"] == 2 and box2["lamp"] == "locked" and box2["jackpot"]
    assert s["cards_dealt"] == s["cards_needed"] == 11 and s["waiting_for"] == "decisions"


def test_status_shows_no_hole_card_and_a_seat_sees_its_own() -> None:
    # `tablectl status` reaches technicians' terminals during play: no player's hand in it.
    t = Table()
    t.stack(ROYAL_DECK)
    t.deal_round({2: (1000, 0), 5: (500, 0)}, jackpot=[2])
    shown = json.dumps(t.machine.status(t.state))
    seats = {b["box"]: b["hole"] for b in t.machine.seat_view(t.state)["boxes"]}
    assert seats[2] == ["Jh", "Th"] and len(seats[5]) == 2
    for card in seats[2] + seats[5]:
        assert f'"{card}"' not in shown, card
    assert all("hole" not in b for b in t.machine.status(t.state)["boxes"])


def test_pool_state_round_trips_exact_fractions() -> None:
    pool = PoolState(100, 50, increment=Fraction(1, 3), hidden=Fraction(1, 7), ceiling=10**6)
    t = Table(UthConfig(pool=pool))
    t.deal_round({1: (500, 0)}, jackpot=[1])
    assert t.state.pool["carry"] == "1/3" and t.state.pool["amount"] == 133
