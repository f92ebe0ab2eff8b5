"""`tablectl logs` and `tablectl errors`: what the daemon said, and what went wrong this week.

    tablectl logs [--level warning] [--device shaker] [--round 12] [-n 100] [--source auto]
    tablectl errors [--days 7] [--state-dir DIR]

`logs` reads journald (`journalctl`, the daemon's SYSLOG_IDENTIFIER and its structured fields)
when the daemon logs there, else the daemon's own ring of recent lines over the control socket.
`errors` is the error history: every warning or worse with its code (docs/operations.md, "Error
codes"), kept a week in the state directory; read from the daemon, or from the file when the
daemon is down.

Exit codes: 0 shown (also when nothing matched); 2 a bad argument or a refusal; 3 neither the
daemon nor the file (or journald) is there to ask.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.cli.common import emit
from controller.cli.table_cmd import EXIT_NOT_RUNNING, _ask, socket_path
from controller.codes import CODES, NOT_FAULTS
from controller.config import DEFAULT_PATH, ConfigError, load_config
from controller.control import NotRunning, request
from controller.errorlog import ERROR_DAYS, ERROR_FILE, LEVELS, matches, read_history
from controller.errors import InputError
from controller.logs import IDENTIFIER

JOURNALCTL_TIMEOUT_S = 20
MAX_LINES = 2000
PRIORITY_LEVEL = {0: "critical", 1: "critical", 2: "critical", 3: "error", 4: "warning",
                  5: "info", 6: "info", 7: "debug"}
LEVEL_PRIORITY = {"critical": 2, "error": 3, "warning": 4, "info": 6, "debug": 7}


def register(sub: argparse._SubParsersAction) -> None:
    logs = sub.add_parser("logs", help="the daemon's recent log lines, filtered")
    logs.add_argument("--level", choices=list(LEVELS), help="this level or worse")
    logs.add_argument("--device", help="lines about this device (e.g. shaker)")
    logs.add_argument("--round", type=int, help="lines about this round")
    logs.add_argument("-n", type=int, default=100, help=f"at most this many (1..{MAX_LINES})")
    logs.add_argument("--source", choices=["auto", "journald", "daemon"], default="auto",
                      help="journald, the daemon's ring, or whichever the daemon logs to")
    logs.add_argument("--runtime-dir", type=Path)
    logs.add_argument("--json", action="store_true")
    logs.set_defaults(func=cmd_logs)
    errs = sub.add_parser("errors", help="what went wrong this week: each error with its code")
    errs.add_argument("--days", type=int, default=ERROR_DAYS, help=f"1..{ERROR_DAYS}")
    errs.add_argument("--state-dir", type=Path, help="read the history file (daemon stopped)")
    errs.add_argument("--runtime-dir", type=Path)
    errs.add_argument("--json", action="store_true")
    errs.set_defaults(func=cmd_errors)


def line_text(line: dict[str, Any]) -> str:
    code = f" {line['code']}" if line.get("code") else ""
    fields = " ".join(f"{k}={v}" for k, v in (line.get("fields") or {}).items())
    return f"{line['utc']} {line['level'].upper()}{code} {line['message']}" + (
        f" {fields}" if fields else "")


# -- logs -----------------------------------------------------------------------------------------


def cmd_logs(args: argparse.Namespace) -> int:
    if not 1 <= args.n <= MAX_LINES:
        raise InputError(f"-n must be within 1..{MAX_LINES}, got {args.n}")
    source = args.source
    if source == "auto":
        source = _logs_route(args)
    if source == "journald":
        result = {"source": "journald", "lines": from_journald(args)}
    else:
        query = {k: v for k, v in (("level", args.level), ("device", args.device),
                                   ("round", args.round), ("n", args.n)) if v is not None}
        result = _ask(args, "logs", query)
    emit(result, args.json, lambda: "\n".join(line_text(x) for x in result["lines"]))
    return 0


def _logs_route(args: argparse.Namespace) -> str:
    """journald when the daemon logs there (its start line says so in status), or when the
    daemon is down and journalctl is here; else the daemon's ring."""
    has_journalctl = shutil.which("journalctl") is not None
    try:
        status = request(socket_path(args), "status")
    except NotRunning:
        if has_journalctl:
            return "journald"
        raise
    route = (status.get("program") or {}).get("log_route")
    return "journald" if has_journalctl and route in ("journal", "prefixed") else "daemon"


