"""UTH carded play through the round machine (issue 29): UTH 13.1, 13.2, 13.3, 13.4,
11.16 (invalid wagers before, during and after a hand: 11.16.1-11.16.3), 11.17-11.17.2. Head
office is a small fake answering the machine's `patron` requests here; the link itself is
tests/link/test_link_patron.py."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.rounds.base import Event
from controller.rounds.cards import CardsConfig, return_excess
from controller.rounds.uth import UthConfig
from tests.support.uth_table import POOL, Table, money_conserved, of, texts

CARDS = CardsConfig(required=True, local=False)


class HeadOffice:
    """Answers each card request: cards it knows are valid with `remaining` cents left."""

    def __init__(self, remaining: dict[str, int], *, silent: bool = False,
                 ledger: bool = False) -> None:
        self.remaining = dict(remaining)
        self.silent = silent
        # ledger: like headoffice/ledger/cards.py, a round's reservation replaces its earlier
        # one and what remains is said after the grant
        self.ledger = ledger
        self.held: dict[tuple[str, int], int] = {}
        self.asked: list[dict[str, Any]] = []

    def answer(self, table: Table, effects: list[Any]) -> None:
        for e in effects:
            if e.kind != "device" or e.data["device"] != "patron":
                continue
            args = dict(e.data["args"])
            self.asked.append({"command": e.data["command"], **args})
            if self.silent:
                table.step("ho.card", req=args["req"], card=args["card"], offline=True)
                continue
            card = args["card"]
            left = self.remaining.get(card)
            key = (card, args.get("round") or 0)
            if self.ledger and left is not None:  # the round's own reservation excluded
                left -= sum(a for k, a in self.held.items() if k[0] == card and k != key)
            data: dict[str, Any] = {"req": args["req"], "card": card, "valid": left is not None,
                                    "remaining": left}
            if left is None:
                data["reason"] = "unknown card"
            if e.data["command"] == "card_reserve" and left is not None:
                data["granted"] = args["amount"] if args["amount"] <= left else 0
                if self.ledger and data["granted"]:
                    self.held[key] = args["amount"]
                    data["remaining"] = left - args["amount"]
            table.step("ho.card", **data)


def carded(ho: HeadOffice | None = None, cards: CardsConfig = CARDS) -> tuple[Table, HeadOffice]:
    table = Table(UthConfig(pool=POOL, cards=cards))
    return table, ho or HeadOffice({"CARD-0001": 1_000_00, "CARD-0002": 1_000_00})


def wager(t: Table, ho: HeadOffice, **data: Any) -> list[Any]:
    out = t.step("dealer.wager", **data)
    ho.answer(t, out)
    return out


def test_13_1_11_16_1_a_wager_without_a_card_is_refused_before_the_deal() -> None:
    t, _ho = carded()
    out = t.step("dealer.wager", box=1, ante=1000)
    assert t.state.wagers == {}
    assert "no valid Player Card" in texts(out) and "11.16.1" in texts(out)


def test_13_1_a_real_standalone_table_has_no_patron_service_and_refuses_saying_why() -> None:
    """Cards required (the NSW default, UTH 13.1) on a table neither linked nor simulated:
    nobody can confirm a card, so even a carded wager is refused, with the reason."""
    t = Table(UthConfig(pool=POOL, cards=CardsConfig(required=True, local=True)))
    out = t.step("dealer.wager", box=1, ante=1000, card="CARD-0001")
    assert t.state.wagers == {}
    assert "no patron service" in texts(out) and "required = false" in texts(out)
    sim = Table(UthConfig(pool=POOL, cards=CardsConfig(required=True, simulated=True)))
    sim.step("dealer.wager", box=1, ante=1000, card="SIM-0001")  # the simulated service
    assert sim.state.wagers == {"1": [1000, 1000, 0]}
    out = sim.step("dealer.wager", box=2, ante=1000)  # 11.16.1 still: no card, no wager
    assert "2" not in sim.state.wagers and "11.16.1" in texts(out)


def test_cards_not_required_plays_as_before() -> None:
    t = Table(UthConfig(pool=POOL))
    t.step("dealer.wager", box=1, ante=1000)
    assert t.state.wagers == {"1": [1000, 1000, 0]}


def test_13_1_the_wager_names_its_card_and_reserves_the_most_it_can_lose() -> None:
    t, ho = carded()
    wager(t, ho, box=2, ante=1000, trips=500, card="CARD-0001")
    assert t.state.wagers == {"2": [1000, 1000, 500]}
    reserve = [a for a in ho.asked if a["command"] == "card_reserve"]
    assert [a["command"] for a in ho.asked] == ["card_reserve"]  # its answer says valid too
    # ante + blind + trips + the largest Play (4 x ante): the Play counts (13.3)
    assert reserve[-1]["amount"] == 1000 + 1000 + 500 + 4000
    assert reserve[-1]["round"] == 1
    assert "card CARD-0001" in texts(t.effects)


def test_13_1_an_unknown_card_is_refused_with_head_offices_reason() -> None:
    t, ho = carded()
    out = t.step("dealer.wager", box=1, ante=1000, card="STOLEN-99")
    ho.answer(t, out)
    assert t.state.wagers == {}
    assert "unknown card" in texts(t.effects)


def test_13_3_a_wager_over_the_remaining_loss_limit_is_refused_at_the_keypad() -> None:
    t, ho = carded(HeadOffice({"CARD-0001": 5000}))
    t.step("dealer.player_card", box=1, card="CARD-0001")
    ho.answer(t, t.effects)
    assert t.state.patrons["1"]["remaining"] == 5000
    out = t.step("dealer.wager", box=1, ante=1000)  # risks 6000 > 5000: the keypad refuses
    assert t.state.wagers == {}
    assert "over the Loss Limit: $50.00 remains" in texts(out) and "13.3" in texts(out)
    wager(t, ho, box=1, ante=500)  # risks 3000: taken
    assert t.state.wagers == {"1": [500, 500, 0]}


def test_13_3_head_office_refuses_a_reservation_over_what_remains() -> None:
    t, ho = carded(HeadOffice({"CARD-0001": 5999}))
    wager(t, ho, box=1, ante=1000, card="CARD-0001")
    assert t.state.wagers == {}
    assert "Loss Limit" in texts(t.effects)


def test_the_deal_waits_for_head_offices_answer() -> None:
    t, ho = carded()
    out = t.step("dealer.wager", box=1, ante=1000, card="CARD-0001")
    t.run("dealer.deal")
    assert t.state.phase == "betting"
    assert "waiting for head office" in texts(t.effects)
    ho.answer(t, out)
    t.run("dealer.deal")
    assert t.state.phase == "preflop"


def test_strict_offline_no_answer_refuses_the_wager() -> None:
    t, ho = carded(HeadOffice({}, silent=True))
    wager(t, ho, box=1, ante=1000, card="CARD-0001")
    assert t.state.wagers == {}
    assert "head office cannot confirm the card (UTH 13.1)" in texts(t.effects)


def test_allowance_offline_reading_takes_wagers_up_to_the_allowance() -> None:
    cards = CardsConfig(required=True, local=False, offline="allowance", offline_allowance=10_000)
    t, ho = carded(HeadOffice({}, silent=True), cards)
    wager(t, ho, box=1, ante=1000, card="CARD-0001")  # risks 6000 of 10000
    assert t.state.wagers == {"1": [1000, 1000, 0]}
    assert t.state.offline_used == {"CARD-0001": 6000}
    wager(t, ho, box=2, ante=1000, card="CARD-0001")  # another 6000: over the allowance
    assert "2" not in t.state.wagers
    assert "offline allowance left $40.00" in texts(t.effects)


def _played(t: Table, ho: HeadOffice, boxes: dict[int, str], ante: int = 1000) -> None:
    for box, card in boxes.items():
        wager(t, ho, box=box, ante=ante, card=card)
    t.run("dealer.deal")
    assert t.state.phase == "preflop"


def _finish(t: Table) -> dict[str, Any]:
    for box in list(t.state.wagers):
        if box not in t.state.decisions:
            t.step("dealer.decision", box=int(box), action="play4")
    t.step("dealer.flop")
    t.step("dealer.turn_river")
    mark = len(t.effects)
    t.step("dealer.dealer_hand")
    (rnd,) = of(t.since(mark), "round")
    return rnd["summary"] | {"_effects": t.since(mark)}


def test_11_16_2_a_card_found_invalid_in_the_hand_returns_the_wager_without_winnings() -> None:
    t, ho = carded()
    _played(t, ho, {1: "CARD-0001", 2: "CARD-0002"})
    t.step("dealer.card_invalid", box=1, reason="not the player's own card")
    summary = _finish(t)
    box1 = next(b for b in summary["boxes"] if b["box"] == 1)
    assert box1["net"] == 0 and box1["returned"] == box1["placed"]
    assert all(s["rule"] == "11.16.2" for s in box1["spots"])
    assert money_conserved(summary)
    settled = {o["payload"]["card"]: o["payload"] for o in of(summary["_effects"], "outbox")
               if o["type"] == "card_settled"}
    assert settled["CARD-0001"]["net"] == 0 and settled["CARD-0001"]["returned"] == 6000
    # 11.16.3: the next round starts without the invalid card; earlier rounds stand.
    assert "1" not in t.state.patrons and "2" in t.state.patrons


def test_11_16_2_head_office_saying_invalid_during_the_hand() -> None:
    # Taken under the offline allowance; head office's late answer: the card is not valid.
    cards = CardsConfig(required=True, local=False, offline="allowance", offline_allowance=10_000)
    t, ho = carded(HeadOffice({}, silent=True), cards)
    _played(t, ho, {3: "CARD-0001"})
    req = t.state.patrons["3"]["req"]
    out = t.step("ho.card", req=req, card="CARD-0001", valid=False, reason="card cancelled")
    assert "11.16.2" in texts(out)
    summary = _finish(t)
    assert summary["boxes"][0]["net"] == 0
    assert summary["boxes"][0]["card_invalid"] == "card cancelled"


def test_11_17_over_the_limit_after_the_deal_settles_to_the_limit_excess_in_reverse() -> None:
    cards = CardsConfig(required=True, local=False, offline="allowance", offline_allowance=10_000)
    t, ho = carded(HeadOffice({}, silent=True), cards)
    _played(t, ho, {4: "CARD-0001"})  # taken offline under the allowance
    req = t.state.patrons["4"]["req"]
    # Head office answers late: only 1500 could be risked on this card.
    t.step("ho.card", req=req, card="CARD-0001", valid=True, remaining=1500, granted=1500)
    summary = _finish(t)  # box 4 plays 4x: ante 1000, blind 1000, play 4000
    box = summary["boxes"][0]
    limit = box["loss_limit"]
    assert limit["valid"] == 1500
    # 11.17.1: returned in reverse order of the bets placed: the Play (4000) first, then the
    # Blind's 500 of 1000; the Ante stands whole.
    assert limit["excess"] == [{"bet": "play", "returned": 4000},
                               {"bet": "blind", "returned": 500}]
    spots = {s["spot"]: s for s in box["spots"]}
    assert spots["ante"]["valid"] == 1000 and spots["blind"]["valid"] == 500
    assert -box["net"] <= 1500
    assert money_conserved(summary)
    (settled,) = [o["payload"] for o in of(summary["_effects"], "outbox")
                  if o["type"] == "card_settled"]
    assert settled["returned"] == 4500 and settled["wagered"] == 1500
    assert settled["net"] == box["net"]


def test_11_17_2_an_answer_for_a_settled_round_changes_nothing() -> None:
    t, ho = carded()
    _played(t, ho, {1: "CARD-0001"})
    _finish(t)
    before = t.state
    out = t.step("ho.card", req="1/2", card="CARD-0001", valid=False, reason="late")
    assert t.state == before and "no wager waits" in texts(out)


def test_card_settled_per_card_and_on_a_void_round() -> None:
    t, ho = carded()
    _played(t, ho, {1: "CARD-0001", 2: "CARD-0002"})
    mark = len(t.effects)
    t.step("dealer.void", reason="test", rule="11.3")
    settled = [o["payload"] for o in of(t.since(mark), "outbox") if o["type"] == "card_settled"]
    assert sorted(s["card"] for s in settled) == ["CARD-0001", "CARD-0002"]
    assert all(s["void"] and s["net"] == 0 for s in settled)


def test_13_4_a_supervisor_restricts_a_card_with_who() -> None:
    t, ho = carded()
    wager(t, ho, box=1, ante=1000, card="CARD-0001")
    out = t.step("dealer.card_restrict", card="CARD-0001", by="supervisor7", reason="asked")
    (msg,) = [o["payload"] for o in of(out, "outbox") if o["type"] == "card_restricted"]
    assert msg == {"card": "CARD-0001", "by": "supervisor7", "reason": "asked"}
    assert t.state.wagers == {}
    out = t.step("dealer.wager", box=1, ante=1000)
    assert t.state.wagers == {} and "restricted" in texts(out)


def test_13_2_declared_chips_are_recorded() -> None:
    t, _ = carded()
    data = {"card": "CARD-0001", "amount": 50_000, "kind": "brought"}
    out = t.event(Event("dealer.chips_declared", data))
    (msg,) = [o["payload"] for o in of(out, "outbox") if o["type"] == "chips_declared"]
    assert msg == {"round": 1, "card": "CARD-0001", "amount": 50_000, "kind": "brought"}


def test_15_2_1_1_a_jackpot_wager_on_another_box_carries_its_own_card() -> None:
    t, ho = carded()
    wager(t, ho, box=1, ante=1000, card="CARD-0001")
    out = t.step("dealer.jackpot_other", box=1, player="p2")
    assert "jackpot wager on box 1 has no valid Player Card" in texts(out)
    out = t.step("dealer.jackpot_other", box=1, player="p2", card="CARD-0002")
    ho.answer(t, out)
    assert t.state.jackpot_owners == {"1": "p2"}
    assert t.state.patrons["j1"]["card"] == "CARD-0002"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=4), st.integers(0, 50_000))
def test_11_17_1_excess_returned_in_reverse_order_property(amounts: list[int], valid: int) -> None:
    bets = [(f"b{i}", a) for i, a in enumerate(amounts)]
    kept, back = return_excess(bets, valid)
    assert [k + r for (_, k), (_, r) in zip(kept, back, strict=True)] == amounts
    assert sum(k for _, k in kept) == min(valid, sum(amounts))
    # Reverse order: a bet gives anything back only once every later bet gave all of it back.
    for i, (_, r) in enumerate(back):
        if r:
            assert all(kept[j][1] == 0 for j in range(i + 1, len(bets)))


def test_13_1_the_card_reader_at_a_box_gives_the_box_its_card() -> None:
    t, ho = carded()
    t.step("cardreader.read", box=3, card="CARD-0001")
    assert t.state.patrons["3"]["card"] == "CARD-0001"
    ho.answer(t, t.effects)
    assert t.state.patrons["3"]["status"] == "valid"
    wager(t, ho, box=3, ante=1000)  # no card keyed: the one read at the box
    assert t.state.wagers == {"3": [1000, 1000, 0]}
    out = t.step("cardreader.unreadable", box=4)
    assert "unreadable" in texts(out) and "4" not in t.state.patrons
    out = t.step("cardreader.fault", reason="disconnected: /dev/tablectl-cardreader")
    assert of(out, "alarm") and "dealer keys" in texts(out)


def test_13_4_from_the_cli_the_restriction_names_the_login_not_a_typed_name() -> None:
    t, _ = carded()
    data = {"card": "CARD-0001", "by": "someone", "operator": {"uid": 1001, "user": "sup-ann"}}
    out = t.event(Event("dealer.card_restrict", data))
    (msg,) = [o["payload"] for o in of(out, "outbox") if o["type"] == "card_restricted"]
    assert msg["by"] == "sup-ann"
    out = t.event(Event("dealer.card_restrict", {"card": "CARD-0002"}))
    assert "by is required" in texts(out)


# -- a jackpot chip added after the wager (15.2.4 with 13.3) ------------------------------------
def test_15_2_4_13_3_a_late_jackpot_chip_is_added_to_the_cards_reservation() -> None:
    """The box's wager reserved without a jackpot chip; the chip placed later, before the deal,
    is reserved too (the most the box can lose grows by the jackpot wager, 13.3)."""
    t, ho = carded(HeadOffice({"CARD-0001": 1_000_00}, ledger=True))
    wager(t, ho, box=2, ante=1000, card="CARD-0001")
    assert t.state.patrons["2"]["granted"] == 6000
    out = t.step("bet.on", box=2)  # 15.2.4: the chip, before the first card
    ho.answer(t, out)
    reserves = [a for a in ho.asked if a["command"] == "card_reserve"]
    assert [a["amount"] for a in reserves] == [6000, 6000 + 100]  # the round's new total
    assert t.state.patrons["2"]["granted"] == 6100
    t.run("dealer.deal")
    assert t.state.phase == "preflop" and t.state.jackpot_boxes == [2]


def test_13_3_a_late_jackpot_chip_over_the_remaining_limit_is_refused_with_the_reason() -> None:
    """What remains after the wager's reservation cannot take the jackpot wager: the chip is
    refused at once with the reason (13.3), the deal refused while it lies on the layout, and
    the box's wager stands with its reservation."""
    t, ho = carded(HeadOffice({"CARD-0001": 6050}, ledger=True))
    wager(t, ho, box=2, ante=1000, card="CARD-0001")
    assert t.state.patrons["2"]["remaining"] == 50
    out = t.step("bet.on", box=2)
    assert "jackpot chip" in texts(out) and "$0.50 remains" in texts(out)
    assert "13.3" in texts(out)
    assert [a["command"] for a in ho.asked] == ["card_reserve"]  # nothing more asked
    t.run("dealer.deal")
    assert t.state.phase == "betting" and "remove it" in texts(t.effects)
    t.step("bet.off", box=2)
    t.run("dealer.deal")
    assert t.state.phase == "preflop" and t.state.jackpot_boxes == []
    assert t.state.wagers == {"2": [1000, 1000, 0]} and t.state.patrons["2"]["granted"] == 6000


