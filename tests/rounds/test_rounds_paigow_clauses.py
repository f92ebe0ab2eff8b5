"""Issue 30's last Pai Gow clauses, each with the clause it follows: ACT 5.1(c) (further wagers
under the minimum returned once the player is advised), ACT 15.10 with a player/banker (no short
payment: the win is not paid from the table float), the closed table's display, and a round whose
outcome is invalidated (NSW 16.5-16.6, ACT 15.3-15.4)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.describe import describe_round
from controller.games.paigow.bank import BankHolder
from controller.games.paigow.money import BASIS_POINTS, TableMoney
from controller.games.paigow.outcome import Outcome
from controller.games.paigow.profiles import Profile
from controller.games.paigow.settlement import settle_round
from controller.games.paigow.wagers import Wager, accept
from controller.meters import Figures
from tests.support.paigow_table import Table, first, texts

# Hands of the first and second box with a wager, set the house way: pairs of Teen, Day, Yun
# and Gor against pairs of fives, low eights, low sevens and nines.
STRONG = [["6-6", "6-6", "1-1", "1-1"], ["4-4", "4-4", "1-3", "1-3"]]
WEAK = [["2-3", "1-4", "3-5", "2-6"], ["3-4", "2-5", "4-5", "3-6"]]
OPERATOR = {"uid": 1001, "user": "sam"}  # what the control socket adds: who asked


def play_round(t: Table, wagers: dict[str, tuple[int, int]], won: bool) -> dict[str, Any]:
    """One house-banked round from betting: `wagers` player -> (box, amount); every box's hand
    wins (`won`) or loses against the bank. The round's record."""
    for player, (box, amount) in wagers.items():
        t.send("dealer.wager", box=box, player=player, amount=amount)
    t.send("dealer.no_more_bets")
    if t.phase == "cutting":
        t.send("cut.selected", cut="Cup Say", options=["right", "top"])
    t.dice(2, 2, 2)
    t.send("dealer.delivered")
    boxes = sorted({str(box) for box, _ in wagers.values()})
    players, bank = (STRONG, WEAK[0]) if won else (WEAK, STRONG[0])
    hands = {b: {"tiles": players[i]} for i, b in enumerate(boxes)}
    effects = t.send("dealer.result", hands=hands, bank_hand={"tiles": bank})
    return first(effects, "round")["summary"]


def result_of(summary: dict[str, Any], player: str) -> dict[str, Any]:
    return next(r for r in summary["settlement"]["results"] if r["player"] == player)


# -- the closed table's display -------------------------------------------------------------------
@pytest.mark.parametrize("profile", list(Profile))
def test_a_closed_table_reads_table_closed_as_before_it_opened(profile: Profile) -> None:
    # table.close leaked the phase enum's repr: `TABLE Phase.CLOSED`.
    t = Table(profile)
    shown_closed = t.status["display"]
    t.send("table.open")
    effects = t.send("table.close")
    assert first(effects, "display") == shown_closed == {"mode": "closed", "text": "TABLE CLOSED"}
    assert t.status["display"]["text"] == "TABLE CLOSED"


# -- ACT 5.1(c) -----------------------------------------------------------------------------------
def test_act_5_1_c_a_player_advised_has_the_next_wager_under_the_minimum_returned() -> None:
    t = Table(Profile.ACT)  # minimum $10
    t.send("table.open")
    first_round = play_round(t, {"ann": (2, 500)}, won=True)
    r = result_of(first_round, "ann")
    assert (r["action"], r["won"]) == (500, 500)  # paid after the result (ACT 5.1(c))
    assert first_round["advised"] == ["ann"]
    effects = t.send("dealer.wager", box=2, player="ann", amount=500)
    assert "returned regardless of the result (ACT 5.1(c))" in texts(effects)
    t.send("dealer.wager_remove", box=2, player="ann")
    second = play_round(t, {"ann": (2, 500), "bob": (3, 700)}, won=True)
    r = result_of(second, "ann")
    assert (r["action"], r["returned"], r["net"], r["paid_back"]) == (0, 500, 0, 500)
    assert "ACT 5.1(c)" in " ".join(r["notes"])
    assert result_of(second, "bob")["net"] > 0 and second["advised"] == ["bob"]
    # At the minimum the advice changes nothing: ann's wager is settled.
    third = play_round(t, {"ann": (2, 1000)}, won=True)
    assert result_of(third, "ann")["net"] > 0
    t.send("table.close")
    t.send("table.open")  # a closed table starts afresh
    assert result_of(play_round(t, {"ann": (2, 500)}, won=False), "ann")["net"] == -500