def from_journald(args: argparse.Namespace) -> list[dict[str, Any]]:
    cmd = ["journalctl", "--output=json", "--no-pager", "-n", str(args.n),
           f"SYSLOG_IDENTIFIER={IDENTIFIER}"]
    if args.level:
        cmd += ["-p", str(LEVEL_PRIORITY[args.level])]
    if args.device:
        cmd.append(f"DEVICE={args.device}")
    if args.round is not None:
        cmd.append(f"ROUND={args.round}")
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=JOURNALCTL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"journalctl: {exc}") from None
    if run.returncode != 0:
        raise InputError(f"journalctl failed: {run.stderr.strip()[:300]}")
    lines = []
    for text in run.stdout.splitlines():
        try:
            entry = json.loads(text)
        except ValueError:
            continue
        if isinstance(entry, dict):
            lines.append(journal_line(entry))
    return [x for x in lines if matches(x, args.level, args.device, args.round)]


def journal_line(entry: dict[str, Any]) -> dict[str, Any]:
    """A journald entry (journalctl -o json) as a logbook line."""
    try:
        utc = datetime.fromtimestamp(int(entry["__REALTIME_TIMESTAMP"]) / 1e6, UTC)
        when = utc.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (KeyError, ValueError, TypeError, OverflowError):
        when = "-"
    try:
        level = PRIORITY_LEVEL.get(int(entry.get("PRIORITY", 6)), "info")
    except (ValueError, TypeError):
        level = "info"
    fields: dict[str, Any] = {}
    for key in ("ROUND", "DEVICE", "KIND", "TASK"):
        if isinstance(entry.get(key), str):
            value = entry[key]
            fields[key.lower()] = int(value) if key == "ROUND" and value.isdigit() else value
    message = entry.get("MESSAGE")
    line: dict[str, Any] = {"utc": when, "level": level,
                            "message": message if isinstance(message, str) else str(message),
                            "fields": fields}
    if LEVELS[level] >= LEVELS["warning"]:
        line["code"] = entry.get("CODE") if isinstance(entry.get("CODE"), str) else "E900"
    return line


# -- errors ---------------------------------------------------------------------------------------


def cmd_errors(args: argparse.Namespace) -> int:
    if not 1 <= args.days <= ERROR_DAYS:
        raise InputError(f"--days must be within 1..{ERROR_DAYS}, got {args.days}")
    if args.state_dir is not None:
        result = {"errors": read_history(args.state_dir / ERROR_FILE, args.days)}
    else:
        try:
            result = request(socket_path(args), "errors", {"days": args.days})
        except NotRunning as exc:
            state_dir = _configured_state_dir()
            if state_dir is None:
                print(f"tablectl: {exc}; give --state-dir to read the history file",
                      file=sys.stderr)
                return EXIT_NOT_RUNNING
            result = {"errors": read_history(state_dir / ERROR_FILE, args.days)}
    emit(result, args.json, lambda: errors_text(result["errors"], args.days))
    return 0


def _configured_state_dir() -> Path | None:
    try:
        return load_config(DEFAULT_PATH).service.state_dir
    except (ConfigError, OSError):
        return None


def errors_text(errors: list[dict[str, Any]], days: int) -> str:
    """The errors first, counted by code; then the refusals and notices, which are kept but are
    no fault of the table (controller/codes.py NOT_FAULTS), counted apart."""
    faults = [e for e in errors if e.get("code", "E900") not in NOT_FAULTS]
    others = Counter(e.get("code") for e in errors if e.get("code", "E900") in NOT_FAULTS)
    apart = "; ".join(f"{n} {NOT_FAULTS[code]} ({code})" for code, n in sorted(others.items()))
    also = f"\nnot counted as errors: {apart} (--json lists them)" if apart else ""
    if not faults:
        return f"no errors in the last {days} days{also}"
    counts = Counter(e.get("code", "E900") for e in faults)
    lines = [f"{len(faults)} errors in the last {days} days:"]
    lines += [f"  {code}  {n:>5}x  {CODES.get(code, 'unknown code')}"
              for code, n in sorted(counts.items())]
    lines.append("")
    lines += [line_text(e) for e in faults[-50:]]
    if len(faults) > 50:
        lines.append(f"(the last 50 of {len(faults)}; --json for all)")
    return "\n".join(lines) + also
