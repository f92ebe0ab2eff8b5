"""`tablectl paigow houseway|compare|settle` and `tablectl math paigow`.

NSW 5.1: "a computer may be used by the House to check the correct setting of the House way".
"""

from __future__ import annotations

import argparse
import sys
import time
from decimal import Decimal, InvalidOperation
from typing import Any

from controller.cli.common import (
    emit,
    paigow_parsheet,
    parse_json_object,
    progress_printer,
    run_batch,
)
from controller.games.paigow.bank import BankHolder
from controller.games.paigow.houseway import explain, house_way, house_way_function
from controller.games.paigow.money import BASIS_POINTS, STANDARD_COMMISSION_BP, TableMoney
from controller.games.paigow.outcome import Outcome, player_outcome
from controller.games.paigow.profiles import Profile, parse_profile
from controller.games.paigow.resolve import resolve_round
from controller.games.paigow.settings import Setting, make_setting, parse_setting
from controller.games.paigow.settlement import RoundSettlement
from controller.games.paigow.tiles import check_available, parse_tiles
from controller.games.paigow.wagers import Wager, house_way_boxes
from shared.errors import InputError
from shared.money import dollars as _cents


def register(sub: argparse._SubParsersAction, math_sub: argparse._SubParsersAction) -> None:
    pg = sub.add_parser("paigow", help="Pai Gow tiles: house way, compare, settle")
    pg_sub = pg.add_subparsers(dest="paigow_command", required=True, parser_class=type(pg))

    hw = pg_sub.add_parser("houseway", help="set four tiles the house way")
    _rules(hw)
    hw.add_argument("tiles", nargs="*", help="four tiles, pip notation a-b or names")
    hw.add_argument("--batch", action="store_true", help="one hand per line on stdin")
    hw.add_argument("--json", action="store_true")
    hw.set_defaults(func=cmd_houseway)

    cmp_ = pg_sub.add_parser("compare", help="a player's setting against the bank's")
    _rules(cmp_)
    cmp_.add_argument("--player", help='"H H / L L"')
    cmp_.add_argument("--banker", help='"H H / L L"')
    cmp_.add_argument("--batch", action="store_true", help="JSON lines on stdin")
    cmp_.add_argument("--json", action="store_true")
    cmp_.set_defaults(func=cmd_compare)

    st = pg_sub.add_parser("settle", help="settle a whole round (JSON; see docs/paigow.md)")
    _rules(st)
    st.add_argument("file", help="round description as JSON, or - for stdin")
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_settle)

    m = math_sub.add_parser("paigow", help="exact probabilities and house edges (house way)")
    _rules(m)
    m.add_argument("--commission", default="0.05", help="commission rate (default 0.05)")
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_math)


