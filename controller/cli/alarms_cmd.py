"""`tablectl alarms`: the table's active alarms (the ones `tablectl status` shows) and the ones
cleared lately, with how; `tablectl alarms ack N ...` / `--all` acknowledges active alarms once
a person has seen to them (logged with who). A technician alarm clears itself once its device is
back in service, or when its round ends; a surveillance alarm needs the supervisor group to
acknowledge it (controller/daemon/attention.py).

Exit codes: 0 shown (or acknowledged); 2 refused (no such alarm, not a supervisor);
3 tablectld not running.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from controller.cli.attention import alarm_line
from controller.cli.common import emit
from controller.cli.table_cmd import _ask
from shared.errors import InputError


def register(sub: argparse._SubParsersAction) -> None:
    alarms = sub.add_parser("alarms", help="active alarms and the lately cleared ones; `alarms"
                            " ack` acknowledges (surveillance alarms: supervisor)")
    alarms.add_argument("--runtime-dir", type=Path, help="where tablectld's control socket is")
    alarms.add_argument("--json", action="store_true")
    alarms.set_defaults(func=cmd_alarms)
    asub = alarms.add_subparsers(dest="alarms_command", parser_class=type(alarms))
    ack = asub.add_parser("ack", help="acknowledge active alarms by number (tablectl alarms), or"
                          " --all; logged with who")
    ack.add_argument("ids", type=int, nargs="*", metavar="N", help="alarm numbers")
    ack.add_argument("--all", action="store_true", help="every active alarm you may acknowledge")
    ack.add_argument("--note", default="", help="what was done, logged with the acknowledgement")
    ack.add_argument("--runtime-dir", type=Path)
    ack.add_argument("--json", action="store_true")
    ack.set_defaults(func=cmd_ack)


def cmd_alarms(args: argparse.Namespace) -> int:
    got = _ask(args, "alarms")

    def human() -> str:
        lines = ["active alarms:" if got["active"] else "no active alarms"]
        for alarm in got["active"]:
            lines += ["  " + alarm_line(alarm), f"      to clear: {alarm.get('clears')}"]
        if got["cleared"]:
            lines.append("cleared lately:")
            lines += [f"  {alarm_line(a)}\n      cleared: {a['cleared']}" for a in got["cleared"]]
        return "\n".join(lines)

    emit(got, args.json, human)
    return 0


def cmd_ack(args: argparse.Namespace) -> int:
    if bool(args.ids) == bool(args.all):
        raise InputError("name the alarms to acknowledge (tablectl alarms ack 3 4) or --all")
    payload: dict[str, Any] = {"note": args.note}
    if args.ids:
        payload["ids"] = args.ids
    got = _ask(args, "alarms_ack", payload)

    def human() -> str:
        done = got["acknowledged"]
        lines = [f"acknowledged alarm {a['id']}: {a['text']}" for a in done] or [
            "nothing acknowledged: no active alarm you may acknowledge"]
        if got["active"]:
            lines.append(f"still active: {len(got['active'])} (tablectl alarms)")
        return "\n".join(lines)

    emit(got, args.json, human)
    return 0
