"""Issue 13, the pure rules: each test names the clause the audit found the engine breaking.

ACT 15.10 short payment, ACT 5.4 / NZ 5.1(c) co-bank limits, ACT 13.8 in `tablectl paigow settle`,
concession (NSW 12.17, NZ 10.13; none in ACT), NSW 9.14 and ACT 7.3 wager layouts.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.cli.paigow_cmd import settle_document
from controller.config import ConfigError, validate_text
from controller.games.paigow.bank import BankHolder, BankState
from controller.games.paigow.houseway import house_way
from controller.games.paigow.money import BASIS_POINTS, TableMoney
from controller.games.paigow.outcome import Outcome
from controller.games.paigow.profiles import Profile
from controller.games.paigow.resolve import same_setting
from controller.games.paigow.settings import parse_setting
from controller.games.paigow.settlement import settle_round
from controller.games.paigow.tiles import parse_tiles
from controller.games.paigow.wagers import (
    Wager,
    accept,
    check_round_wagers,
    house_way_boxes,
    layout_breach,
)
from controller.rounds.paigow import PaiGowConfig
from controller.rounds.paigow.result import round_result, to_wager
from shared.errors import InputError
from tests.support.paigow_strategies import dealt_settings
from tests.support.paigow_table import Table, texts

W, L, P = Outcome.WIN, Outcome.LOSE, Outcome.PUSH
H, CO, PB = BankHolder.HOUSE, BankHolder.CO_BANK, BankHolder.PLAYER


# -- ACT 15.10: paid in full unless the rule's condition holds ------------------------------------


def _ceil_to(amount: int, unit: int) -> int:
    return -(-amount // unit) * unit


@given(
    chip=st.sampled_from([5, 25, 50, 100, 500]),
    min_chips=st.integers(1, 40),
    chips=st.integers(1, 400),
    bp=st.sampled_from([0, 250, 500]) | st.integers(0, 500),
    notice=st.booleans(),
    up=st.booleans(),
)
def test_act_win_is_paid_in_full_unless_15_10_condition_holds(
    chip: int, min_chips: int, chips: int, bp: int, notice: bool, up: bool
) -> None:
    # ACT 12.6: even money less commission. ACT 15.10 cuts a win down to the lower multiple of the
    # minimum only when a multiples notice is up, the wager is not a multiple, AND the win "cannot
    # be paid in full from the table float"; without a notice an unpayable win is paid to the next
    # higher payable amount. Under a notice the rule is silent on the rest: `unpayable_up`.
    money = TableMoney(
        minimum=min_chips * chip, maximum=None, chip_unit=chip, commission_bp=bp, unpayable_up=up
    )
    amount = chips * chip
    acc = accept(Wager(2, "x", amount), Profile.ACT, H, money, notice)
    s = settle_round(Profile.ACT, money, H, [(acc, W)], multiples_notice=notice)
    (r,) = s.results
    exact_commission, fraction = divmod(amount * bp, BASIS_POINTS)
    payable = fraction == 0 and exact_commission % chip == 0
    condition = notice and not payable and amount % money.minimum != 0 and amount > money.minimum
    if payable:
        assert (r.won, r.commission, r.net) == (amount, exact_commission, amount - exact_commission)
    else:
        assert r.won == (amount - amount % money.minimum if condition else amount)
        exact_net = r.won * (BASIS_POINTS - bp)  # in 1/10000 cent
        down = exact_net // BASIS_POINTS // chip * chip
        up_to = _ceil_to(-(-exact_net // BASIS_POINTS), chip)
        assert r.net == (down if notice and not up else up_to)
    assert r.net % chip == 0 and 0 <= r.commission <= r.won and s.conserved


def test_act_15_10_example_a_payable_win_off_the_multiple_is_paid_in_full() -> None:
    # $30 on a $20 table with 25-cent chips: 5% is $1.50, payable, so $28.50 is paid (today's
    # main paid $19 as if the wager were $20).
    money = TableMoney(minimum=2000, maximum=None, chip_unit=25)
    acc = accept(Wager(2, "x", 3000), Profile.ACT, H, money)
    (r,) = settle_round(Profile.ACT, money, H, [(acc, W)]).results
    assert (r.won, r.commission, r.net) == (3000, 150, 2850)
    # With $1 chips $1.50 cannot be paid: the lower multiple, $20, wins $19.
    money = TableMoney(minimum=2000, maximum=None, chip_unit=100)
    acc = accept(Wager(2, "x", 3000), Profile.ACT, H, money)
    (r,) = settle_round(Profile.ACT, money, H, [(acc, W)]).results
    assert (r.won, r.net) == (2000, 1900)


# -- ACT 5.4, NZ 5.1(c): co-banking limits ---------------------------------------------------------


def test_act_co_bank_has_no_box_maximum_nz_co_bank_keeps_it() -> None:
    money = TableMoney(minimum=1000, maximum=10_000)
    # ACT 5.4: "no box maximums will apply" while the house co-banks.
    act = accept(Wager(2, "x", 30_000), Profile.ACT, CO, money)
    assert (act.action, act.returned) == (30_000, 0)
    s = settle_round(Profile.ACT, money, CO, [(act, W)], banker_box=4, banker_wager=15_000)
    assert s.results[0].won == 30_000 and s.conserved
    # The house alone still caps at the maximum (ACT 5.1(d)); NZ 6.8 lifts the maximum only for a
    # player/banker "other than as a co-banker".
    assert accept(Wager(2, "x", 30_000), Profile.ACT, H, money).action == 10_000
    assert accept(Wager(2, "x", 30_000), Profile.NZ, CO, money).action == 10_000
    # The other reading of each, as a table option (docs/paigow.md, "What a regulator should
    # confirm").
    nz_other = TableMoney(minimum=1000, maximum=10_000, cobank_box_maximum=False)
    assert accept(Wager(2, "x", 30_000), Profile.NZ, CO, nz_other).action == 30_000
    act_other = TableMoney(minimum=1000, maximum=10_000, cobank_box_maximum=True)
    assert accept(Wager(2, "x", 30_000), Profile.ACT, CO, act_other).action == 10_000


@pytest.mark.parametrize("profile", [Profile.NZ, Profile.ACT])
def test_co_bank_house_liability_is_the_displayed_maximum(profile: Profile) -> None:
    # NZ 5.1(c) "each covering 50% ... up to the displayed maximum", ACT 5.4 "a maximum house
    # liability will be displayed": $400 in action needs the house to cover $200.
    money = TableMoney(minimum=1000, maximum=None, house_liability=15_000)
    wagers = [accept(Wager(b, f"p{b}", 20_000), profile, CO, money) for b in (2, 3)]
    with pytest.raises(InputError, match=r"maximum liability of 15000 \(NZ 5.1\(c\), ACT 5.4\)"):
        won = [(a, W) for a in wagers]
        settle_round(profile, money, CO, won, banker_box=5, banker_wager=20_000)
    with pytest.raises(InputError, match="wager of p3 on box 3"):
        check_round_wagers(wagers, profile, CO, money, banker_box=5)
    # The house banking alone is not limited by it.
    check_round_wagers(
        [accept(Wager(b, f"p{b}", 20_000), profile, H, money) for b in (2, 3)],
        profile, H, money, banker_box=None,
    )


amounts = st.integers(1, 60).map(lambda n: n * 2_000)


@given(
    profile=st.sampled_from([Profile.NZ, Profile.ACT]),
    specs=st.lists(st.tuples(st.integers(2, 8), amounts, st.sampled_from([W, L, P])), max_size=10),
    liability=st.integers(1, 100).map(lambda n: n * 1_000),
)
def test_co_bank_house_never_loses_more_than_its_displayed_liability(
    profile: Profile, specs: list[tuple[int, int, Outcome]], liability: int
) -> None:
    # NZ 5.1(c), ACT 5.4: settled or refused, never a house share of the bank beyond the maximum.
    money = TableMoney(minimum=1000, maximum=None, house_liability=liability)
    wagers = [(accept(Wager(b, f"p{b}", a), profile, CO, money), o) for b, a, o in specs]
    stake = (sum(a.action for a, _ in wagers) + 1) // 2
    try:
        s = settle_round(profile, money, CO, wagers, banker_box=1, banker_wager=stake, n_boxes=8)
    except InputError as e:
        assert "ACT 5.4" in str(e) and 2 * liability < sum(a.action for a, _ in wagers)
        return
    commissions = sum(r.commission for r in s.results) + s.banker_commission
    assert s.house_net - commissions >= -liability
    assert s.conserved


# -- NSW 9.14 and ACT 7.3: where a player may wager ------------------------------------------------


def test_nsw_9_14_no_additional_wager_on_a_box_nobody_else_controls() -> None:
    alone2 = Wager(2, "ann", 2000, seated=True)
    # ann controls box 2 and adds a wager on box 5, which nobody else plays: refused.
    breach = layout_breach([alone2, Wager(5, "ann", 1000)], Profile.NSW, H)
    assert breach is not None and breach[0] == 1 and "NSW 9.14" in breach[1]
    # On box 5 controlled by the seated bob she may back him (NSW 9.13).
    ok = [alone2, Wager(5, "bob", 1000, seated=True), Wager(5, "ann", 3000)]
    assert layout_breach(ok, Profile.NSW, H) is None
    # Without a seated player her larger wager would control box 5 (NSW 9.10.3): refused.
    bigger = [alone2, Wager(5, "bob", 1000), Wager(5, "ann", 3000)]
    breach = layout_breach(bigger, Profile.NSW, H)
    assert breach is not None and breach[0] == 2 and "box 5" in breach[1]
    # NZ and ACT have no such rule (NZ 7.2 lets the dealer set the second box instead).
    assert layout_breach([alone2, Wager(5, "ann", 1000)], Profile.NZ, H) is None


@pytest.mark.parametrize(
    ("amounts", "refused"),
    [((1000, 1000), True), ((1000, 1500), True), ((1000, 2000), False), ((5000, 2000), False)],
)
def test_act_7_3_lone_player_on_two_boxes_one_wager_at_least_double(
    amounts: tuple[int, int], refused: bool
) -> None:
    wagers = [Wager(2, "ann", amounts[0]), Wager(3, "ann", amounts[1])]
    breach = layout_breach(wagers, Profile.ACT, H)
    assert (breach is not None) is refused
    if breach:
        assert breach[0] == 1 and "ACT 7.3" in breach[1]
    # With a second player at the table 7.3 does not apply.
    assert layout_breach([*wagers, Wager(4, "bob", 1000)], Profile.ACT, H) is None


def test_act_7_3_a_lone_player_has_two_boxes_at_most() -> None:
    wagers = [Wager(2, "ann", 1000), Wager(3, "ann", 2000), Wager(4, "ann", 8000)]
    breach = layout_breach(wagers, Profile.ACT, H)
    assert breach is not None and breach[0] == 2 and "two boxes at most" in breach[1]


def test_round_machine_refuses_the_same_layouts() -> None:
    # NSW 9.14 at the table: the wager is refused with a log line and the state is unchanged.
    t = Table(Profile.NSW)
    t.send("table.open")
    t.send("dealer.wager", box=2, player="ann", amount=2000, seated=True)
    before = t.m.to_json(t.state)
    assert "NSW 9.14" in texts(t.send("dealer.wager", box=5, player="ann", amount=1000))
    assert t.m.to_json(t.state) == before
    t.send("dealer.wager", box=5, player="bob", amount=1000, seated=True)
    t.send("dealer.wager", box=5, player="ann", amount=1000)
    assert len(t.state.wagers) == 3
    # bob withdraws: ann's wager on box 5 is now on a box nobody else controls; no more bets
    # returns it (NSW 9.14) and the round goes on.
    t.send("dealer.wager_remove", box=5, player="bob")
    effects = t.send("dealer.no_more_bets")
    assert "NSW 9.14" in texts(effects)
    assert [(w["box"], w["player"]) for w in t.state.wagers] == [(2, "ann")]
    # ACT 7.3 at the table.
    a = Table(Profile.ACT)
    a.send("table.open")
    a.send("dealer.wager", box=2, player="ann", amount=1000)
    assert "ACT 7.3" in texts(a.send("dealer.wager", box=3, player="ann", amount=1000))
    a.send("dealer.wager", box=3, player="ann", amount=2000)
    assert len(a.state.wagers) == 2


# -- one settlement path: `tablectl paigow settle` and the round machine ---------------------------

BANK_TILES = ["6-6", "4-5", "3-3", "1-2"]


def _wrong_house_setting(profile: Profile) -> str:
    proper = house_way(parse_tiles(BANK_TILES, 4), profile)
    for other in ("6-6 3-3 / 4-5 1-2", "6-6 1-2 / 4-5 3-3", "4-5 3-3 / 6-6 1-2"):
        try:
            s = parse_setting(other)
        except InputError:
            continue
        if not same_setting(s, proper):
            return other
    raise AssertionError("no other setting")


def _doc(profile: Profile, bank_hand: Any, hands: dict[str, Any], wagers: list[dict[str, Any]],
         holder: str = "house") -> dict[str, Any]:
    return {
        "table": {"minimum": 1000, "maximum": 500000, "chip_unit": 100},
        "bank": {"holder": holder, "box": 1 if holder == "house" else 7, "wager": 100_000,
                 "hand": bank_hand},
        "hands": hands,
        "wagers": wagers,
    }


HANDS = {"2": "1-1 4-4 / 5-5 2-2", "4": "1-3 1-3 / 5-6 2-6"}
WAGERS = [{"box": 2, "player": "ann", "amount": 5000, "seated": True},
          {"box": 4, "player": "cat", "amount": 10000, "seated": True}]


def test_settle_resets_a_wrongly_set_house_hand_in_act_13_8() -> None:
    wrong = _wrong_house_setting(Profile.ACT)
    out = settle_document(_doc(Profile.ACT, wrong, HANDS, WAGERS), Profile.ACT)
    proper = house_way(parse_tiles(BANK_TILES, 4), Profile.ACT)
    assert out["bank"]["hand"] == proper.as_json()
    assert any("ACT 13.8" in a for a in out["alarms"])
    # NSW 15.7: the hand stands, with the same alarm.
    nsw = settle_document(_doc(Profile.NSW, wrong, HANDS, WAGERS), Profile.NSW)
    assert nsw["bank"]["hand"] == parse_setting(wrong).as_json()
    assert any("NSW 15.7" in a for a in nsw["alarms"])


@pytest.mark.parametrize("profile", list(Profile))
@pytest.mark.parametrize("holder", ["house", "co-bank", "player"])
def test_settle_and_the_round_machine_settle_alike(profile: Profile, holder: str) -> None:
    if profile is Profile.NSW and holder == "co-bank":
        holder = "player"
    bank_hand = _wrong_house_setting(profile)
    hands = {**HANDS, "5": {"conceded": True}} if profile is not Profile.ACT else HANDS
    wagers = [*WAGERS, {"box": 5, "player": "dan", "amount": 4000}] if "5" in hands else WAGERS
    if profile is Profile.NZ:  # NZ 6.12: $20 steps with $1 chips
        wagers = [{**w, "amount": 20_000} for w in wagers]
    doc = _doc(profile, bank_hand, hands, wagers, holder)
    cli = settle_document(json.loads(json.dumps(doc)), profile)
    config = PaiGowConfig(profile)
    bank = BankState(profile, holder=BankHolder(holder), box=doc["bank"]["box"])
    rows = [{"seated": False, "distance_to_dealer": 0, **w} for w in wagers]
    banker = None if holder == "house" else {"player": "bnk", "funds": 100_000}
    machine, alarms = round_result(config, bank, banker, rows, [],
                                   {"bank_hand": bank_hand, "hands": hands})
    assert cli["alarms"] == alarms
    assert cli["bank"]["hand"] == machine["bank_hand"]
    settled = machine["settlement"]
    assert [r["net"] for r in cli["results"]] == [r["net"] for r in settled["results"]]
    assert cli["banker"]["net"] == settled["banker_net"]
    assert cli["house_net"] == settled["house_net"]


@pytest.mark.parametrize("profile", [Profile.NSW, Profile.NZ])
def test_settle_refuses_a_concession_from_a_shared_box(profile: Profile) -> None:
    # NSW 12.17, NZ 10.13: "where a player is the only person wagering on a playing area".
    hands = {**HANDS, "2": {"conceded": True}}
    wagers = [*WAGERS, {"box": 2, "player": "bob", "amount": 20000}]
    with pytest.raises(InputError, match="only a player wagering alone may concede"):
        settle_document(_doc(profile, {"tiles": BANK_TILES}, hands, wagers), profile)
    alone = settle_document(_doc(profile, {"tiles": BANK_TILES}, hands, WAGERS), profile)
    assert alone["results"][0]["conceded"] and alone["results"][0]["outcome"] == "lose"


def test_settle_refuses_any_concession_in_act() -> None:
    hands = {**HANDS, "2": {"conceded": True}}
    with pytest.raises(InputError, match="act has no concession rule"):
        settle_document(_doc(Profile.ACT, {"tiles": BANK_TILES}, hands, WAGERS), Profile.ACT)


def test_settle_applies_the_layout_rules() -> None:
    # NSW 9.14 through the command, as at the table.
    wagers = [*WAGERS, {"box": 6, "player": "ann", "amount": 1000}]
    hands = {**HANDS, "6": {"tiles": ["2-4", "1-6", "2-3", "3-6"]}}
    with pytest.raises(InputError, match=r"NSW 9\.14"):
        settle_document(_doc(Profile.NSW, {"tiles": BANK_TILES}, hands, wagers), Profile.NSW)


# -- the readings as table.toml options ------------------------------------------------------------


def _toml(rules: str, paigow: str = "", limits: str = "") -> str:
    example = (Path(__file__).parents[2] / "examples" / "paigow-act.toml").read_text()
    example = example.replace('rules = "act"', f'rules = "{rules}"\n{paigow}')
    if rules != "act":
        example = example.replace("multiples_notice = true", "")
    return example.replace("chip_unit = 100", f"chip_unit = 100\n{limits}")


def test_table_toml_carries_the_co_bank_limits_and_readings_to_the_money() -> None:
    cfg = validate_text(_toml("act", "unpayable_up = false\ncobank_box_maximum = true",
                              "house_liability = 300000"))
    money = cfg.paigow.money
    assert (money.house_liability, money.unpayable_up, money.cobank_box_maximum) == (
        300_000, False, True)
    assert validate_text(_toml("nz")).paigow.money.house_liability is None
    # NSW 11.1 has no co-bank; unpayable_up is an ACT 15.10 reading.
    with pytest.raises(ConfigError, match="house_liability: nsw has no co-banking"):
        validate_text(_toml("nsw", limits="house_liability = 300000"))
    with pytest.raises(ConfigError, match="unpayable_up: applies only to profile act"):
        validate_text(_toml("nz", "unpayable_up = true"))


wager_events = st.lists(
    st.tuples(
        st.sampled_from(["wager", "wager", "wager", "remove"]),
        st.integers(2, 6),
        st.sampled_from(["ann", "bob", "cat"]),
        st.integers(1, 8).map(lambda n: n * 2_000),
        st.booleans(),
    ),
    max_size=14,
)


@given(profile=st.sampled_from(list(Profile)), events=wager_events, co_bank=st.booleans())
def test_no_round_goes_into_play_with_a_layout_the_rules_refuse(
    profile: Profile, events: list[tuple[str, int, str, int, bool]], co_bank: bool
) -> None:
    # NSW 9.14, ACT 7.3, NZ 5.1(c)/ACT 5.4: whatever the dealer keys and withdraws, the wagers in
    # play after no more bets satisfy the same checks `tablectl paigow settle` applies.
    money = TableMoney(minimum=1000, maximum=500_000, house_liability=9_000)
    t = Table(profile, {"money": money})
    t.send("table.open")
    if co_bank and profile is not Profile.NSW:
        t.state = replace(t.state, bank_at_open={**t.state.bank_at_open, "rounds_played": 1})
        t.send("dealer.bank", box=8, holder="co-bank", player="zed", funds=10_000_000)
    for kind, box, player, amount, seated in events:
        if kind == "wager":
            t.send("dealer.wager", box=box, player=player, amount=amount, seated=seated)
        else:
            t.send("dealer.wager_remove", box=box, player=player)
    t.send("dealer.no_more_bets")
    assert t.phase in ("shaking", "cutting")
    holder = BankHolder(t.state.bank["holder"])
    assert holder is (CO if co_bank and profile is not Profile.NSW else H)
    wagers = [Wager(w["box"], w["player"], w["amount"], w["seated"]) for w in t.state.wagers]
    accepted = [accept(w, profile, holder, money) for w in wagers]
    check_round_wagers(accepted, profile, holder, money, t.state.bank["box"])


@st.composite
def rounds(draw: st.DrawFn) -> tuple[Profile, str, dict[str, Any]]:
    """A round as `tablectl paigow settle` reads it: any profile and bank, hands dealt from one set
    and set any legal way (the bank's too), some conceded, wagers from a few players."""
    profile = draw(st.sampled_from(list(Profile)))
    holder = draw(st.sampled_from(["house", "player"] + ([] if profile is Profile.NSW else
                                                         ["co-bank"])))
    boxes = draw(st.lists(st.integers(2, 7), min_size=1, max_size=5, unique=True))
    settings = draw(dealt_settings(len(boxes) + 1))
    hands: dict[str, Any] = {}
    for box, setting in zip(boxes, settings[1:], strict=True):
        spec: Any = " / ".join(" ".join(t.notation for t in h.tiles)
                               for h in (setting.high, setting.low))
        hands[str(box)] = {"conceded": True} if draw(st.integers(0, 9)) == 0 else spec
    bank = settings[0]
    bank_spec = " / ".join(" ".join(t.notation for t in h.tiles) for h in (bank.high, bank.low))
    step = 2000 if profile is Profile.NZ else 1000  # NZ 6.12 with $1 chips
    wagers = [
        {"box": box, "player": draw(st.sampled_from(["ann", "bob", "cat"])),
         "amount": step * draw(st.integers(1, 6)), "seated": draw(st.booleans())}
        for box in boxes for _ in range(draw(st.integers(1, 2)))
    ]
    doc = {
        "table": {"minimum": 1000, "maximum": 8000, "chip_unit": 100, "house_liability": 20_000},
        "bank": {"holder": holder, "box": 1 if holder == "house" else 8, "wager": 100_000,
                 "hand": bank_spec},
        "hands": hands,
        "wagers": wagers,
    }
    return profile, holder, doc


@given(rounds())
def test_settle_and_the_round_machine_agree_on_every_round(
    round_: tuple[Profile, str, dict[str, Any]]
) -> None:
    # One settlement path: the command and the machine settle alike or refuse alike (ACT 13.8,
    # NSW 12.17 / NZ 10.13, NSW 9.14, ACT 7.3, NZ 5.1(c) / ACT 5.4, ACT 15.10 ...).
    profile, holder, doc = round_
    rows = {(w["box"], w["player"]): w for w in doc["wagers"]}  # the machine keys box and player
    doc["wagers"] = list(rows.values())
    money = TableMoney(minimum=1000, maximum=8000, house_liability=20_000)
    bank = BankState(profile, holder=BankHolder(holder), box=doc["bank"]["box"])
    banker = None if holder == "house" else {"player": "zed", "funds": 100_000}
    machine_rows = [{"distance_to_dealer": 0, **w} for w in doc["wagers"]]
    entry = {"bank_hand": doc["bank"]["hand"], "hands": doc["hands"]}
    # NZ 7.2 as the machine finds it (core.py `_house_way_boxes`): nobody chose a box.
    house_way = house_way_boxes([to_wager(w) for w in machine_rows], profile, {})
    try:
        cli = settle_document(json.loads(json.dumps(doc)), profile)
    except InputError as e:
        with pytest.raises(InputError) as machine_error:
            round_result(PaiGowConfig(profile, money=money), bank, banker, machine_rows, [], entry,
                         house_way_boxes=house_way)  # fmt: skip
        assert str(machine_error.value) == str(e)
        return
    machine, alarms = round_result(
        PaiGowConfig(profile, money=money), bank, banker, machine_rows, [], entry,
        house_way_boxes=house_way,
    )
    settled = machine["settlement"]
    assert cli["alarms"] == alarms and cli["bank"]["hand"] == machine["bank_hand"]
    assert [(r["box"], r["player"], r["net"], r["commission"]) for r in cli["results"]] == [
        (r["box"], r["player"], r["net"], r["commission"]) for r in settled["results"]
    ]
    assert (cli["banker"]["net"], cli["house_net"]) == (settled["banker_net"], settled["house_net"])
    assert cli["conserved"]
