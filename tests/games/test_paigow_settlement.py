"""Settlement in integer cents: NSW 13-14, NZ 6.11-6.14 and 11.1-11.3, ACT 5.1, 12.6-12.9, 15.10."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.games.paigow.money import TableMoney
from controller.games.paigow.outcome import Outcome
from controller.games.paigow.profiles import Profile
from controller.games.paigow.settlement import settle_round
from controller.games.paigow.wagers import (
    BankHolder,
    Wager,
    accept,
    box_controller,
    check_box_wagers,
    largest_exact_wager,
)
from shared.errors import InputError

W, L, P = Outcome.WIN, Outcome.LOSE, Outcome.PUSH
TABLE = TableMoney(minimum=1000, maximum=500_000, chip_unit=100)


def accepted(profile: Profile, bank: BankHolder, *specs: tuple[int, int, Outcome]):
    return [
        (accept(Wager(box, f"p{box}", amount), profile, bank, TABLE), outcome)
        for box, amount, outcome in specs
    ]


def test_house_bank_pays_1_to_1_less_5_percent() -> None:
    # NSW 14.1, NZ 6.11, ACT 12.6: a $100 win pays $95; the house keeps $5 and the loser's $50.
    s = settle_round(
        Profile.NSW,
        TABLE,
        BankHolder.HOUSE,
        accepted(Profile.NSW, BankHolder.HOUSE, (2, 10_000, W), (3, 5_000, L), (4, 2_000, P)),
    )
    by_box = {r.accepted.wager.box: r for r in s.results}
    assert by_box[2].net == 9_500 and by_box[2].commission == 500
    assert by_box[2].paid_back == 19_500
    assert by_box[3].net == -5_000 and by_box[4].net == 0 and by_box[4].paid_back == 2_000
    assert s.house_net == 5_000 - 10_000 + 500
    assert s.conserved


def test_commission_rounds_down_to_the_chips() -> None:
    # NSW 14.3: 5% of $30 is $1.50; with $1 chips the house takes $1.
    money = TableMoney(minimum=1000, maximum=None, chip_unit=100)
    assert money.commission_chips(3_000) == 100
    assert money.commission_chips(2_000) == 100
    assert money.commission_chips(1_900) == 0
    # ACT 12.9: a lower rate.
    assert TableMoney(minimum=1000, maximum=None, commission_bp=250).commission_chips(8_000) == 200


def test_commission_above_five_percent_is_refused() -> None:
    with pytest.raises(InputError, match="commission_bp 600"):
        TableMoney(minimum=1000, maximum=None, commission_bp=600)


def test_player_banker_pays_winners_from_losers_and_pays_commission_on_net_win() -> None:
    # NSW 13.2.6-13.2.7, 14.2; NZ 11.2(i), 6.14.
    wagers = accepted(Profile.NSW, BankHolder.PLAYER, (2, 3_000, W), (3, 2_000, L), (4, 5_000, L))
    s = settle_round(
        Profile.NSW, TABLE, BankHolder.PLAYER, wagers, banker_box=5, banker_wager=10_000
    )
    assert s.banker_gross == 4_000
    assert s.banker_commission == 200
    assert s.banker_net == 3_800
    # The winner's 5% of $30 is $1.50, collectable as $1 (NSW 14.3); the banker's $2.
    assert s.house_net == 100 + 200
    assert s.conserved


def test_player_banker_shortfall_comes_from_the_bankers_wager() -> None:
    # NSW 13.2.8, NZ 11.2(j): winners exceed the losing-wager area; no commission on a loss.
    wagers = accepted(Profile.NZ, BankHolder.PLAYER, (2, 6_000, W), (3, 2_000, L))
    s = settle_round(Profile.NZ, TABLE, BankHolder.PLAYER, wagers, banker_box=6, banker_wager=8_000)
    assert s.banker_net == -4_000 and s.banker_commission == 0
    assert s.conserved


def test_player_banker_must_cover_every_wager() -> None:
    # NSW 13.2.2, NZ 11.2(b).
    wagers = accepted(Profile.NSW, BankHolder.PLAYER, (2, 6_000, W), (3, 6_000, L))
    with pytest.raises(InputError, match="does not cover"):
        settle_round(
            Profile.NSW, TABLE, BankHolder.PLAYER, wagers, banker_box=5, banker_wager=10_000
        )


def test_co_bank_splits_the_result_equally_and_commissions_only_the_player_share() -> None:
    # NZ 11.3(j)-(k), ACT 6.5 and 12.8.
    wagers = accepted(Profile.ACT, BankHolder.CO_BANK, (2, 2_000, W), (3, 10_000, L))
    s = settle_round(
        Profile.ACT, TABLE, BankHolder.CO_BANK, wagers, banker_box=4, banker_wager=6_000
    )
    assert s.banker_gross == 8_000
    assert s.banker_net == 4_000 - 200
    assert s.house_net == 4_000 + 100 + 200
    assert s.conserved


def test_co_bank_shortfall_is_shared() -> None:
    # NZ 11.3(l): the shortfall is taken from the co-banking wager, half each; an odd cent stays
    # with the co-banker.
    wagers = accepted(Profile.NZ, BankHolder.CO_BANK, (2, 4_000, W), (3, 2_000, W), (5, 4_000, L))
    s = settle_round(
        Profile.NZ, TABLE, BankHolder.CO_BANK, wagers, banker_box=4, banker_wager=5_000
    )
    assert s.banker_gross == -2_000
    assert s.banker_net == -1_000
    assert s.conserved


def test_nsw_has_no_co_bank_and_co_bank_needs_half() -> None:
    wagers = accepted(Profile.NZ, BankHolder.CO_BANK, (2, 4_000, W))
    with pytest.raises(InputError, match="NSW has no co-banking"):
        settle_round(
            Profile.NSW, TABLE, BankHolder.CO_BANK, wagers, banker_box=4, banker_wager=4_000
        )
    with pytest.raises(InputError, match="under 50%"):
        settle_round(
            Profile.NZ, TABLE, BankHolder.CO_BANK, wagers, banker_box=4, banker_wager=1_900
        )


def test_payment_order_is_counter_clockwise_from_the_chung() -> None:
    # NSW 13.2.7, NZ 11.2(i) as amended: box by box counter-clockwise from the player/banker's box.
    wagers = accepted(Profile.NZ, BankHolder.PLAYER, (2, 2_000, W), (7, 2_000, W), (8, 2_000, W))
    s = settle_round(Profile.NZ, TABLE, BankHolder.PLAYER, wagers, banker_box=6, banker_wager=6_000)
    assert [r.accepted.wager.box for r in s.results] == [7, 8, 2]


def test_over_the_maximum_is_in_action_to_the_maximum() -> None:
    # NSW 10.3, ACT 5.1(d); none when a player banks alone (NSW 10.2, NZ 6.8, ACT 5.3).
    money = TableMoney(minimum=1000, maximum=10_000)
    a = accept(Wager(2, "x", 15_000), Profile.NSW, BankHolder.HOUSE, money)
    assert (a.action, a.returned) == (10_000, 5_000)
    assert accept(Wager(2, "x", 15_000), Profile.NSW, BankHolder.PLAYER, money).action == 15_000
    s = settle_round(Profile.NSW, money, BankHolder.HOUSE, [(a, W)])
    assert s.results[0].won == 10_000 and s.results[0].paid_back == 15_000 + 9_500


def test_below_the_minimum_stands_when_not_rejected() -> None:
    # NSW 10.3, ACT 5.1(c).
    a = accept(Wager(2, "x", 500), Profile.NSW, BankHolder.HOUSE, TABLE)
    assert a.action == 500 and any("below the table minimum" in n for n in a.notes)


def test_nz_wager_must_be_payable_exactly_in_chips() -> None:
    # NZ 6.12-6.13: with $1 chips a win less 5% is exact only on multiples of $20.
    assert largest_exact_wager(2_500, TABLE) == 2_000
    a = accept(Wager(2, "x", 2_500), Profile.NZ, BankHolder.HOUSE, TABLE)
    assert (a.action, a.returned) == (2_000, 500)
    with pytest.raises(InputError, match=r"NZ 6\.12"):
        accept(Wager(2, "x", 1_000), Profile.NZ, BankHolder.HOUSE, TABLE)


def test_act_pays_to_the_lower_multiple_of_the_minimum() -> None:
    # ACT 5.1(b), 15.10: $25 on a $10-minimum table under a multiples notice wins as $20.
    a = accept(Wager(2, "x", 2_500), Profile.ACT, BankHolder.HOUSE, TABLE)
    assert any("ACT 5.1(b)" in n for n in a.notes)
    s = settle_round(Profile.ACT, TABLE, BankHolder.HOUSE, [(a, W)])
    assert s.results[0].won == 2_000 and s.results[0].net == 1_900
    s2 = settle_round(Profile.ACT, TABLE, BankHolder.HOUSE, [(a, W)], multiples_notice=False)
    assert s2.results[0].won == 2_500


def test_house_box_takes_no_wagers_and_three_players_per_box() -> None:
    # NSW 6.10, NZ 11.1(b), ACT 6.9; NSW 9.9, NZ 6.5, ACT 7.4; NSW 9.16.
    with pytest.raises(InputError, match="box 1 holds the house's tiles"):
        accept(Wager(1, "x", 2_000), Profile.NSW, BankHolder.HOUSE, TABLE)
    crowd = [Wager(3, p, 2_000) for p in "abcd"]
    with pytest.raises(InputError, match="box 3 has 4 players"):
        check_box_wagers(crowd, BankHolder.HOUSE, None)
    with pytest.raises(InputError, match="player/banker's"):
        check_box_wagers([Wager(5, "a", 2_000)], BankHolder.PLAYER, 5)
    check_box_wagers(crowd[:3], BankHolder.HOUSE, None)


def test_who_controls_a_box() -> None:
    seated = Wager(3, "seated", 1_000, seated=True, distance_to_dealer=2)
    big = Wager(3, "big", 5_000, distance_to_dealer=1)
    near = Wager(3, "near", 1_000, distance_to_dealer=0)
    # NSW 9.10, 9.10.1 / NZ 7.1(a): the seated player; NSW 9.10.2: at their discretion the
    # highest wager.
    assert box_controller([seated, big], Profile.NSW) == "seated"
    assert box_controller([seated, big], Profile.NSW, seated_defers=True) == "big"
    assert box_controller([seated, big], Profile.NZ, seated_defers=True) == "big"
    # NSW 9.10.3-9.10.4: nobody seated: highest wager, then the wager nearest the dealer.
    assert box_controller([big, near], Profile.NSW) == "big"
    far = Wager(3, "far", 1_000, distance_to_dealer=5)
    assert box_controller([far, near], Profile.NSW) == "near"
    # ACT 7.4(a) puts the highest wager first, even over the seated player.
    assert box_controller([seated, big], Profile.ACT) == "big"
    with pytest.raises(InputError, match=r"ACT 7.4\(c\)"):
        box_controller([far, near], Profile.ACT)
    assert box_controller([far, near], Profile.ACT, nominee="far") == "far"


amounts = st.integers(min_value=1, max_value=600).map(lambda n: n * 1_000)
outcomes = st.sampled_from([W, L, P])


@given(
    profile=st.sampled_from(list(Profile)),
    bank=st.sampled_from(list(BankHolder)),
    specs=st.lists(st.tuples(st.integers(2, 8), amounts, outcomes), min_size=1, max_size=12),
    extra=st.integers(0, 100_000),
    chip=st.sampled_from([25, 50, 100, 500]),
    bp=st.integers(0, 500),
)
def test_money_is_conserved_in_every_settlement(profile, bank, specs, extra, chip, bp) -> None:
    if profile is Profile.NSW and bank is BankHolder.CO_BANK:
        bank = BankHolder.PLAYER
    money = TableMoney(minimum=1_000, maximum=400_000, chip_unit=chip, commission_bp=bp)
    banker_box = 1 if bank is BankHolder.HOUSE else 9
    wagers = []
    for box, amount, outcome in specs:
        try:
            wagers.append((accept(Wager(box, f"p{box}", amount), profile, bank, money), outcome))
        except InputError:
            continue  # NZ 6.12 refuses some amounts outright
    total = sum(a.action for a, _ in wagers)
    stake = total + extra if bank is BankHolder.PLAYER else (total + 1) // 2 + extra
    s = settle_round(
        profile, money, bank, wagers, banker_box=banker_box, banker_wager=stake, n_boxes=9
    )
    assert s.conserved
    for r in s.results:
        assert 0 <= r.commission <= r.won
        assert r.net >= -r.accepted.action
        assert r.paid_back >= 0
    assert s.banker_commission >= 0
    if bank is BankHolder.HOUSE:
        assert s.banker_net == 0
    # The player/banker never loses more than the wager they put up.
    assert s.banker_net >= -stake