@settings(max_examples=25)
@given(rounds=st.lists(st.tuples(st.integers(1, 9), st.booleans()), min_size=2, max_size=4))
def test_act_5_1_c_after_the_first_only_the_stake_comes_back(
    rounds: list[tuple[int, bool]],
) -> None:
    # ACT 5.1(c): the first wager under the minimum is paid or collected after the result; every
    # later one of the advised player is returned whatever the result.
    t = Table(Profile.ACT)
    t.send("table.open")
    for i, (chips, won) in enumerate(rounds):
        amount = chips * 100  # under the $10 minimum
        r = result_of(play_round(t, {"ann": (2, amount)}, won), "ann")
        if i == 0:
            assert r["net"] == (r["won"] - r["commission"] if won else -amount) != 0
        else:
            assert (r["net"], r["paid_back"]) == (0, amount)


@pytest.mark.parametrize("profile", [Profile.NSW, Profile.NZ])
def test_only_act_returns_further_wagers_under_the_minimum(profile: Profile) -> None:
    t = Table(profile, {"money": TableMoney(minimum=4000, maximum=None, chip_unit=100)})
    t.send("table.open")
    for _ in range(2):  # $20 on a $40 table (payable exactly less commission, NZ 6.12)
        summary = play_round(t, {"ann": (2, 2000)}, won=False)
        assert result_of(summary, "ann")["net"] == -2000 and "advised" not in summary


# -- ACT 15.10 with a player/banker ---------------------------------------------------------------
@given(
    chip=st.sampled_from([25, 50, 100, 500]),
    min_chips=st.integers(1, 40),
    chips=st.integers(1, 400),
    bp=st.integers(0, 500),
    notice=st.booleans(),
)
def test_act_15_10_never_cuts_a_win_a_player_banker_pays(
    chip: int, min_chips: int, chips: int, bp: int, notice: bool
) -> None:
    # ACT 15.10 cuts a win that "cannot be paid in full from the table float", the house's money
    # (ACT 12.8); a player banking alone pays from the losing wagers and their own wager: the whole
    # wager wins, and the second sentence pays it to the next higher payable amount.
    money = TableMoney(minimum=min_chips * chip, maximum=None, chip_unit=chip, commission_bp=bp)
    amount = chips * chip
    acc = accept(Wager(2, "x", amount), Profile.ACT, BankHolder.PLAYER, money, notice)
    s = settle_round(Profile.ACT, money, BankHolder.PLAYER, [(acc, Outcome.WIN)], banker_box=5,
                     banker_wager=amount, multiples_notice=notice)
    (r,) = s.results
    assert r.won == amount and s.conserved
    # Paid to the next higher payable amount: the commission rounded down to the chips.
    commission = amount * bp // BASIS_POINTS
    assert r.commission == commission - commission % chip and r.net == amount - r.commission


def test_act_15_10_the_same_wager_is_cut_against_the_house_and_paid_against_a_player() -> None:
    # $30 on a $20 table with $1 chips: 5% of $30 ($1.50) cannot be paid in chips.
    money = TableMoney(minimum=2000, maximum=None, chip_unit=100)
    paid = {}
    for holder in (BankHolder.HOUSE, BankHolder.CO_BANK, BankHolder.PLAYER):
        acc = accept(Wager(2, "x", 3000), Profile.ACT, holder, money)
        (r,) = settle_round(Profile.ACT, money, holder, [(acc, Outcome.WIN)], banker_box=5,
                            banker_wager=3000).results
        paid[holder] = (r.won, r.net)
    # The float pays the house's win and half a co-bank's (ACT 12.8); a player/banker's is theirs.
    assert paid == {BankHolder.HOUSE: (2000, 1900), BankHolder.CO_BANK: (2000, 1900),
                    BankHolder.PLAYER: (3000, 2900)}


# -- a round whose outcome is invalidated (NSW 16.5-16.6, ACT 15.3-15.4) --------------------------
def setting_table(profile: Profile, **wagers: int) -> Table:
    t = Table(profile)
    t.send("table.open")
    t.to_shaking(**wagers)
    t.dice(2, 2, 2)
    t.send("dealer.delivered")
    assert t.phase == "setting"
    return t


