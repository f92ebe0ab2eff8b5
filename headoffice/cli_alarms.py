"""`tablectl-headoffice alarms` and `audit`: the console's alarms and audit trail in a terminal.

    tablectl-headoffice alarms [list] [--all] [--json]
    tablectl-headoffice alarms ack ID --note TEXT
    tablectl-headoffice audit [--table T] [--person P] [--since WHEN] [--until WHEN] [--csv|--json]

Times are shown, and --since/--until read, in the casino's time zone (headoffice.toml
`[service] time_zone`). An acknowledgement is recorded under the operating system's login of
whoever runs the command (`cli.login_name`), never a name typed on the command line.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any
from zoneinfo import ZoneInfo

from headoffice import audit, exports
from headoffice.ledger import Ledger
from headoffice.ledger.alarms import KINDS
from headoffice.localtime import local_time
from shared.errors import InputError


def add_parsers(sub: Any, cfg: argparse.ArgumentParser) -> None:
    al = sub.add_parser("alarms", parents=[cfg],
                        help="head office's alarms: the active ones, the history, acknowledge")
    al.add_argument("--all", action="store_true", help="every alarm, newest first (history)")
    al.add_argument("--json", action="store_true")
    asub = al.add_subparsers(dest="alarms_cmd")
    al.set_defaults(alarms_cmd="list")
    ls = asub.add_parser("list", parents=[cfg], help="the active alarms (default)")
    ls.add_argument("--all", action="store_true", help="every alarm, newest first (history)")
    ls.add_argument("--json", action="store_true")
    ack = asub.add_parser("ack", parents=[cfg],
                          help="acknowledge an alarm as the login running this command")
    ack.add_argument("id", type=int)
    ack.add_argument("--note", required=True, help="what was seen or done (required)")
    au = sub.add_parser("audit", parents=[cfg], help="the audit trail, newest first")
    au.add_argument("--table")
    au.add_argument("--person")
    au.add_argument("--since", help="YYYY-MM-DD [HH:MM[:SS]] in the casino's time zone")
    au.add_argument("--until", help="the same; a date alone: to the end of that day")
    out = au.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true", help="the console's CSV export")
    out.add_argument("--json", action="store_true")


def format_alarm(a: dict[str, Any], tz: ZoneInfo) -> str:
    kind = KINDS[a["kind"]].title if a["kind"] in KINDS else str(a["kind"])
    where = " ".join(x for x in (a["pool_id"], a["table_id"]) if x)
    state = ("active" if a["cleared_utc"] is None
             else f"cleared {local_time(a['cleared_utc'], tz)}")
    acked = (f"; acknowledged by {a['acked_by']} {local_time(a['acked_utc'], tz)}:"
             f" {a['ack_note']}" if a["acked_utc"] else "; not acknowledged")
    seen = f" (seen {a['repeats']} times, last {local_time(a['last_utc'], tz)})" if (
        a["repeats"] or 1) > 1 else ""
    return (f"ALARM #{a['alarm_no']} {(a['severity'] or '').upper()} {kind}"
            f"{' ' + where if where else ''}: {a['text']}\n  raised"
            f" {local_time(a['utc'], tz)}{seen}; {state}{acked}")


def run(args: argparse.Namespace, ledger: Ledger, tz: ZoneInfo, who: str) -> int:
    """The command; 2 for bad input (one line naming it). LedgerError (a refused
    acknowledgement) is the caller's to report (exit 1)."""
    if args.cmd == "alarms":
        if args.alarms_cmd == "ack":
            a = ledger.ack_alarm(args.id, person=who, note=args.note, client="cli")
            print(format_alarm(a, tz))
            return 0
        rows = ledger.alarms(active_only=not args.all)
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            print("\n".join(format_alarm(a, tz) for a in rows)
                  or ("no alarm" if args.all else "no active alarm"))
        return 0
    try:
        f = audit.Filter.of(tz, table=args.table, person=args.person, since=args.since,
                            until=args.until)
    except InputError as exc:
        print(f"tablectl-headoffice: {exc}", file=sys.stderr)
        return 2
    entries = audit.trail(ledger.db, f)
    if args.csv:
        sys.stdout.write(exports.trail_csv(entries, tz))
    elif args.json:
        print(json.dumps(entries, indent=2))
    else:
        for e in entries:
            where = " ".join(x for x in (e["table_id"], e["pool_id"]) if x)
            print(f"{local_time(e['utc'], tz)}  {e['action']:<14} {e['person']:<16}"
                  f" {where:<12} {e['subject'] or ''}: {e['detail']}")
        if not entries:
            print("no entry")
    return 0
