"""`tablectl-headoffice`: run a head-office worker, print the pools' meters, change parameters.

    tablectl-headoffice run     [--config FILE]
    tablectl-headoffice report  [--config FILE | --db URL] [--json]
    tablectl-headoffice pool set POOL [--operator NAME] [--force] [--seed C] [--increment-bp N]
                                 [--hidden-bp N] [--ceiling C | --no-ceiling] [--wager C]
    tablectl-headoffice pool resume POOL [--operator NAME]
    tablectl-headoffice params-log [POOL] [--config FILE | --db URL] [--json]
    tablectl-headoffice hits [--pending] [--config FILE | --db URL] [--json]
    tablectl-headoffice hit approve ID [--operator NAME] [--note TEXT]
    tablectl-headoffice hit refuse ID --reason TEXT [--operator NAME]
    tablectl-headoffice meters [--table T] [--limit N] [--config FILE | --db URL] [--json]
    tablectl-headoffice alarms [list [--all] [--json] | ack ID --note TEXT]
    tablectl-headoffice audit [--table T] [--person P] [--since WHEN] [--until WHEN] [--csv|--json]
    tablectl-headoffice console [--config FILE] [--console-config FILE] [--listen HOST:PORT]
    tablectl-headoffice console-password

`--config FILE` goes after the command (as above, and as the systemd unit runs it) or before it.
Bad input exits 2 with one line naming it; a refused operator request exits 1.

The operator is who runs the console, as the operating system authenticated them (the user who
ran sudo, else the login), never a name typed on the command line: `--operator` may only
repeat it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import pwd
import sys
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from controller.link.contract import TABLE_ID
from controller.money import dollars_or_dash as _money
from headoffice import cli_alarms, localtime, meters
from headoffice.config import DEFAULT_PATH, HeadOfficeConfigError, load_config
from headoffice.console import server as console_server
from headoffice.ledger import Ledger, LedgerError
from headoffice.pools import BASIS_POINTS


def _rate(text: str) -> str:
    return f"{float(Fraction(text)) * 100:.2f}%"


def format_report(report: dict[str, Any]) -> str:
    lines: list[str] = []
    for p in report["pools"]:
        state = f"STOPPED: {p['stopped']}" if p["stopped"] else "running"
        lines.append(f"pool {p['pool']} (version {p['version']}, {state})")
        rows = [
            ("in", _money(p["in"])), ("current", _money(p["current"])),
            ("hits", str(p["hits"])), ("wins", _money(p["wins"])),
            ("overflow", _money(p["overflow"])), ("reserve", _money(p["reserve"])),
            ("base", _money(p["base"])), ("limit", _money(p["limit"])),
            ("rate", f"{_rate(p['rate'])} (hidden {_rate(p['hidden_rate'])})"),
            ("paid from meter", _money(p["paid_from_meter"])),
            ("paid by house", _money(p["paid_by_house"])),
            ("imbalance", f"{p['imbalance']} cents"),
        ]
        lines += [f"  {k:<16} {v}" for k, v in rows]
        if p["last_hits"]:
            lines.append("  last hits:")
        for h in p["last_hits"]:
            won = ", ".join(f"box {x['box']} {x['award']} {_money(x['amount'])}"
                            for x in h["payouts"])
            lines.append(f"    #{h['hit']} {h['utc']} table {h['table']} round {h['round']}:"
                         f" {won}; meter {_money(h['pool_before'])} -> {_money(h['pool_after'])}")
    if report["tables"]:
        lines.append("tables:")
    for t in report["tables"]:
        lines.append(f"  {t['id']:<20} pool {t['pool_id'] or '-':<12} last seq {t['last_seq']:<8}"
                     f" {t['state']:<8} seen {t['last_seen_utc'] or '-'}"
                     f"{'' if t['enrolled'] else ' NOT ENROLLED'}")
        if t["chain_seq"]:
            lines.append(f"  {'':<20} chain head: seq {t['chain_seq']} journal record"
                         f" {t['journal_seq']} hash {t['chain_hash'] or '-'}")
    for h in report.get("held_hits", []):
        lines.append(format_held(h))
    for a in report["alarms"]:
        lines.append(f"ALARM #{a['alarm_no']} {a['utc']} {a['pool_id'] or ''}"
                     f" {a['table_id'] or ''}: {a['text']}")
    return "\n".join(lines)


def format_held(h: dict[str, Any]) -> str:
    decided = "" if h["status"] == "pending" else (
        f" by {h['operator']} at {h['decided_utc']}: {h['note'] or ''}")
    paid = ""
    if h["award"] is not None:
        paid = f"; paid {_money(sum(p['amount'] for p in h['award']['payouts']))}"
    return (f"HELD HIT #{h['hold_no']} {h['utc']} table {h['table_id']} round {h['round']}"
            f" pool {h['pool_id']} (meter {_money(h['meter_at_hit'])}): {h['status'].upper()}"
            f"{decided}{paid}; why held: {h['reason']}")


def format_shift(s: dict[str, Any]) -> str:
    """One closed shift's headline (headoffice/meters.py `headline`) for a person."""
    h = meters.headline(s)
    by_type = "; ".join(f"{kind} {_money(w)} / {_money(p)}" for kind, w, p in h["by_type"])
    rows = [
        ("rounds played", str(h["rounds_played"])), ("rounds voided", str(h["rounds_voided"])),
        ("wagers", _money(h["wagers"])), ("payouts", _money(h["payouts"])),
        ("by type", by_type or "-"), ("commission", _money(h["commission"])),
        ("jackpot in", _money(h["jackpot_contributions"])),
        ("jackpot paid", _money(h["jackpot_awards"])), ("house win", _money(h["house_win"])),
    ]
    return "\n".join([f"table {h['table']} shift {h['shift']} (message {h['seq']}):"
                      f" {h['opened_utc'] or '-'} .. {h['closed_utc']}"]
                     + ([f"  {h['incomplete']}"] if h["incomplete"] else [])
                     + [f"  {k:<16} {v}" for k, v in rows])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="tablectl-headoffice", description=__doc__.split("\n")[0])
    ap.add_argument("--config", type=Path, default=None, help=f"default {DEFAULT_PATH}")
    # The same option after the command; SUPPRESS keeps a --config given before it.
    cfg = argparse.ArgumentParser(add_help=False)
    cfg.add_argument("--config", type=Path, default=argparse.SUPPRESS,
                     help=f"default {DEFAULT_PATH}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("run", parents=[cfg], help="run a worker (several may share the load)")
    rep = sub.add_parser("report", parents=[cfg], help="every pool's meters and its last hits")
    rep.add_argument("--db", help="ledger URL (instead of the config's)")
    rep.add_argument("--json", action="store_true")
    pool = sub.add_parser("pool", help="pool parameters")
    psub = pool.add_subparsers(dest="pool_cmd", required=True)
    ps = psub.add_parser("set", parents=[cfg])
    ps.add_argument("pool")
    ps.add_argument("--operator", help="must be who runs the console (default)")
    ps.add_argument("--force", action="store_true", help="even while tables are live")
    ps.add_argument("--seed", type=int)
    ps.add_argument("--increment-bp", type=int)
    ps.add_argument("--hidden-bp", type=int)
    ps.add_argument("--ceiling", type=int)
    ps.add_argument("--no-ceiling", action="store_true")
    ps.add_argument("--wager", type=int, help="the qualifying jackpot wager, cents (15.2.5.2)")
    pr = psub.add_parser("resume", parents=[cfg])
    pr.add_argument("pool")
    pr.add_argument("--operator", help="must be who runs the console (default)")
    pl = sub.add_parser("params-log", parents=[cfg],
                        help="every parameter change, with old and new values,"
                        " numbered per pool in the order made")
    pl.add_argument("pool", nargs="?")
    pl.add_argument("--db", help="ledger URL (instead of the config's)")
    pl.add_argument("--json", action="store_true")
    hs = sub.add_parser("hits", help="jackpot hits held for an operator (the jackpot lock)")
    hs.add_argument("--pending", action="store_true", help="only those not yet decided")
    hs.add_argument("--db", help="ledger URL (instead of the config's)")
    hs.add_argument("--json", action="store_true")
    hit = sub.add_parser("hit", help="decide a held jackpot hit")
    hsub = hit.add_subparsers(dest="hit_cmd", required=True)
    ha = hsub.add_parser("approve", help="pay it (rule 15 award on the meter at the hit)")
    ha.add_argument("id", type=int)
    ha.add_argument("--operator", help="must be who runs the console (default)")
    ha.add_argument("--note", default="")
    hr = hsub.add_parser("refuse", help="never pay it")
    hr.add_argument("id", type=int)
    hr.add_argument("--reason", required=True)
    hr.add_argument("--operator", help="must be who runs the console (default)")
    me = sub.add_parser("meters", parents=[cfg],
                        help="each table's closed shifts and their meters, newest first")
    me.add_argument("--table", help="only this table's")
    me.add_argument("--limit", type=int, default=50,
                    help=f"shifts at most (1..{meters.MAX_SHIFTS}, default 50)")
    me.add_argument("--db", help="ledger URL (instead of the config's)")
    me.add_argument("--json", action="store_true")
    cli_alarms.add_parsers(sub, cfg)
    console_server.add_parsers(sub, cfg)
    return ap.parse_args(argv)


def _changes(args: argparse.Namespace) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if args.seed is not None:
        changes["seed"] = args.seed
    for name in ("increment", "hidden"):
        bp = getattr(args, f"{name}_bp")
        if bp is not None:
            if not 0 <= bp <= BASIS_POINTS:
                raise ValueError(f"--{name}-bp must be 0..{BASIS_POINTS}, got {bp}")
            changes[name] = Fraction(bp, BASIS_POINTS)
    if args.ceiling is not None and args.no_ceiling:
        raise ValueError("--ceiling and --no-ceiling together")
    if args.ceiling is not None:
        changes["ceiling"] = args.ceiling
    if args.no_ceiling:
        changes["ceiling"] = None
    if args.wager is not None:
        changes["wager"] = args.wager  # Params checks it (whole cents > 0)
    if not changes:
        raise ValueError("nothing to change: give --seed, --increment-bp, --hidden-bp,"
                         " --ceiling or --wager")
    return changes


def login_name() -> str:
    """Who runs this console, as the operating system knows them: under sudo, the user who ran
    it (SUDO_USER is believed only when we are root, since anyone can set it), else the user
    we run as."""
    if os.geteuid() == 0 and os.environ.get("SUDO_USER"):
        return os.environ["SUDO_USER"]
    return pwd.getpwuid(os.geteuid()).pw_name


def _operator(args: argparse.Namespace) -> str:
    who = login_name()
    if args.operator is not None and args.operator != who:
        raise LedgerError(f"--operator {args.operator!r}, but this console runs as {who!r}:"
                          " an operator acts under their own login")
    return who


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if args.cmd in ("console", "console-password"):  # the browser console: its own config
        return console_server.main(args)
    try:
        if args.cmd in ("report", "params-log", "hits", "meters") and args.db:
            url, cfg = args.db, None
        else:
            cfg = load_config(args.config or DEFAULT_PATH)
            url = cfg.database
        ledger = Ledger.open(url)
    except (HeadOfficeConfigError, RuntimeError, OSError) as exc:
        print(f"tablectl-headoffice: {exc}", file=sys.stderr)
        return 2
    try:
        if args.cmd == "report":
            report = ledger.report()
            print(json.dumps(report, indent=2) if args.json else format_report(report))
            return 0
        if args.cmd == "params-log":
            rows = ledger.param_log(args.pool)
            if args.json:
                print(json.dumps(rows, indent=2))
            for r in [] if args.json else rows:
                print(f"{r['pool_id']} #{r['entry_no']} {r['utc']} {r['action']} by {r['operator']}"
                      f"{' (forced)' if r['forced'] else ''}: {r['outcome']}; live"
                      f" {r['live_tables']}; old {r['old']}; new {r['new']}")
            return 0
        if args.cmd == "hits":
            held = ledger.held_hits(pending_only=args.pending)
            print(json.dumps(held, indent=2) if args.json
                  else "\n".join(format_held(h) for h in held))
            return 0
        if args.cmd == "meters":
            if not 1 <= args.limit <= meters.MAX_SHIFTS:
                print(f"tablectl-headoffice: --limit must be 1..{meters.MAX_SHIFTS},"
                      f" got {args.limit}", file=sys.stderr)
                return 2
            if args.table is not None and not TABLE_ID.fullmatch(args.table):
                print(f"tablectl-headoffice: --table {args.table[:40]!r} is no table id",
                      file=sys.stderr)
                return 2
            shifts = meters.shift_meters(ledger.db, args.table, args.limit)
            print(json.dumps(shifts, indent=2) if args.json
                  else "\n".join(format_shift(s) for s in shifts) or "no shift closed")
            return 0
        assert cfg is not None
        if args.cmd in ("alarms", "audit"):  # headoffice/cli_alarms.py
            return cli_alarms.run(args, ledger, localtime.zone(cfg.time_zone), login_name())
        if args.cmd == "hit":
            if args.hit_cmd == "approve":
                award = ledger.approve_hit(args.id, operator=_operator(args),
                                           authorised=cfg.operators, note=args.note)
                print(json.dumps(award))
            else:
                ledger.refuse_hit(args.id, operator=_operator(args), authorised=cfg.operators,
                                  reason=args.reason)
                print(json.dumps({"hold_no": args.id, "status": "refused"}))
            return 0
        if args.cmd == "pool":
            if args.pool_cmd == "set":
                try:
                    changes = _changes(args)
                except ValueError as exc:
                    print(f"tablectl-headoffice: {exc}", file=sys.stderr)
                    return 2
                old, new = ledger.set_params(
                    args.pool, changes, operator=_operator(args), authorised=cfg.operators,
                    force=args.force, live_window_s=cfg.live_window_s,
                )
                print(json.dumps({"pool": args.pool, "old": old.as_json(),
                                  "new": new.as_json()}))
                return 0
            pool = ledger.resume_pool(args.pool, operator=_operator(args),
                                      authorised=cfg.operators)
            print(json.dumps(pool.meters()))
            return 0
        from headoffice.worker import Worker

        if cfg.broker is None:
            print("tablectl-headoffice: run needs a [broker] section", file=sys.stderr)
            return 2
        asyncio.run(Worker(cfg, ledger).run())
        return 0
    except LedgerError as exc:
        print(f"tablectl-headoffice: refused: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        ledger.close()


if __name__ == "__main__":
    sys.exit(main())