def test_13_3_head_office_refusing_the_late_chip_keeps_the_wager() -> None:
    """Head office knows less remains than the table last heard (another table played the
    card): its refusal of the top-up refuses the chip only; the wager's grant stands."""
    ho = HeadOffice({"CARD-0001": 1_000_00}, ledger=True)
    t, _ = carded(ho)
    wager(t, ho, box=2, ante=1000, card="CARD-0001")
    ho.remaining["CARD-0001"] = 6050  # the other table's loss, settled meanwhile
    out = t.step("bet.on", box=2)
    ho.answer(t, out)
    assert t.state.wagers == {"2": [1000, 1000, 0]}
    assert t.state.patrons["2"]["granted"] == 6000
    assert "jackpot chip" in texts(t.effects) and "13.3" in texts(t.effects)
    t.run("dealer.deal")
    assert t.state.phase == "betting"  # the chip still lies there: remove it first


# -- an invalidated round (13.9-13.10) -----------------------------------------------------------
def test_13_10_a_forfeit_counts_as_the_cards_loss() -> None:
    """A fraudster's wagers forfeited by the supervisor (13.9.2, 13.10): the house keeps them,
    so the card's net is that loss (toward the Loss Limit, 13.3), not 0; the other box's card
    is refunded with net 0."""
    t, ho = carded()
    wager(t, ho, box=2, ante=1000, trips=500, card="CARD-0001")
    wager(t, ho, box=5, ante=2000, card="CARD-0002")
    t.stack("Ah Kh Qh 2c 7d 3s 4s Jh Th 9c 9d")
    t.run("dealer.deal")
    t.step("dealer.decision", box=2, action="play4")
    out = t.event(Event("dealer.void", {"kind": "invalidated", "cause": "fraud",
                                        "reason": "past-posting", "forfeit": [2],
                                        "operator": {"uid": 1001, "user": "sam"}}))
    settled = {e.data["payload"]["card"]: e.data["payload"] for e in out
               if e.kind == "outbox" and e.data["type"] == "card_settled"}
    lost = 1000 + 1000 + 500 + 4000
    assert settled["CARD-0001"] | {"reserved": 0} == {
        "round": 1, "card": "CARD-0001", "reserved": 0, "wagered": lost, "net": -lost,
        "returned": 0, "void": True}
    assert (settled["CARD-0002"]["net"], settled["CARD-0002"]["void"]) == (0, True)


