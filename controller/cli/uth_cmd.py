"""`tablectl uth eval|settle|jackpot` and `tablectl math uth` (docs/uth.md).

Amounts on the command line are dollars with at most two decimals (``10``, ``12.50``); every
amount is held and printed as integer cents in JSON.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from controller.cli.uth_args import emit, paytable_args, pool_and_table, pool_args
from controller.games.uth.cards import check_distinct, format_cards, parse_cards
from controller.games.uth.deal import Deal, DealMethod, Misdeal, check_boxes, deal
from controller.games.uth.evaluator import category_of, evaluate, hand_rank
from controller.games.uth.jackpot import (
    JackpotEntry,
    JackpotResult,
    jackpot_round,
)
from controller.games.uth.paytables import (
    BLIND_CATEGORIES,
    TRIPS_CATEGORIES,
    parse_paytable,
)
from controller.games.uth.settlement import Limits, RoundResult, SettlementRules, Spot, settle_round
from controller.games.uth.wagers import BoxWagers, Decision, run_round
from shared.errors import InputError
from shared.money import dollars as _dollars
from shared.money import parse_cents as parse_money


def register(sub: argparse._SubParsersAction, math_sub: argparse._SubParsersAction) -> None:
    """Add this game's commands to the CLI."""
    uth = sub.add_parser("uth", help="Ultimate Texas Hold'em: eval, settle, jackpot")
    uth_sub = uth.add_subparsers(dest="uth_command", required=True, parser_class=type(uth))

    ev = uth_sub.add_parser("eval", help="best five of 5-7 cards: category, rank, best five")
    ev.add_argument("cards", nargs="*", help="5 to 7 cards, e.g. As Td 9h 2c 10s")
    ev.add_argument("--batch", action="store_true", help="one hand per line on stdin -> JSON lines")
    ev.add_argument("--json", action="store_true")
    ev.set_defaults(func=cmd_eval)

    st = uth_sub.add_parser("settle", help="settle a whole round from the dealt cards")
    st.add_argument("--cards", required=True, help="every card in the order dealt")
    st.add_argument(
        "--dealing",
        choices=[m.value for m in DealMethod],
        default="shuffler",
        help="shuffler (rule 7.2, default) or shoe (rule 7.3)",
    )
    st.add_argument(
        "--box",
        action="append",
        required=True,
        metavar="N:ante=A,decision=D",
        help="a box: N:ante=10[,blind=10][,trips=5][,jackpot=1],decision=4x|3x|2x|"
        "1x|fold-preflop|fold-flop|fold-river|concede-Nx (repeat per box)",
    )
    paytable_args(st)
    for spot in Spot:
        st.add_argument(
            f"--{spot.value}-limits",
            metavar="MIN:MAX",
            help=f"table sign limits for {spot.value} wagers in dollars",
        )
    pool_args(st)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_settle)

    jp = uth_sub.add_parser("jackpot", help="the progressive jackpot awards of a round")
    jp.add_argument("--flop", required=True, help="the three flop cards")
    jp.add_argument(
        "--box",
        action="append",
        required=True,
        metavar="N:C,C[:folded]",
        help="a box with a jackpot wager and its hole cards (repeat per box)",
    )
    jp.add_argument("--void", action="store_true", help="void hand or misdeal (rule 15.3.1)")
    pool_args(jp)
    jp.add_argument("--json", action="store_true")
    jp.set_defaults(func=cmd_jackpot)

    m = math_sub.add_parser("uth", help="exact par sheet: hand counts, Trips and jackpot return")
    paytable_args(m, blind=False)
    pool_args(m)
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=_math)


# -- eval ---------------------------------------------------------------------------------------


def _eval_json(tokens: str | Sequence[str]) -> dict[str, Any]:
    cards = parse_cards(tokens)
    if not 5 <= len(cards) <= 7:
        raise InputError(f"need 5 to 7 cards, got {len(cards)}")
    value = evaluate(cards)
    return {
        "category": value.category.label,
        "rank": value.rank,
        "best": format_cards(value.best).split(),
    }


