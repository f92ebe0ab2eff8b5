"""Progressive jackpot awards: one test per sub-rule of 15.2 named in the issue, 15.3.1, the
pool's funding model and money conservation."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.games.uth.deal import DealMethod, deal
from controller.games.uth.jackpot import (
    Award,
    JackpotEntry,
    PoolState,
    award,
    contribute,
    jackpot_round,
)
from controller.games.uth.paytables import JackpotPayTable
from shared.errors import InputError
from tests.support.uth_cards import cards

TABLE = JackpotPayTable()
BONUS = JackpotPayTable(bonus_for_royal=100_000, bonus_for_straight_flush=10_000)
HANDS = {
    "royal": "As Ks Qs Js Ts",
    "royal2": "Ah Kh Qh Jh Th",
    "sf": "9d 8d 7d 6d 5d",
    "sf2": "5c 4c 3c 2c Ac",
    "sf3": "Kh Qh Jh Th 9h",
    "quads": "7c 7d 7h 7s 2c",
    "full": "7c 7d 7h 2s 2c",
    "flush": "Ac 9c 7c 4c 2c",
    "straight": "9c 8d 7h 6s 5c",
    "trips": "7c 7d 7h 3s 2c",
    "nothing": "Ac 9d 7h 4s 2c",
}


def entry(box: int, hand: str, folded: bool = False, wager: int = 100) -> JackpotEntry:
    return JackpotEntry(box, cards(HANDS[hand]), wager, folded)


def pool(amount_dollars: int, **kw) -> PoolState:
    kw.setdefault("seed", 5_000_000)
    return PoolState(amount=amount_dollars * 100, **kw)


def paid(result):
    return [(p.box, p.award, p.amount) for p in result.payouts]


def test_qualifying_hand_is_hole_cards_plus_flop_rule_15_2_6():
    # The box's seven cards make a royal flush only with the turn and river: no jackpot.
    d = deal(cards("Qs Js 2d Ts 3c 4h 5h Ks As"), [1], DealMethod.SHUFFLER)
    assert d.jackpot_hand(1) == cards("Ks As Qs Js 2d")
    result = award(pool(60_000), [JackpotEntry(1, d.jackpot_hand(1))], TABLE)
    assert result.payouts == ()


@pytest.mark.parametrize(
    ("hand", "meter", "expected", "from_house", "rule"),
    [
        ("royal", 30_000, 50_000, 20_000, "15.2.9.1"),  # the $50,000 guarantee is greater
        ("royal", 80_000, 80_000, 0, "15.2.9.1"),  # 100% of the jackpot is greater
        ("sf", 30_000, 5_000, 2_000, "15.2.9.2"),  # $5,000 over 10% of $30,000
        ("sf", 80_000, 8_000, 0, "15.2.9.2"),  # 10% of $80,000
        ("quads", 80_000, 500, 500, "15.2.9.3"),
        ("full", 80_000, 150, 150, "15.2.9.4"),
        ("flush", 80_000, 100, 100, "15.2.9.5"),
    ],
)
def test_winning_events_rule_15_2_8_and_15_2_9(hand, meter, expected, from_house, rule):
    # UTH 15.2.8, 15.2.9
    result = award(pool(meter), [entry(3, hand)], TABLE)
    (p,) = result.payouts
    assert (p.box, p.award.value, p.amount, p.from_house, p.rule) == (
        3,
        {
            "royal": "royal_flush",
            "sf": "straight_flush",
            "quads": "four_of_a_kind",
            "full": "full_house",
            "flush": "flush",
        }[hand],
        expected * 100,
        from_house * 100,
        rule,
    )


@pytest.mark.parametrize("hand", ["straight", "trips", "nothing"])
def test_other_hands_win_nothing_rule_15_2_8(hand):
    assert award(pool(80_000), [entry(1, hand)], TABLE).payouts == ()


def test_event_amounts_are_configurable():
    # UTH 15.2.9: the amounts are the ones the table's signs display, configured.
    table = JackpotPayTable(
        straight_flush_minimum=100_000, straight_flush_share=Fraction(1, 5), fixed={}
    )
    result = award(pool(20_000), [entry(1, "sf"), entry(2, "quads")], table)
    assert paid(result) == [(1, Award.STRAIGHT_FLUSH, 400_000)]


def test_folded_hands_still_qualify_rules_9_6_2_and_10_4_1():
    # UTH 9.6.2, 10.4.1; the sign of 15.1.4 says so.
    result = award(pool(80_000), [entry(2, "royal", folded=True)], TABLE)
    assert paid(result) == [(2, Award.ROYAL_FLUSH, 8_000_000)]


def test_bonus_jackpot_to_every_other_wager_not_the_winner_paid_first_rule_15_2_10():
    # UTH 15.2.10-15.2.10.4: every other player with a jackpot wager is eligible; the bonus
    # amount is the pay table's, as its sign displays (15.2.11).
    entries = [entry(1, "nothing"), entry(2, "sf"), entry(5, "flush"), entry(6, "trips")]
    result = award(pool(80_000), entries, BONUS)
    assert paid(result) == [
        (6, Award.BONUS, 10_000),  # 15.2.10.2, right to left (15.2.12)
        (5, Award.BONUS, 10_000),
        (5, Award.FLUSH, 10_000),
        (1, Award.BONUS, 10_000),
        (2, Award.STRAIGHT_FLUSH, 800_000),  # 15.2.10.3: no bonus to the winner; 15.2.10.4 last
    ]


def test_bonus_at_the_royal_amount_when_a_royal_is_won_and_none_without_a_winner():
    result = award(pool(80_000), [entry(1, "royal"), entry(2, "sf"), entry(3, "nothing")], BONUS)
    assert [(p.box, p.amount) for p in result.payouts if p.award is Award.BONUS] == [(3, 100_000)]
    result = award(pool(80_000), [entry(1, "quads"), entry(3, "nothing")], BONUS)
    assert all(p.award is not Award.BONUS for p in result.payouts)
    # not offered (the default table): no bonus
    result = award(pool(80_000), [entry(1, "royal"), entry(3, "nothing")], TABLE)
    assert [p.award for p in result.payouts] == [Award.ROYAL_FLUSH]


def test_payment_order_right_to_left_from_dealers_right_rule_15_2_12():
    entries = [entry(1, "flush"), entry(7, "full"), entry(4, "quads")]
    assert [p.box for p in award(pool(80_000), entries, TABLE).payouts] == [7, 4, 1]


def test_several_royals_share_the_pool_rule_15_2_13_1():
    # UTH 15.2.13, 15.2.13.1
    result = award(pool(150_000), [entry(1, "royal"), entry(4, "royal2")], TABLE)
    assert paid(result) == [(4, Award.ROYAL_FLUSH, 7_500_000), (1, Award.ROYAL_FLUSH, 7_500_000)]
    assert result.state.amount == 5_000_000  # reset to the seed


def test_several_royals_each_get_the_minimum_when_greater_rule_15_2_13_1():
    result = award(pool(60_000), [entry(1, "royal"), entry(4, "royal2")], TABLE)
    assert [(p.amount, p.from_meter, p.from_house) for p in result.payouts] == [
        (5_000_000, 3_000_000, 2_000_000)
    ] * 2


def test_royal_share_rounds_down_and_the_remainder_stays_in_the_pool():
    state = PoolState(amount=10_000_001, seed=5_000_000)
    entries = [entry(1, "royal"), entry(2, "royal2"), entry(3, "royal")]
    with pytest.raises(InputError, match="one jackpot wager per box"):
        award(state, [*entries, entry(3, "royal")], TABLE)
    result = award(state, entries, TABLE)
    assert {p.amount for p in result.payouts} == {5_000_000}  # minimum beats 3,333,333
    assert {p.from_meter for p in result.payouts} == {3_333_333}
    assert result.state.amount == 5_000_000 + 2  # 10,000,001 - 3 * 3,333,333 = 2 cents


def test_several_straight_flushes_rule_15_2_13_2():
    # UTH 15.2.13, 15.2.13.2
    # Interpretation: k winners share the aggregate of k successive 10% payouts, each from the
    # meter left by the previous one: $100,000 -> $10,000 + $9,000 = $19,000 -> $9,500 each.
    result = award(pool(100_000), [entry(2, "sf"), entry(5, "sf2")], TABLE)
    assert paid(result) == [(5, Award.STRAIGHT_FLUSH, 950_000), (2, Award.STRAIGHT_FLUSH, 950_000)]
    assert result.state.amount == 10_000_000 - 1_900_000
    # three winners on $1,000,000: 100,000 + 90,000 + 81,000 = 271,000 -> $90,333.33 each, the
    # cent remainder stays in the meter
    result = award(pool(1_000_000), [entry(1, "sf"), entry(2, "sf2"), entry(3, "sf3")], TABLE)
    assert {p.amount for p in result.payouts} == {9_033_333}
    assert result.state.amount == 100_000_000 - 3 * 9_033_333


def test_several_straight_flushes_each_get_the_minimum_when_greater_rule_15_2_13_2():
    # $40,000: 4,000 + 3,600 = 7,600 -> 3,800 each < $5,000: each gets $5,000
    result = award(pool(40_000), [entry(2, "sf"), entry(5, "sf2")], TABLE)
    assert [(p.amount, p.from_meter) for p in result.payouts] == [(500_000, 380_000)] * 2
    assert result.state.amount == 4_000_000 - 760_000


def test_straight_flush_paid_before_royal_rule_15_2_14():
    # UTH 15.2.14
    # The Straight Flush takes 10% of $100,000 first; the Royal gets the remaining $90,000.
    result = award(pool(100_000), [entry(1, "royal"), entry(6, "sf")], TABLE)
    assert paid(result) == [(6, Award.STRAIGHT_FLUSH, 1_000_000), (1, Award.ROYAL_FLUSH, 9_000_000)]


def test_void_hand_or_misdeal_cancels_the_jackpot_wagers_rule_15_3_1():
    # UTH 15.3-15.3.1
    state = pool(80_000, increment=Fraction(1, 5))
    entries = [entry(1, "royal"), entry(3, "nothing", wager=500)]
    result = jackpot_round(state, entries, TABLE, void=True)
    assert paid(result) == [(3, Award.REFUND, 500), (1, Award.REFUND, 100)]
    assert result.state == state


def test_contributions_are_exact_and_carry_sub_cents():
    state = pool(50_000, increment=Fraction(1, 3), hidden=Fraction(1, 20))
    after = contribute(contribute(state, [100]), [100, 100])
    assert after.amount == 5_000_000 + 100  # 300 * 1/3
    assert after.carry == 0
    one = contribute(state, [100])
    assert (one.amount, one.carry) == (5_000_033, Fraction(1, 3))
    assert (after.reserve, after.reserve_carry) == (15, 0)


def test_ceiling_overflows_into_the_reserve():
    state = PoolState(
        amount=9_999_990, seed=5_000_000, increment=Fraction(1, 2), ceiling=10_000_000
    )
    after = contribute(state, [100])
    assert (after.amount, after.reserve) == (10_000_000, 40)


def test_reset_is_funded_by_the_reserve_then_the_house():
    state = PoolState(amount=6_000_000, seed=5_000_000, reserve=3_000_000)
    result = award(state, [entry(1, "royal")], TABLE)
    assert (result.state.amount, result.state.reserve, result.seed_from_house) == (
        5_000_000,
        0,
        2_000_000,
    )


# --- conservation ------------------------------------------------------------------------------

hands = st.sampled_from(sorted(HANDS))


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(st.integers(1, 7), hands, st.booleans()), max_size=7, unique_by=lambda t: t[0]
    ),
    st.integers(0, 20_000_000),
    st.integers(0, 10_000_000),
    st.integers(0, 8_000_000),
    st.fractions(0, Fraction(1, 2), max_denominator=1000),
    st.fractions(0, Fraction(1, 2), max_denominator=1000),
    st.sampled_from([TABLE, BONUS]),
    st.booleans(),
)
def test_money_is_conserved(boxes, amount, seed, reserve, inc, hidden, table, void):
    state = PoolState(amount, seed, inc, hidden, reserve)
    entries = [entry(b, h, f, wager=100 * b) for b, h, f in boxes]
    result = jackpot_round(state, entries, table, void=void)
    wagers = sum(e.wager for e in entries)
    paid_out = sum(p.amount for p in result.payouts)
    if void:
        assert paid_out == wagers and result.state == state
        return
    assert state.total + wagers * (inc + hidden) + result.house_paid == (
        result.state.total + paid_out
    )
    assert all(p.from_meter >= 0 and p.from_house >= 0 for p in result.payouts)
    assert result.state.amount >= 0 and result.state.reserve >= 0
    progressive = [
        p for p in result.payouts if p.award in (Award.ROYAL_FLUSH, Award.STRAIGHT_FLUSH)
    ]
    assert result.payouts[len(result.payouts) - len(progressive) :] == tuple(progressive)
    won = {p.box for p in progressive}
    assert not any(p.box in won for p in result.payouts if p.award is Award.BONUS)