@pytest.mark.parametrize(("profile", "cause", "rule"), [
    (Profile.NSW, "disruption", "NSW 16.5.1, 16.6"),
    (Profile.NSW, "fraud", "NSW 16.5.2, 16.6"),
    (Profile.ACT, "disruption", "ACT 15.3(a), 15.4"),
    (Profile.ACT, "fraud", "ACT 15.3(b), 15.4"),
])
def test_a_supervisor_invalidates_a_round_after_the_tiles_were_handled(
    profile: Profile, cause: str, rule: str
) -> None:
    # Today ACT records a fire as ACT 13.9 (a wrong distribution) and NSW, once the tiles were
    # handled, plays the round on (NSW 15.13).
    t = setting_table(profile, p2=2000, p4=4000)
    effects = t.send("dealer.void", kind="invalidated", cause=cause, reason="fire in the pit",
                     handled=True, operator=OPERATOR)
    record = first(effects, "round")
    summary = record["summary"]
    assert record["status"] == "voided" and summary["rule"] == rule
    assert (summary["kind"], summary["cause"], summary["voided_by"]) == (
        "invalidated", cause, OPERATOR)
    assert [w["amount"] for w in summary["returned"]] == [2000, 4000]  # refunded
    assert t.phase == "betting" and t.state.number == 2


def test_the_invalidation_is_a_supervisors_the_keypad_alone_cannot_make_it() -> None:
    t = setting_table(Profile.NSW, p2=2000)
    effects = t.send("dealer.void", kind="invalidated", cause="fraud", reason="marked tiles")
    assert "supervisor" in texts(effects) and t.phase == "setting" and not t.rounds


def test_nsw_16_6_the_fraudsters_wagers_are_forfeited_the_others_refunded() -> None:
    t = setting_table(Profile.NSW, p2=2000, p4=4000)
    effects = t.send("dealer.void", kind="invalidated", cause="fraud", reason="switched tiles",
                     forfeit=["p4"], operator=OPERATOR)
    record = first(effects, "round")
    summary = record["summary"]
    assert describe_round(record) == ("round 1 voided: switched tiles; outcome invalidated"
                                      " (NSW 16.5.2, 16.6); voided by sam; forfeited $40.00")
    assert [w["player"] for w in summary["returned"]] == ["p2"]
    assert [(w["player"], w["amount"]) for w in summary["forfeited"]] == [("p4", 4000)]
    assert summary["house_net"] == 4000
    figures = Figures()
    figures.add(1, "voided", summary)  # the forfeit is the house's: the meters say so
    assert (figures.rounds_voided, figures.house_win) == (1, 4000)


@pytest.mark.parametrize(("profile", "data", "why"), [
    (Profile.ACT, {"cause": "fraud", "forfeit": ["p2"]}, "ACT 15.4"),  # all refunded
    (Profile.NSW, {"cause": "disruption", "forfeit": ["p2"]}, "16.5.2"),  # fraud only
    (Profile.NSW, {"cause": "fraud", "forfeit": ["nobody"]}, "no wager"),
    (Profile.NSW, {"cause": "riot"}, "cause"),
    (Profile.NZ, {"cause": "fraud"}, "profile nz"),  # NZ has no such rule
])
def test_forfeits_and_causes_the_clauses_do_not_allow_are_refused(
    profile: Profile, data: dict[str, Any], why: str
) -> None:
    t = setting_table(profile, p2=2000)
    effects = t.send("dealer.void", kind="invalidated", reason="r", operator=OPERATOR, **data)
    assert why in texts(effects) and t.phase == "setting" and not t.rounds


def test_a_player_bankers_wager_is_not_forfeited_by_the_table() -> None:
    from tests.rounds.test_rounds_paigow_irregularities import banked

    t = banked(Profile.NSW)  # p3 banks on box 3, p2 wagers
    effects = t.send("dealer.void", kind="invalidated", cause="fraud", reason="marked tiles",
                     forfeit=["p3"], operator=OPERATOR)
    assert "p3 holds the bank" in texts(effects) and t.phase == "announced"
    effects = t.send("dealer.void", kind="invalidated", cause="fraud", reason="marked tiles",
                     forfeit=["p2"], operator=OPERATOR)
    summary = first(effects, "round")["summary"]
    assert [w["player"] for w in summary["forfeited"]] == ["p2"] and summary["returned"] == []
    assert t.state.bank["holder"] == "player"  # a void round is no round of play: p3 keeps it