def _rules(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rules", required=True, type=_profile_arg, help="nsw, nz or act")


def _profile_arg(text: str) -> Profile:
    try:
        return parse_profile(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# -- houseway ---------------------------------------------------------------------------------


def _houseway_line(text: str, profile: Profile) -> dict[str, Any]:
    return house_way(parse_tiles(text.split(), 4), profile).as_json()


def cmd_houseway(args: argparse.Namespace) -> int:
    if args.batch:
        if args.tiles:
            raise InputError("--batch reads hands from stdin: give no tiles on the command line")
        return run_batch(sys.stdin, lambda line: _houseway_line(line, args.rules))
    tiles = parse_tiles(args.tiles, 4)
    setting, rule = explain(tiles, args.rules)

    def human() -> str:
        return (
            f"high: {setting.high.describe()}\n"
            f"low:  {setting.low.describe()}\n"
            f"rule: {rule} ({args.rules.value})"
        )

    emit(setting.as_json(), args.json, human)
    return 0


# -- compare ----------------------------------------------------------------------------------


def _setting_from_json(obj: Any, who: str) -> Setting:
    if not isinstance(obj, dict) or not {"high", "low"} <= obj.keys():
        raise InputError(f'{who}: expected {{"high": [..], "low": [..]}}')
    if not all(isinstance(obj[k], list) for k in ("high", "low")):
        raise InputError(f"{who}: high and low must be lists of two tiles")
    return make_setting(parse_tiles(obj["high"], 2), parse_tiles(obj["low"], 2))


def _compare(player: Setting, banker: Setting, profile: Profile) -> Outcome:
    check_available([*player.tiles, *banker.tiles])
    return player_outcome(player, banker, profile)


def cmd_compare(args: argparse.Namespace) -> int:
    if args.batch:

        def line(text: str) -> dict[str, str]:
            obj = parse_json_object(text, "compare line")
            player = _setting_from_json(obj.get("player"), "player")
            banker = _setting_from_json(obj.get("banker"), "banker")
            return {"result": _compare(player, banker, args.rules).value}

        return run_batch(sys.stdin, line)
    if not args.player or not args.banker:
        raise InputError("compare needs --player and --banker (or --batch)")
    player, banker = parse_setting(args.player), parse_setting(args.banker)
    result = _compare(player, banker, args.rules)
    emit(
        {"result": result.value},
        args.json,
        lambda: f"player {player}  vs  banker {banker}: {result.value}",
    )
    return 0


# -- settle -----------------------------------------------------------------------------------


def _int_field(obj: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = obj.get(key, default)
    if value is None:
        raise InputError(f"{where}: {key} is required")
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where}: {key} must be an integer number of cents, got {value!r}")
    return value


def _hand(spec: Any, profile: Profile, where: str) -> Setting | None:
    """A box's hand: a setting "H H / L L", or {"tiles": [...]} set the house way on request
    (NSW 12.6, NZ 10.4, ACT 10.5), or {"conceded": true} (NSW 12.17, NZ 10.13)."""
    if isinstance(spec, str):
        return parse_setting(spec)
    if isinstance(spec, dict) and spec.get("conceded") is True:
        return None
    if isinstance(spec, dict) and isinstance(spec.get("tiles"), list):
        return house_way(parse_tiles(spec["tiles"], 4), profile)
    raise InputError(
        f'{where}: expected "H H / L L", {{"tiles": [4 tiles]}} or {{"conceded": true}}'
    )


def _optional_int(obj: dict[str, Any], key: str, where: str) -> int | None:
    return None if obj.get(key) is None else _int_field(obj, key, where)


def _bool_field(obj: dict[str, Any], key: str, where: str, default: bool) -> bool:
    value = obj.get(key, default)
    if not isinstance(value, bool):
        raise InputError(f"{where}: {key} must be true or false, got {value!r}")
    return value


def settle_document(doc: dict[str, Any], profile: Profile) -> dict[str, Any]:
    """Settle a round described as JSON through `resolve.resolve_round`, the path the
    round machine takes, NZ 7.2 and 12.17 included (docs/paigow.md)."""
    table = doc.get("table", {})
    bank = doc.get("bank", {})
    if not isinstance(table, dict) or not isinstance(bank, dict):
        raise InputError("table and bank must be JSON objects")
    money = TableMoney(
        minimum=_int_field(table, "minimum", "table"),
        maximum=_optional_int(table, "maximum", "table"),
        chip_unit=_int_field(table, "chip_unit", "table", 100),
        commission_bp=_int_field(table, "commission_bp", "table", STANDARD_COMMISSION_BP),
        house_liability=_optional_int(table, "house_liability", "table"),
        cobank_box_maximum=(
            None
            if table.get("cobank_box_maximum") is None
            else _bool_field(table, "cobank_box_maximum", "table", True)
        ),
        unpayable_up=_bool_field(table, "unpayable_up", "table", True),
    )
    n_boxes = _int_field(table, "boxes", "table", 8)
    multiples_notice = _bool_field(table, "multiples_notice", "table", True)
    try:
        holder = BankHolder(bank.get("holder", "house"))
    except ValueError:
        raise InputError(
            f"bank: holder {bank.get('holder')!r} is not house, player or co-bank"
        ) from None
    banker_box = _int_field(bank, "box", "bank", 1)
    spec = bank.get("hand")
    banker_setting = _hand(spec, profile, "bank hand")
    if banker_setting is None:
        raise InputError("bank hand: the bank cannot concede")
    hands_doc = doc.get("hands", {})
    if not isinstance(hands_doc, dict):
        raise InputError('hands must be an object {"box": hand}')
    hands: dict[int, Setting | None] = {}
    for box_text, hand_spec in hands_doc.items():
        if not str(box_text).isdigit():
            raise InputError(f"hands: box {box_text!r} is not a box number")
        hands[int(box_text)] = _hand(hand_spec, profile, f"hand of box {box_text}")
    wagers_doc = doc.get("wagers", [])
    if not isinstance(wagers_doc, list):
        raise InputError("wagers must be a list")
    wagers = []
    for n, w in enumerate(wagers_doc, 1):
        where = f"wager {n}"
        if not isinstance(w, dict):
            raise InputError(f"{where}: expected an object")
        wagers.append(
            Wager(
                box=_int_field(w, "box", where),
                player=str(w.get("player", f"box{w.get('box')}")),
                amount=_int_field(w, "amount", where),
                seated=bool(w.get("seated", False)),
                distance_to_dealer=_int_field(w, "distance_to_dealer", where, 0),
            )
        )
    if not wagers:
        raise InputError("wagers: a round to settle needs at least one wager")
    miscounted = _bool_field(doc, "miscounted", "round", False)
    if miscounted and profile is not Profile.NZ and not _bool_field(
            table, "miscount_make_up", "table", False):
        raise InputError(f"miscounted: profile {profile} has no miscount rule (NZ 12.17) and the"
                         " table has no miscount_make_up option")  # fmt: skip
    house_way = house_way_boxes(wagers, profile, _controls(doc.get("controls", {})))
    resolved = resolve_round(
        profile,
        money,
        holder,
        banker_setting,
        hands,
        wagers,
        bank_as_set=isinstance(spec, str),
        banker_box=banker_box,
        banker_wager=_int_field(bank, "wager", "bank", 0),
        house_way_boxes=house_way,
        miscounted=miscounted,
        n_boxes=n_boxes,
        multiples_notice=multiples_notice,
    )
    assert resolved.settlement is not None  # there are wagers
    out = _settlement_json(resolved.settlement, resolved.bank_hand, hands)
    if house_way:
        out["house_way_boxes"] = {str(b): p for b, p in house_way.items()}
    if resolved.make_up is not None:
        out["make_up"] = resolved.make_up
    out["alarms"] = list(resolved.alarms)
    return out


def _controls(doc: Any) -> dict[str, int]:
    """NZ 7.2: {"player": box}, the one box each player chose to control before the round."""
    if not isinstance(doc, dict):
        raise InputError('controls must be an object {"player": box}')
    out: dict[str, int] = {}
    for player, box in doc.items():
        if isinstance(box, bool) or not isinstance(box, int):
            raise InputError(f"controls: {player}'s box must be a box number, got {box!r}")
        out[str(player)] = box
    return out


def _settlement_json(
    s: RoundSettlement, banker: Setting, hands: dict[int, Setting | None]
) -> dict[str, Any]:
    rows = []
    for r in s.results:
        w = r.accepted.wager
        hand = hands[w.box]
        rows.append(
            {
                **r.as_json(),
                "hand": None if hand is None else hand.as_json(),
                "conceded": hand is None,
            }
        )
    return {
        "bank": {"holder": s.bank.value, "hand": banker.as_json(), "wager": s.banker_wager},
        "results": rows,
        "banker": {"gross": s.banker_gross, "commission": s.banker_commission, "net": s.banker_net},
        "house_net": s.house_net,
        "players_net": s.players_net,
        "conserved": s.conserved,
    }


def cmd_settle(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.file == "-" else _read(args.file)
    out = settle_document(parse_json_object(text, args.file), args.rules)

    def human() -> str:
        lines = [f"bank: {out['bank']['holder']}  hand {_fmt(out['bank']['hand'])}"]
        for r in out["results"]:
            hand = "conceded" if r["conceded"] else _fmt(r["hand"])
            lines.append(
                f"box {r['box']} {r['player']:<10} {_cents(r['amount']):>11} {hand:<24}"
                f" {r['outcome']:<5} net {_cents(r['net']):>11}"
                f"  commission {_cents(r['commission'])}"
            )
        b = out["banker"]
        lines.append(f"banker net {_cents(b['net'])} (commission {_cents(b['commission'])})")
        lines.append(f"house net {_cents(out['house_net'])}   conserved: {out['conserved']}")
        for box, player in out.get("house_way_boxes", {}).items():
            lines.append(f"box {box} set the house way by the dealer: {player} keeps another"
                         " box (NZ 7.2)")  # fmt: skip
        if "make_up" in out:
            m = out["make_up"]
            lines.append(f"make-up ({m['rule']}): short {_cents(m['shortfall'])}, player/banker"
                         f" {_cents(m['player_banker'])}, house {_cents(m['house'])}")
        lines += [f"alarm: {a}" for a in out["alarms"]]
        return "\n".join(lines)

    emit(out, args.json, human)
    return 0


def _fmt(hand: dict[str, list[str]]) -> str:
    return f"{' '.join(hand['high'])} / {' '.join(hand['low'])}"


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not a round description (not UTF-8 text: {exc.reason} at"
                         f" byte {exc.start})") from None


# -- math -------------------------------------------------------------------------------------


def commission_bp(text: str) -> int:
    """An exact commission rate such as 0.05 as basis points."""
    try:
        bp = Decimal(text) * BASIS_POINTS
    except InvalidOperation:
        raise InputError(f"--commission {text!r} is not a number") from None
    if bp != bp.to_integral_value() or not 0 <= bp <= STANDARD_COMMISSION_BP:
        raise InputError(f"--commission {text!r} must be 0..0.05 in steps of 0.0001")
    return int(bp)


def cmd_math(args: argparse.Namespace) -> int:
    bp = commission_bp(args.commission)
    started = time.monotonic()
    parsheet = paigow_parsheet()  # numpy: the `math` extra
    sheet = parsheet.compute(
        args.rules,
        house_way_function(args.rules),
        bp,
        progress_printer(f"math paigow {args.rules.value}"),
    )
    out = sheet.as_json()
    out["seconds"] = round(time.monotonic() - started, 2)

    def human() -> str:
        return "\n".join(
            [
                f"Pai Gow par sheet, rules {args.rules.value}, commission {bp / 100:g}%,"
                " both hands set the house way",
                f"matchups        {sheet.matchups:,}",
                f"player wins     {sheet.wins:,}  ({out['player_win']:.6%})",
                f"push            {sheet.pushes:,}  ({out['push']:.6%})",
                f"player loses    {sheet.losses:,}  ({out['player_lose']:.6%})",
                f"house edge, player wager   {out['house_edge_player']:.4%}",
                f"house edge, banker wager   {out['house_edge_banker']:.4%}",
            ]
        )

    emit(out, args.json, human)
    return 0
