"""`tablectl-headoffice`: run a head-office worker, print the pools' meters, change parameters.

    tablectl-headoffice run     [--config FILE]
    tablectl-headoffice report  [--config FILE | --db URL] [--json]
    tablectl-headoffice pool set POOL --reason TEXT [--operator NAME] [--force] [--seed C]
                                 [--increment-bp N] [--hidden-bp N] [--ceiling C | --no-ceiling]
                                 [--wager C]
    tablectl-headoffice pool approve|refuse DECISION --reason TEXT [--operator NAME]
    tablectl-headoffice pool resume POOL --reason TEXT [--operator NAME]
    tablectl-headoffice params-log [POOL] [--config FILE | --db URL] [--json]
    tablectl-headoffice hits [--pending] [--config FILE | --db URL] [--json]
    tablectl-headoffice hit show ID [--config FILE | --db URL]
    tablectl-headoffice hit approve ID --reason TEXT [--operator NAME] [--config FILE]
    tablectl-headoffice hit refuse ID --reason TEXT [--operator NAME] [--config FILE]
    tablectl-headoffice decisions [--pending] [--config FILE | --db URL] [--json]
    tablectl-headoffice meters [--table T] [--limit N] [--config FILE | --db URL] [--json]
    tablectl-headoffice alarms [list [--all] [--json] | ack ID --note TEXT]
    tablectl-headoffice audit [--table T] [--person P] [--since WHEN] [--until WHEN] [--csv|--json]
    tablectl-headoffice card add|show|list|limit|restrict|unrestrict|invalidate ...
                                 (headoffice/cli_cards.py: Player Cards, Loss Limits)
    tablectl-headoffice console [--config FILE] [--console-config FILE] [--listen HOST:PORT]
    tablectl-headoffice console-password

`--config FILE` goes after the command (as above, and as the systemd unit runs it) or before
it, for every command. An empty listing says so in a line ("no held hits").
Bad input exits 2 with one line naming it; a refused operator request exits 1.

The operator is who runs the console, as the operating system authenticated them (the user who
ran sudo, else the login), never a name typed on the command line: `--operator` may only
repeat it. `hit approve` prints what `hit show` prints (the award head office pays, the hands
in words, the checks, the attendant's verification, a first approval) before deciding; under
dual control the first approval is recorded and a second, different operator completes it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import pwd
import sqlite3
import sys
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from controller.link.contract import TABLE_ID
from controller.money import dollars_or_dash as _money
from headoffice import cli_alarms, cli_cards, localtime, meters
from headoffice.config import DEFAULT_PATH, HeadOfficeConfigError, load_config
from headoffice.console import server as console_server
from headoffice.console.money import param_changes
from headoffice.ledger import Ledger, LedgerError
from headoffice.pools import BASIS_POINTS, requested_changes


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
    verified = ("" if not h.get("verified_by") else
                f"; verified at the table by {h['verified_by']} (the table's word)")
    return (f"HELD HIT #{h['hold_no']} {h['utc']} table {h['table_id']} round {h['round']}"
            f" pool {h['pool_id']} (meter {_money(h['meter_at_hit'])}): {h['status'].upper()}"
            f"{decided}{paid}; why held: {h['reason']}{verified}")


def format_review(r: dict[str, Any]) -> str:
    """What an approver reads before deciding a held hit (the console's confirmation page)."""
    lines = [f"held hit #{r['hold_no']}: table {r['table_id']}, round {r['round']}, pool"
             f" {r['pool_id']}; held {r['utc']}; {r['status'].upper()}"]
    if r["amount"] is not None:
        what = "paid" if r["status"] == "approved" else "award head office pays"
        lines.append(f"  {what}: {_money(r['amount'])} (on the meter at the hit,"
                     f" {_money(r['meter_at_hit'])}; UTH rule 15)")
        lines += [f"    box {p['box']}: {p['award'].replace('_', ' ')} {_money(p['amount'])}"
                  f" ({p['rule']})" for p in r["payouts"]]
    else:
        lines.append(f"  award: cannot be paid: {r['cannot_pay']}")
    for h in r["hands"]:
        lines.append(f"  box {h['box']}: {' '.join(h['cards'])}: {h['hand']}")
    lines.append(f"  why held: {r['reason']}")
    lines.append("  checks: " + ("; ".join(r["checks"]) if r["checks"]
                                 else "all pass (wagers ledgered, one deck, hands as claimed)"))
    lines.append("  attendant's verification at the table: "
                 + (f"{r['verified_by']} at {r['verified_utc']} (the table's word)"
                    if r["verified_by"] else "none"))
    first = r["first"]
    if first is not None:
        lines.append(f"  first approval: {first['first_by']} at {first['first_utc']}"
                     f" ({_money(first['amount'])}): {first['first_reason']}")
    if r["status"] == "pending":
        lines.append("  needs: " + ("two different approvers (dual control)"
                                    if r["signatures"] == 2 else "one approver"))
    else:
        lines.append(f"  decided by {r['operator']} at {r['decided_utc']}: {r['note'] or ''}")
    return "\n".join(lines)


def format_change(old: dict[str, Any] | None, new: dict[str, Any] | None) -> str:
    """A parameter change as a before/after table of only what changes, indented."""
    rows = param_changes(old, new)
    width = max([len(r[0]) for r in rows] + [4])
    return "\n".join([f"  {'what':<{width}}  {'before':>14}  {'after':>14}"]
                     + [f"  {a:<{width}}  {b:>14}  {c:>14}" for a, b, c in rows])


def format_decision(d: dict[str, Any]) -> str:
    subject = (f"held hit #{d['subject']}" if d["kind"] == "hit"
               else f"parameters of pool {d['subject']}")
    amount = "" if d["amount"] is None else f" {_money(d['amount'])}"
    second = ("" if d["second_by"] is None else
              f"; {d['second_by']} at {d['second_utc']}: {d['second_reason']}")
    return (f"DECISION #{d['decision_no']} {subject}{amount}: {d['status'].upper()}"
            f" ({d['signatures']} signature{'s' if d['signatures'] > 1 else ''});"
            f" {d['first_by']} at {d['first_utc']}: {d['first_reason']}{second}"
            f"{'; ' + d['outcome'] if d['outcome'] else ''}")


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
    ps.add_argument("--reason", required=True, help="why (recorded with your name)")
    ps.add_argument("--force", action="store_true", help="even while tables are live (then"
                    " a second, different operator approves it: pool approve)")
    ps.add_argument("--seed", type=int)
    ps.add_argument("--increment-bp", type=int)
    ps.add_argument("--hidden-bp", type=int)
    ps.add_argument("--ceiling", type=int)
    ps.add_argument("--no-ceiling", action="store_true")
    ps.add_argument("--wager", type=int, help="the qualifying jackpot wager, cents (UTH 15.2.5.3)")
    for verb, text in (("approve", "the second approval of a forced change (dual control)"),
                       ("refuse", "end a forced change waiting for its second approval")):
        pd = psub.add_parser(verb, parents=[cfg], help=text)
        pd.add_argument("decision", type=int)
        pd.add_argument("--reason", required=True, help="why (recorded with your name)")
        pd.add_argument("--operator", help="must be who runs the console (default)")
    pr = psub.add_parser("resume", parents=[cfg])
    pr.add_argument("pool")
    pr.add_argument("--reason", required=True,
                    help="what the investigation found (recorded with your name)")
    pr.add_argument("--operator", help="must be who runs the console (default)")
    pl = sub.add_parser("params-log", parents=[cfg],
                        help="every parameter change, with old and new values,"
                        " numbered per pool in the order made")
    pl.add_argument("pool", nargs="?")
    pl.add_argument("--db", help="ledger URL (instead of the config's)")
    pl.add_argument("--json", action="store_true")
    hs = sub.add_parser("hits", parents=[cfg],
                        help="jackpot hits held for an operator (the jackpot lock)")
    hs.add_argument("--pending", action="store_true", help="only those not yet decided")
    hs.add_argument("--db", help="ledger URL (instead of the config's)")
    hs.add_argument("--json", action="store_true")
    de = sub.add_parser("decisions", parents=[cfg],
                        help="decisions on held hits and parameters, with both signatures")
    de.add_argument("--pending", action="store_true", help="only those waiting for a second")
    de.add_argument("--db", help="ledger URL (instead of the config's)")
    de.add_argument("--json", action="store_true")
    hit = sub.add_parser("hit", help="decide a held jackpot hit")
    hsub = hit.add_subparsers(dest="hit_cmd", required=True)
    hw = hsub.add_parser("show", parents=[cfg], help="what an approver reads before deciding")
    hw.add_argument("id", type=int)
    hw.add_argument("--db", help="ledger URL (instead of the config's)")
    ha = hsub.add_parser("approve", parents=[cfg], help="pay it (UTH rule 15 award on the meter at"
                         " the hit), or give the first of two approvals (dual control)")
    ha.add_argument("id", type=int)
    ha.add_argument("--operator", help="must be who runs the console (default)")
    ha.add_argument("--reason", required=True, help="why (recorded with your name)")
    hr = hsub.add_parser("refuse", parents=[cfg], help="never pay it")
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
    cli_cards.add_parsers(sub, cfg)
    console_server.add_parsers(sub, cfg)
    return ap.parse_args(argv)


def _changes(args: argparse.Namespace) -> dict[str, Any]:
    """`pool set`'s flags as `Ledger.set_params` takes them (`pools.requested_changes`, the
    console's form too); ValueError naming the flag or what is missing."""
    rates: dict[str, Fraction | None] = {}
    for name in ("increment", "hidden"):
        bp = getattr(args, f"{name}_bp")
        if bp is not None and not 0 <= bp <= BASIS_POINTS:
            raise ValueError(f"--{name}-bp must be 0..{BASIS_POINTS}, got {bp}")
        rates[name] = None if bp is None else Fraction(bp, BASIS_POINTS)
    return requested_changes(seed=args.seed, increment=rates["increment"],
                             hidden=rates["hidden"], ceiling=args.ceiling,
                             no_ceiling=args.no_ceiling, wager=args.wager)


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
    try:
        return _main(argv)
    except BrokenPipeError:
        # `tablectl-headoffice report | head`: the reader had enough. Quietly, as cat does;
        # stdout goes to /dev/null so the interpreter's last flush cannot fail again.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _database_errors() -> tuple[type[Exception], ...]:
    """SQLite's and (when installed) psycopg's errors: looked up only when one is raised."""
    try:
        import psycopg  # type: ignore[import-not-found]
    except ImportError:
        return (sqlite3.Error,)
    return (sqlite3.Error, psycopg.Error)


def _main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if args.cmd in ("console", "console-password"):  # the browser console: its own config
        return console_server.main(args)
    try:
        if (args.cmd in ("report", "params-log", "hits", "meters", "decisions")
                or (args.cmd == "hit" and args.hit_cmd == "show")) and getattr(args, "db", None):
            url, cfg = args.db, None
        else:
            cfg = load_config(args.config or DEFAULT_PATH)
            url = cfg.database
        ledger = Ledger.open(url, None if cfg is None else cfg.hit_policy())
    except (HeadOfficeConfigError, RuntimeError, OSError) as exc:
        print(f"tablectl-headoffice: {exc}", file=sys.stderr)
        return 2
    except _database_errors() as exc:  # not a ledger, or a server that is not there
        print(f"tablectl-headoffice: the ledger cannot be opened: {str(exc).splitlines()[0]}",
              file=sys.stderr)
        return 2
    try:
        if args.cmd == "report":
            report = ledger.report()
            print(json.dumps(report, indent=2) if args.json
                  else format_report(report) or "no pools, tables or alarms in the ledger yet")
            return 0
        if args.cmd == "params-log":
            rows = ledger.param_log(args.pool)
            if args.json:
                print(json.dumps(rows, indent=2))
            if not rows and not args.json:
                print("no parameter changes" + (f" of pool {args.pool}" if args.pool else ""))
            for r in [] if args.json else rows:
                print(f"{r['pool_id']} #{r['entry_no']} {r['utc']} {r['action']} by {r['operator']}"
                      f"{' (forced)' if r['forced'] else ''}: {r['outcome']}; live"
                      f" {', '.join(json.loads(r['live_tables'])) or 'none'}")
                old, new = (json.loads(r[k]) if r[k] else None for k in ("old", "new"))
                if new is not None:
                    print(format_change(old, new))
            return 0
        if args.cmd == "decisions":
            rows = ledger.decisions(pending_only=args.pending)
            print(json.dumps(rows, indent=2) if args.json
                  else "\n".join(format_decision(d) for d in rows))
            return 0
        if args.cmd == "hit" and args.hit_cmd == "show":
            print(format_review(ledger.hit_review(args.id)))
            return 0
        if args.cmd == "hits":
            held = ledger.held_hits(pending_only=args.pending)
            none = "no held hit waiting for a decision" if args.pending else "no held hits"
            print(json.dumps(held, indent=2) if args.json
                  else "\n".join(format_held(h) for h in held) or none)
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
        if args.cmd == "card":  # headoffice/cli_cards.py
            return cli_cards.run(args, ledger, cfg.operators, lambda: _operator(args))
        if args.cmd in ("alarms", "audit"):  # headoffice/cli_alarms.py
            return cli_alarms.run(args, ledger, localtime.zone(cfg.time_zone), login_name())
        if args.cmd == "hit":
            operator = _operator(args)
            print(format_review(ledger.hit_review(args.id)))
            if args.hit_cmd == "approve":
                done = ledger.approve_hit(args.id, operator=operator, authorised=cfg.operators,
                                          reason=args.reason)
                if done["status"] == "pending":
                    print(f"FIRST APPROVAL by {operator} recorded (decision"
                          f" #{done['decision_no']}, {_money(done['amount'])}): dual control,"
                          " a second, different operator runs `tablectl-headoffice hit approve"
                          f" {args.id} --reason ...` to pay it")
                else:
                    first = f"{done['first_by']} and " if done["first_by"] else ""
                    print(f"APPROVED by {first}{operator}: {_money(done['amount'])} paid"
                          f" (decision #{done['decision_no']}); the award goes to table"
                          f" {done['award']['table']}")
            else:
                ledger.refuse_hit(args.id, operator=operator, authorised=cfg.operators,
                                  reason=args.reason)
                print(f"REFUSED by {operator}: never paid; {args.reason}")
            return 0
        if args.cmd == "pool":
            if args.pool_cmd == "set":
                try:
                    changes = _changes(args)
                except ValueError as exc:
                    print(f"tablectl-headoffice: {exc}", file=sys.stderr)
                    return 2
                change = ledger.set_params(
                    args.pool, changes, operator=_operator(args), authorised=cfg.operators,
                    reason=args.reason, force=args.force, live_window_s=cfg.live_window_s,
                )
                print(f"pool {args.pool}:")
                print(format_change(change.old.as_json(), change.new.as_json()))
                if change.status == "pending":
                    print(f"FIRST APPROVAL recorded (decision #{change.decision_no}): tables are"
                          " live on the pool, so a second, different operator runs"
                          f" `tablectl-headoffice pool approve {change.decision_no} --reason"
                          " ...` to apply it (or `pool refuse`)")
                else:
                    print(f"APPLIED (decision #{change.decision_no})")
                return 0
            if args.pool_cmd in ("approve", "refuse"):
                operator = _operator(args)
                d = ledger.decision(args.decision)
                if d is not None and d["kind"] == "params":
                    print(f"pool {d['subject']}, decision #{d['decision_no']}:")
                    print(format_change(d["detail"]["old"], d["detail"]["new"]))
                    print(f"first approval: {d['first_by']} at {d['first_utc']}:"
                          f" {d['first_reason']}")
                if args.pool_cmd == "approve":
                    change = ledger.approve_change(args.decision, operator=operator,
                                                   authorised=cfg.operators, reason=args.reason,
                                                   live_window_s=cfg.live_window_s)
                    print(f"APPLIED by {change.first_by} and {operator}"
                          f" (decision #{args.decision})")
                else:
                    ledger.refuse_change(args.decision, operator=operator,
                                         authorised=cfg.operators, reason=args.reason)
                    print(f"REFUSED by {operator} (decision #{args.decision}): nothing changed")
                return 0
            pool = ledger.resume_pool(args.pool, operator=_operator(args),
                                      authorised=cfg.operators, reason=args.reason)
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
