"""What `tablectl uth` (uth_cmd.py) and `tablectl math uth` (uth_math_cmd.py) both read and
print: the pay-table and jackpot-pool options, rates, and JSON lines. Its own module so that
neither command module imports the other (tests/test_architecture.py: no import circles, lazy
ones included); uth_cmd.py imports uth_math_cmd.py only when `math uth` runs.

Amounts on the command line are dollars with at most two decimals (``10``, ``12.50``), held as
integer cents."""

from __future__ import annotations

import argparse
import json
from fractions import Fraction
from typing import Any

from controller.games.uth.jackpot import PoolState
from controller.games.uth.parsheet import JACKPOT_EVENTS
from controller.games.uth.paytables import JackpotPayTable
from shared.errors import InputError
from shared.money import parse_cents as parse_money


def paytable_args(p: argparse.ArgumentParser, blind: bool = True) -> None:
    p.add_argument(
        "--trips-pays",
        metavar="50,40,30,8,7,4,3",
        help="Trips odds royal..trips (rule 10.9 by default)",
    )
    if blind:
        p.add_argument(
            "--blind-pays",
            metavar="500,50,10,3,3:2,1",
            help="Blind odds royal..straight (rule 10.12 by default)",
        )


def pool_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("progressive jackpot (rule 15); dollars, rates as 10%%, 0.1 or 1/10")
    g.add_argument("--pool", default="50000", help="meter amount (default 50000)")
    g.add_argument("--seed", default="50000", help="reset amount after a Royal (default 50000)")
    g.add_argument("--reserve", default="0", help="hidden reserve (default 0)")
    g.add_argument("--ceiling", help="meter ceiling; the overflow goes to the reserve")
    g.add_argument("--increment", default="10%", help="meter share of each wager (default 10%%)")
    g.add_argument("--hidden", default="0", help="reserve share of each wager (default 0)")
    g.add_argument("--wager", default="1", help="jackpot wager amount (default 1)")
    g.add_argument("--royal-min", default="50000", help="rule 15.2.9.1 minimum (default 50000)")
    g.add_argument("--royal-share", default="100%", help="rule 15.2.9.1 share (default 100%%)")
    g.add_argument("--sf-min", default="5000", help="rule 15.2.9.2 minimum (default 5000)")
    g.add_argument("--sf-share", default="10%", help="rule 15.2.9.2 share (default 10%%)")
    g.add_argument(
        "--fixed",
        default="500,150,100",
        help="four of a kind, full house, flush awards (default 500,150,100)",
    )
    g.add_argument("--bonus-royal", default="0", help="bonus jackpot when a Royal is won")
    g.add_argument("--bonus-sf", default="0", help="bonus jackpot when a Straight Flush is won")


def parse_rate(text: str, what: str = "rate") -> Fraction:
    """``10%``, ``0.1`` or ``1/10`` -> an exact Fraction."""
    raw = text.strip()
    try:
        value = Fraction(raw[:-1]) / 100 if raw.endswith("%") else Fraction(raw)
    except (ValueError, ZeroDivisionError):
        raise InputError(f"bad {what} {text!r}: e.g. 10%, 0.1 or 1/10") from None
    if not 0 <= value <= 1:
        raise InputError(f"bad {what} {text!r}: must be within 0..100%")
    return value


def pool_and_table(args: argparse.Namespace) -> tuple[PoolState, JackpotPayTable, int]:
    fixed = [parse_money(x, "fixed award") for x in args.fixed.split(",")]
    if len(fixed) != 3:
        raise InputError(f"--fixed {args.fixed!r}: three amounts (quads, full house, flush)")
    table = JackpotPayTable(
        royal_minimum=parse_money(args.royal_min, "--royal-min"),
        royal_share=parse_rate(args.royal_share, "--royal-share"),
        straight_flush_minimum=parse_money(args.sf_min, "--sf-min"),
        straight_flush_share=parse_rate(args.sf_share, "--sf-share"),
        fixed=dict(zip(JACKPOT_EVENTS[2:], fixed, strict=True)),
        bonus_for_royal=parse_money(args.bonus_royal, "--bonus-royal"),
        bonus_for_straight_flush=parse_money(args.bonus_sf, "--bonus-sf"),
    )
    state = PoolState(
        amount=parse_money(args.pool, "--pool"),
        seed=parse_money(args.seed, "--seed"),
        increment=parse_rate(args.increment, "--increment"),
        hidden=parse_rate(args.hidden, "--hidden"),
        reserve=parse_money(args.reserve, "--reserve"),
        ceiling=parse_money(args.ceiling, "--ceiling") if args.ceiling else None,
    )
    wager = parse_money(args.wager, "--wager")
    if wager <= 0:
        raise InputError(f"bad --wager {args.wager!r}: must be more than 0")
    return state, table, wager


def emit(obj: Any) -> None:
    print(json.dumps(obj, separators=(", ", ": ")))
