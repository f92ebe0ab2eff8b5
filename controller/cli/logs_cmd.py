"""`tablectl logs` and `tablectl errors`: what the daemon said, and what went wrong this week.

    tablectl logs [--level warning] [--device shaker] [--round 12] [-n 100] [--source auto]
                  [-f] [--since 10m]
    tablectl errors [--days 7] [--state-dir DIR]

`logs` reads journald (`journalctl`, the daemon's SYSLOG_IDENTIFIER and its structured fields)
when the daemon logs there, else the daemon's own ring of recent lines over the control socket.
`errors` is the error history: every warning or worse with its code (docs/operations.md, "Error
codes"), kept a week in the state directory; read from the daemon, or from the file when the
daemon is down.

Exit codes: 0 shown; 1 `logs` found no line that matched ("no lines matched" on stderr); 2 a
bad argument or a refusal; 3 neither the daemon nor the file (or journald) is there to ask.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from controller.cli.common import emit
from controller.cli.journal_access import unreadable
from controller.cli.table_cmd import EXIT_NOT_RUNNING, _ask, socket_path
from controller.codes import CODES, NOT_FAULTS
from controller.config import DEFAULT_PATH, ConfigError, load_config
from controller.control import NotRunning, request
from controller.errorlog import ERROR_DAYS, ERROR_FILE, LEVELS, matches, read_history
from controller.logs import IDENTIFIER
from shared.errors import InputError

JOURNALCTL_TIMEOUT_S = 20
EXIT_NO_MATCH = 1  # `logs`: nothing matched (as grep: a script can tell)
FOLLOW_POLL_S = 0.5  # `logs -f` from the daemon: how often it asks
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
    logs.add_argument("-f", "--follow", action="store_true",
                      help="then print new lines as they come (Ctrl-C ends it)")
    logs.add_argument("--since", help="lines from this UTC time on: 2026-11-28 21:40[:00],"
                      " 2026-11-28T21:40:00Z, or ago: 30s, 10m, 2h, 1d (also -10m, '10m ago')")
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
    args.since_utc = None if args.since is None else since_utc(args.since)
    source = args.source
    if source == "auto":
        source = _logs_route(args)
    if source == "journald":
        result: dict[str, Any] = {"source": "journald", "lines": from_journald(args)}
    else:
        result = _ask(args, "logs", _query(args))
    if args.json and not args.follow:
        print(json.dumps(result))
    else:
        show_lines(args, result["lines"])
    if args.follow:
        try:
            if source == "journald":
                follow_journald(args)
            else:
                follow_daemon(args, result["cursor"])
        except KeyboardInterrupt:
            return 0
        return 0
    if not result["lines"]:
        print("no lines matched", file=sys.stderr)
        return EXIT_NO_MATCH
    return 0


def _query(args: argparse.Namespace, after: int | None = None) -> dict[str, Any]:
    query = {k: v for k, v in (("level", args.level), ("device", args.device),
                               ("round", args.round), ("n", args.n), ("after", after),
                               ("since", args.since_utc)) if v is not None}
    return query


def show_lines(args: argparse.Namespace, lines: list[dict[str, Any]]) -> None:
    for line in lines:
        print(json.dumps(line) if args.json else line_text(line), flush=True)


def follow_daemon(args: argparse.Namespace, cursor: int) -> None:
    """Ask the daemon for the lines after `cursor`, again and again."""
    while True:
        time.sleep(FOLLOW_POLL_S)
        got = _ask(args, "logs", _query(args, after=cursor))
        show_lines(args, got["lines"])
        cursor = got["cursor"]


JOURNALCTL_STOP_S = 2.0  # a followed journalctl's time to end after SIGTERM


def follow_journald(args: argparse.Namespace) -> None:
    """`journalctl -f`: the lines as journald gets them, filtered as `logs` filters."""
    cmd = [*_journalctl(args, n=0), "--follow"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout is not None
        try:
            for text in proc.stdout:
                line = _parsed_line(text)
                if line is not None and matches(line, args.level, args.device, args.round):
                    show_lines(args, [line])
        finally:
            # Never leave a journalctl behind (it holds the terminal's stderr): asked to end,
            # then killed if it has not within the moment a Ctrl-C allows.
            proc.terminate()
            try:
                proc.wait(JOURNALCTL_STOP_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


SINCE_AGO = re.compile(r"-?\s*(\d+)\s*(s|sec|m|min|h|hour|hours|d|day|days)(\s+ago)?")
AGO_UNIT = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "hours": 3600,
            "d": 86400, "day": 86400, "days": 86400}


def since_utc(text: str, now: datetime | None = None) -> str:
    """`--since` as the lines' UTC stamp (`2026-11-28T21:40:00.000Z`), from a UTC time or an
    age; anything else is refused with the forms it takes."""
    now = now or datetime.now(UTC)
    words = text.strip().lower()
    ago = SINCE_AGO.fullmatch(words)
    if ago:
        when = now - timedelta(seconds=int(ago.group(1)) * AGO_UNIT[ago.group(2)])
    else:
        try:
            when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise InputError(f"--since {text!r}: give a UTC time (2026-11-28 21:40,"
                             " 2026-11-28T21:40:00Z) or an age (30s, 10m, 2h, 1d)") from None
        when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


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


def _journalctl(args: argparse.Namespace, n: int) -> list[str]:
    cmd = ["journalctl", "--output=json", "--no-pager", "-n", str(n),
           f"SYSLOG_IDENTIFIER={IDENTIFIER}"]
    if args.level:
        cmd += ["-p", str(LEVEL_PRIORITY[args.level])]
    if args.since_utc:
        stamp = datetime.fromisoformat(args.since_utc.replace("Z", "+00:00")).timestamp()
        cmd.append(f"--since=@{int(stamp)}")
    if args.device:
        cmd.append(f"DEVICE={args.device}")
    if args.round is not None:
        cmd.append(f"ROUND={args.round}")
    return cmd


def from_journald(args: argparse.Namespace) -> list[dict[str, Any]]:
    cmd = _journalctl(args, args.n)
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=JOURNALCTL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"journalctl: {exc}") from None
    if run.returncode != 0:
        raise InputError(f"journalctl failed: {run.stderr.strip()[:300]}")
    if not run.stdout.strip() and (cannot := unreadable(run.stderr)):
        raise InputError(cannot)
    lines = [line for line in map(_parsed_line, run.stdout.splitlines()) if line is not None]
    return [x for x in lines if matches(x, args.level, args.device, args.round)]


def _parsed_line(text: str) -> dict[str, Any] | None:
    try:
        entry = json.loads(text)
    except ValueError:
        return None
    return journal_line(entry) if isinstance(entry, dict) else None


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