def cmd_eval(args: argparse.Namespace) -> int:
    if args.batch:
        if args.cards:
            raise InputError("--batch reads hands from stdin; give no cards on the command line")
        status = 0
        for number, line in enumerate(sys.stdin, 1):
            try:
                out = _eval_json(line)
            except InputError as exc:  # keep going: one output line per input line, in order
                out = {"error": str(exc), "line": number}
                status = 2
            emit(out)
        return status
    out = _eval_json(args.cards)
    if args.json:
        emit(out)
    else:
        print(f"{out['category']}  rank {out['rank']}  best {' '.join(out['best'])}")
    return 0


# -- settle -------------------------------------------------------------------------------------


def _parse_box(spec: str) -> tuple[int, BoxWagers, Decision]:
    head, sep, rest = spec.partition(":")
    if not sep or not head.strip().isdigit():
        raise InputError(f"bad --box {spec!r}: N:ante=A,decision=D")
    box = check_boxes([int(head)])[0]
    fields: dict[str, str] = {}
    for part in rest.split(","):
        key, eq, value = part.partition("=")
        key = key.strip().lower()
        if not eq or key not in {"ante", "blind", "trips", "jackpot", "decision"}:
            raise InputError(f"bad --box {spec!r}: unknown field {part!r}")
        if key in fields:
            raise InputError(f"bad --box {spec!r}: {key} given twice (rule 5.7)")
        fields[key] = value.strip()
    if "ante" not in fields or "decision" not in fields:
        raise InputError(f"bad --box {spec!r}: needs ante= and decision=")
    ante = parse_money(fields["ante"], "ante")
    wagers = BoxWagers(
        ante=ante,
        blind=parse_money(fields["blind"], "blind") if "blind" in fields else ante,
        trips=parse_money(fields.get("trips", "0"), "trips"),
        jackpot=parse_money(fields.get("jackpot", "0"), "jackpot"),
    )
    return box, wagers, Decision.parse(fields["decision"])


def _rules(args: argparse.Namespace) -> SettlementRules:
    trips = parse_paytable(args.trips_pays, TRIPS_CATEGORIES) if args.trips_pays else None
    blind = parse_paytable(args.blind_pays, BLIND_CATEGORIES) if args.blind_pays else None
    limits = {}
    for spot in Spot:
        text = getattr(args, f"{spot.value}_limits")
        if text:
            low, sep, high = text.partition(":")
            if not sep:
                raise InputError(f"bad --{spot.value}-limits {text!r}: MIN:MAX")
            limits[spot] = Limits(parse_money(low), parse_money(high) if high else None)
    kw: dict[str, Any] = {"limits": limits}
    if trips:
        kw["trips"] = trips
    if blind:
        kw["blind"] = blind
    return SettlementRules(**kw)


def _hand_json(cards: Sequence[int]) -> dict[str, Any]:
    rank = hand_rank(cards)
    return {"cards": format_cards(cards).split(), "category": category_of(rank).label, "rank": rank}


def _round_json(d: Deal, result: RoundResult) -> dict[str, Any]:
    boxes = []
    for b in result.boxes:
        boxes.append(
            {
                "box": b.box,
                "hole": format_cards(d.boxes[b.box]).split(),
                **{k: v for k, v in _hand_json(d.seven(b.box)).items() if k != "cards"},
                "action": b.action.value,
                "spots": [s.as_json() for s in b.spots],
                "net": b.net,
            }
        )
    return {
        "misdeal": False,
        "flop": format_cards(d.flop).split(),
        "turn": format_cards([d.turn]),
        "river": format_cards([d.river]),
        "dealer": {
            **_hand_json(d.dealer_seven()),
            "hole": format_cards(d.dealer).split(),
            "qualifies": result.dealer_qualifies,
        },
        "boxes": boxes,
        "house_net": result.house_net,
    }


def _jackpot_json(result: JackpotResult) -> dict[str, Any]:
    s = result.state
    return {
        "payouts": [p.as_json() for p in result.payouts],
        "house_paid": result.house_paid,
        "pool": {
            "amount": s.amount,
            "reserve": s.reserve,
            "seed": s.seed,
            "carry": str(s.carry),
            "reserve_carry": str(s.reserve_carry),
        },
    }