# -- one card on two boxes (head office keeps one reservation per card, table and round) --------
def test_13_3_one_card_on_two_boxes_asks_for_its_total() -> None:
    """Head office's reservation of a card for a round at a table is one (a repeat replaces
    it): the second box's request carries both boxes' risk, so two boxes together cannot pass
    the Loss Limit (13.3); its refusal leaves the first box's wager and grant standing."""
    t, ho = carded(HeadOffice({"CARD-0001": 10_000}, ledger=True))
    wager(t, ho, box=1, ante=1000, card="CARD-0001")  # 6000 at risk
    wager(t, ho, box=2, ante=1000, card="CARD-0001")  # 6000 more: 12000 > 10000
    reserves = [a["amount"] for a in ho.asked if a["command"] == "card_reserve"]
    assert reserves == [6000, 12000]
    assert t.state.wagers == {"1": [1000, 1000, 0]} and ho.held == {("CARD-0001", 1): 6000}
    assert t.state.patrons["1"]["granted"] == 6000 and "Loss Limit" in texts(t.effects)
    wager(t, ho, box=3, ante=500, card="CARD-0001")  # 3000 more: 9000 fits
    assert sorted(t.state.wagers) == ["1", "3"] and ho.held == {("CARD-0001", 1): 9000}
    assert t.state.patrons["3"]["granted"] == 3000


def test_one_card_on_two_boxes_is_settled_once_with_both_boxes() -> None:
    """card_settled once per card: head office settles a card's round at a table once."""
    t, ho = carded()
    wager(t, ho, box=1, ante=1000, card="CARD-0001")
    wager(t, ho, box=2, ante=500, card="CARD-0001")
    t.stack("Ah Kh Qh 2c 7d 3s 4s Jh Th 9c 9d")
    t.run("dealer.deal")
    out = t.event(Event("dealer.void", {"reason": "test"}))
    settled = [e.data["payload"] for e in out
               if e.kind == "outbox" and e.data["type"] == "card_settled"]
    assert settled == [{"round": 1, "card": "CARD-0001", "reserved": 6000 + 3000,
                        "wagered": 0, "net": 0, "returned": 0, "void": True}]
