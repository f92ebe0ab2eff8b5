"""`tablectl uth eval|settle|jackpot` and `tablectl math uth`: output shapes and exit codes."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli import uth_cmd
from shared.errors import InputError


def run(argv: list[str], stdin: str = "", capsys=None) -> tuple[int, str, str]:
    """Parse with this game's commands only and handle errors the way main() does."""
    parser = argparse.ArgumentParser(prog="tablectl")
    sub = parser.add_subparsers(dest="command", required=True)
    math_sub = sub.add_parser("math").add_subparsers(dest="math_game", required=True)
    uth_cmd.register(sub, math_sub)
    args = parser.parse_args(argv)
    old = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        code = args.func(args)
    except InputError as exc:
        print(f"tablectl: error: {exc}", file=sys.stderr)
        code = 2
    finally:
        sys.stdin = old
    out, err = capsys.readouterr()
    return code, out, err


def test_eval_json(capsys):
    code, out, _ = run(
        ["uth", "eval", "As", "Kd", "10h", "Js", "Qc", "2c", "2d", "--json"], capsys=capsys
    )
    assert code == 0
    assert json.loads(out) == {
        "category": "straight",
        "rank": 5863,
        "best": ["As", "Kd", "Qc", "Js", "Th"],
    }


def test_eval_bad_card_names_it(capsys):
    code, _, err = run(["uth", "eval", "As", "Kd", "Th", "Js", "Qx"], capsys=capsys)
    assert code == 2 and "'Qx'" in err and err.count("\n") == 1


def test_eval_batch_one_json_line_per_input_line_in_order(capsys):
    stdin = "As Ks Qs Js Ts\n2c 3c\n5c 4d 3h 2s Ah 9d 9c\n"
    code, out, _ = run(["uth", "eval", "--batch"], stdin, capsys)
    lines = [json.loads(x) for x in out.splitlines()]
    assert code == 2  # one bad line
    assert [x.get("category") for x in lines] == ["royal_flush", None, "straight"]
    assert lines[1]["line"] == 2


def test_settle_whole_round_json(capsys):
    argv = [
        "uth",
        "settle",
        "--cards",
        "6c 7d 8h Kc 2d Kh 3c 9s Ts Ah Ad 4s 5s",
        "--box",
        "1:ante=10,trips=5,jackpot=1,decision=4x",
        "--box",
        "5:ante=10,decision=fold-flop,jackpot=1",
        "--box",
        "3:ante=10,decision=concede-2x",
        "--json",
    ]
    code, out, _ = run(argv, capsys=capsys)
    result = json.loads(out)
    assert code == 0 and result["misdeal"] is False
    assert [b["box"] for b in result["boxes"]] == [5, 3, 1]  # from the dealer's right (10.4)
    nets = {b["box"]: b["net"] for b in result["boxes"]}
    assert nets == {5: -2000, 3: -4000, 1: 1000 + 1000 + 4000 + 2000}
    assert result["house_net"] == -sum(nets.values())
    assert result["dealer"]["qualifies"] is True
    assert result["jackpot"]["pool"]["amount"] == 5_000_000 + 20  # 2 x $1 x 10%


def test_settle_misdeal_returns_everything(capsys):
    argv = [
        "uth",
        "settle",
        "--cards",
        "6c 7d 8h Kc 2d Kh 3c 9s Ts Ah",
        "--box",
        "1:ante=10,decision=4x",
        "--box",
        "2:ante=5,trips=1,decision=1x",
        "--json",
    ]
    code, out, _ = run(argv, capsys=capsys)
    result = json.loads(out)
    assert code == 0 and result["misdeal"] is True and "11.1" in result["reason"]
    assert result["returned"] == [{"box": 2, "amount": 1100}, {"box": 1, "amount": 2000}]


@pytest.mark.parametrize(
    ("box", "message"),
    [
        ("1:ante=10,blind=5,decision=4x", "5.3"),
        ("1:ante=10,decision=2.5x", "'2.5x'"),
        ("1:ante=10.001,decision=4x", "'10.001'"),
        ("9:ante=10,decision=4x", "bad box 9"),
        ("1:ante=10,tips=5,decision=4x", "'tips=5'"),
        ("1:ante=10,ante=20,decision=4x", "ante given twice (rule 5.7)"),  # one wager a spot
        ("1:ante=10,jackpot=3,decision=4x", "jackpot wager must be $1.00 (rule 15.2.3)"),
    ],
)
def test_settle_bad_box_names_the_token(capsys, box, message):
    argv = ["uth", "settle", "--cards", "6c 7d 8h Kc 2d Kh 3c 9s Ts", "--box", box]
    code, _, err = run(argv, capsys=capsys)
    assert code == 2 and message in err


def test_jackpot_awards_in_payment_order(capsys):
    argv = [
        "uth",
        "jackpot",
        "--flop",
        "Qh Jh Th",
        "--box",
        "7:Ah,Kh",
        "--box",
        "2:9h,8h",
        "--box",
        "1:2c,2d:folded",
        "--bonus-sf",
        "10",
        "--bonus-royal",
        "100",
        "--pool",
        "120000",
        "--increment",
        "0",
        "--json",
    ]
    code, out, _ = run(argv, capsys=capsys)
    result = json.loads(out)
    assert code == 0
    assert [(p["box"], p["award"], p["amount"]) for p in result["payouts"]] == [
        (1, "bonus_jackpot", 10_000),
        (2, "straight_flush", 1_200_000),
        (7, "royal_flush", 10_800_000),
    ]
    assert result["pool"]["amount"] == 5_000_000


def test_jackpot_duplicate_card_is_an_error(capsys):
    code, _, err = run(["uth", "jackpot", "--flop", "Qh Jh Th", "--box", "7:Ah,Qh"], capsys=capsys)
    assert code == 2 and "duplicate card 'Qh'" in err


def test_math_uth_json(capsys):
    code, out, _ = run(["math", "uth", "--json"], capsys=capsys)
    sheet = json.loads(out)
    assert code == 0
    assert sum(sheet["seven_card"].values()) == 133_784_560
    assert sum(sheet["five_card"].values()) == 2_598_960
    assert set(sheet["trips"]["hit_frequencies"]) == {
        "royal_flush",
        "straight_flush",
        "four_of_a_kind",
        "full_house",
        "flush",
        "straight",
        "three_of_a_kind",
    }
    assert 0.9 < sheet["trips"]["return"] < 1
    assert sheet["jackpot"]["probability"]["royal_flush"]["exact"] == "1/649740"


def test_real_entry_point_exits_2_with_one_line():
    exe = Path(sys.executable).with_name("tablectl")
    proc = subprocess.run(
        [str(exe), "uth", "eval", "As", "As", "Kd", "Qd", "Jd"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr == "tablectl: error: duplicate card 'As' (already given as 'As')\n"