def cmd_settle(args: argparse.Namespace) -> int:
    parsed = [_parse_box(spec) for spec in args.box]
    boxes = check_boxes([b for b, _, _ in parsed])
    wagers = {b: w for b, w, _ in parsed}
    decisions = {b: d for b, _, d in parsed}
    rules = _rules(args)
    state, table, jp_wager = pool_and_table(args)
    cards = parse_cards(args.cards)
    jp_boxes = [b for b in boxes if wagers[b].jackpot]
    for b in jp_boxes:
        if wagers[b].jackpot != jp_wager:
            raise InputError(f"box {b}: jackpot wager must be {_dollars(jp_wager)} (rule 15.2.3)")
    try:
        d = deal(cards, boxes, DealMethod(args.dealing))
    except Misdeal as exc:
        # 11.1/11.3: every wager is void and returned; 15.3.1: jackpot wagers cancelled.
        out: dict[str, Any] = {
            "misdeal": True,
            "reason": str(exc),
            "returned": [
                {
                    "box": b,
                    "amount": wagers[b].ante
                    + wagers[b].blind
                    + wagers[b].trips
                    + wagers[b].jackpot,
                }
                for b in sorted(boxes, reverse=True)
            ],
        }
        _print_settle(out, args.json)
        return 0
    plays = run_round(wagers, decisions)
    out = _round_json(d, settle_round(d, plays, rules))
    if jp_boxes:
        entries = [
            JackpotEntry(
                b, d.jackpot_hand(b), wagers[b].jackpot, decisions[b].action.value == "fold"
            )
            for b in jp_boxes
        ]
        out["jackpot"] = _jackpot_json(jackpot_round(state, entries, table))
    _print_settle(out, args.json)
    return 0


def _print_settle(out: dict[str, Any], as_json: bool) -> None:
    if as_json:
        emit(out)
        return
    if out["misdeal"]:
        print(out["reason"] + "; all wagers returned (rules 11.3, 15.3.1)")
        for r in out["returned"]:
            print(f"  box {r['box']}: returned {_dollars(r['amount'])}")
        return
    dealer = out["dealer"]
    print(f"board {' '.join(out['flop'])} {out['turn']} {out['river']}")
    print(
        f"dealer {' '.join(dealer['hole'])}: {dealer['category']}"
        f"{'' if dealer['qualifies'] else ' (does not qualify, rule 10.2)'}"
    )
    for b in out["boxes"]:
        print(
            f"box {b['box']} {' '.join(b['hole'])}: {b['category']}, {b['action']}, "
            f"net {_dollars(b['net'])}"
        )
        for s in b["spots"]:
            print(
                f"  {s['spot']:<6} {_dollars(s['placed']):>12} {s['outcome']:<10}"
                f" won {_dollars(s['won']):>12}  rule {s['rule']}"
            )
    print(f"house net {_dollars(out['house_net'])}")
    if "jackpot" in out:
        _print_jackpot(out["jackpot"])


def _print_jackpot(jp: dict[str, Any]) -> None:
    for p in jp["payouts"]:
        print(
            f"jackpot box {p['box']}: {p['award']} {_dollars(p['amount'])} "
            f"(meter {_dollars(p['from_meter'])}, house {_dollars(p['from_house'])}, "
            f"rule {p['rule']})"
        )
    pool = jp["pool"]
    print(f"pool now {_dollars(pool['amount'])}, reserve {_dollars(pool['reserve'])}")


# -- jackpot ------------------------------------------------------------------------------------


def cmd_jackpot(args: argparse.Namespace) -> int:
    state, table, wager = pool_and_table(args)
    flop = parse_cards(args.flop, count=3)
    entries = []
    for spec in args.box:
        head, sep, rest = spec.partition(":")
        if not sep or not head.strip().isdigit():
            raise InputError(f"bad --box {spec!r}: N:C,C[:folded]")
        hole_text, _, flag = rest.partition(":")
        if flag not in ("", "folded"):
            raise InputError(f"bad --box {spec!r}: unknown flag {flag!r}")
        hole = parse_cards(hole_text, count=2)
        entries.append(
            JackpotEntry(check_boxes([int(head)])[0], (*hole, *flop), wager, flag == "folded")
        )
    check_distinct([*flop, *(c for e in entries for c in e.cards[:2])])
    out = _jackpot_json(jackpot_round(state, entries, table, void=args.void))
    if args.json:
        emit(out)
    else:
        if not out["payouts"]:
            print("no jackpot awards")
        _print_jackpot(out)
    return 0


def _math(args: argparse.Namespace) -> int:
    from controller.cli.uth_math_cmd import cmd_math  # its imports load the par-sheet tables

    return cmd_math(args)
