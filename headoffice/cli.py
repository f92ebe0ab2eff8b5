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
import functools
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

from headoffice import cli_alarms, cli_cards, localtime, meters
from headoffice.cli_format import (
    format_change,
    format_decision,
    format_held,
    format_report,
    format_review,
    format_shift,
)
from headoffice.config import DEFAULT_PATH, HeadOfficeConfigError, load_config
from headoffice.console import server as console_server
from headoffice.ledger import Ledger, LedgerError
from headoffice.pools import BASIS_POINTS, requested_changes
from shared.errors import InputError
from shared.link.contract import TABLE_ID
from shared.money import dollars_or_dash as _money


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return _parser().parse_args(argv)


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """Built once a process (~50 ms; in-process callers, the tests, make a hundred); parsing
    leaves it as it was."""
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
    return ap


def _changes(args: argparse.Namespace) -> dict[str, Any]:
    """`pool set`'s flags as `Ledger.set_params` takes them (`pools.requested_changes`, the
    console's form too); InputError (a ValueError) naming the flag or what is missing."""
    rates: dict[str, Fraction | None] = {}
    for name in ("increment", "hidden"):
        bp = getattr(args, f"{name}_bp")
        if bp is not None and not 0 <= bp <= BASIS_POINTS:
            raise InputError(f"--{name}-bp must be 0..{BASIS_POINTS}, got {bp}")
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
        # Times for people in the casino's zone (UTC when only --db names the ledger).
        tz = localtime.zone("UTC" if cfg is None else cfg.time_zone)
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
                  else format_report(report, tz) or "no pools, tables or alarms in the ledger yet")
            return 0
        if args.cmd == "params-log":
            rows = ledger.param_log(args.pool)
            if args.json:
                print(json.dumps(rows, indent=2))
            if not rows and not args.json:
                print("no parameter changes" + (f" of pool {args.pool}" if args.pool else ""))
            for r in [] if args.json else rows:
                print(f"{r['pool_id']} #{r['entry_no']} {localtime.local_time(r['utc'], tz)}"
                      f" {r['action']} by {r['operator']}"
                      f"{' (forced)' if r['forced'] else ''}: {r['outcome']}; live"
                      f" {', '.join(json.loads(r['live_tables'])) or 'none'}")
                old, new = (json.loads(r[k]) if r[k] else None for k in ("old", "new"))
                if new is not None:
                    print(format_change(old, new))
            return 0
        if args.cmd == "decisions":
            rows = ledger.decisions(pending_only=args.pending)
            print(json.dumps(rows, indent=2) if args.json
                  else "\n".join(format_decision(d, tz) for d in rows))
            return 0
        if args.cmd == "hit" and args.hit_cmd == "show":
            print(format_review(ledger.hit_review(args.id), tz))
            return 0
        if args.cmd == "hits":
            held = ledger.held_hits(pending_only=args.pending)
            none = "no held hit waiting for a decision" if args.pending else "no held hits"
            print(json.dumps(held, indent=2) if args.json
                  else "\n".join(format_held(h, tz) for h in held) or none)
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
                  else "\n".join(format_shift(s, tz) for s in shifts) or "no shift closed")
            return 0
        assert cfg is not None
        if args.cmd == "card":  # headoffice/cli_cards.py
            return cli_cards.run(args, ledger, cfg.operators, lambda: _operator(args))
        if args.cmd in ("alarms", "audit"):  # headoffice/cli_alarms.py
            return cli_alarms.run(args, ledger, localtime.zone(cfg.time_zone), login_name())
        if args.cmd == "hit":
            operator = _operator(args)
            print(format_review(ledger.hit_review(args.id), tz))
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
                    print(f"first approval: {d['first_by']} at"
                          f" {localtime.local_time(d['first_utc'], tz)}: {d['first_reason']}")
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
