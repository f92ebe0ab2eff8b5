"""`tablectl journal ...`: the journal's technician commands. `tail` and `summary` ask the
running daemon; `verify`, `accept-loss` and `keygen` work offline, without it.

    tablectl journal tail [-n N] | summary | verify --state-dir DIR | accept-loss ... | keygen
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import sys
import syslog
from pathlib import Path

from controller.cli.common import emit
from controller.cli.table_cmd import _ask
from controller.journal import JournalError, accept_loss, verify_dir
from controller.journal.mac import SYSTEM_KEY_FILE, make_key_file


def register(sub: argparse._SubParsersAction) -> None:
    journal = sub.add_parser("journal", help="the table's journal")
    jsub = journal.add_subparsers(dest="journal_command", required=True, parser_class=type(journal))
    for name, help_ in (("tail", "the latest events"), ("summary", "counts and sizes")):
        p = jsub.add_parser(name, help=help_)
        p.add_argument("--runtime-dir", type=Path)
        p.add_argument("--json", action="store_true")
        if name == "tail":
            p.add_argument("-n", type=int, default=20)
        p.set_defaults(func=cmd_journal)
    v = jsub.add_parser("verify", help="verify the hash chain, its MACs and the high-water mark "
                        "offline (no daemon needed)")
    v.add_argument("--state-dir", type=Path, required=True)
    v.add_argument("--key-file", type=Path, help="the journal key (default: as the daemon finds "
                   "it; without one the MACs are not checked)")
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=cmd_verify)
    a = jsub.add_parser("accept-loss", help="root only, daemon stopped: record that the journal "
                        "lost records (or its high-water mark) and let the table play again")
    a.add_argument("--state-dir", type=Path, required=True)
    a.add_argument("--reason", required=True, help="why, for the record (who: taken from the OS)")
    a.add_argument("--key-file", type=Path)
    a.add_argument("--outbox-after", type=int, metavar="ID", help="head office's acknowledged "
                   "outbox id when it is beyond the journal (the out-of-service message names it)")
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=cmd_accept_loss)
    k = jsub.add_parser("keygen", help="make the table's journal key once (never replaces one; "
                        "default /etc/tablectl/journal-key, root); tablectl-journal-key.service "
                        "runs it on first start")
    k.add_argument("path", type=Path, nargs="?", default=SYSTEM_KEY_FILE)
    k.add_argument("--json", action="store_true")
    k.set_defaults(func=cmd_keygen)


def cmd_journal(args: argparse.Namespace) -> int:
    if args.journal_command == "tail":
        rows = _ask(args, "journal_tail", {"n": args.n})
        emit(
            rows,
            args.json,
            lambda: "\n".join(
                f"#{r['seq']} {r['utc']} round {r['round']} {r['kind']} {json.dumps(r['data'])}"
                for r in rows
            ),
        )
    else:
        summary = _ask(args, "journal_summary")
        emit(summary, args.json, lambda: "\n".join(f"{k:<18} {v}" for k, v in summary.items()))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    show = sys.stderr.isatty() and not args.json

    def progress(seq: int, last: int) -> None:  # a year's journal takes a while: say how far
        print(f"\rverifying: seq {seq} of {last} ({100 * seq // max(last, 1)} %)", end="",
              file=sys.stderr, flush=True)

    rep = verify_dir(args.state_dir, key_file=args.key_file, progress=progress if show else None)
    if show:
        print(file=sys.stderr)
    report = {**rep.as_json(), "macs": rep.macs, "mark": rep.mark}

    def human() -> str:
        head = "OK" if report["ok"] else "FAILED"
        lines = [
            f"journal {head}: {report['records']} records, {report['rounds_completed']} rounds"
            f" completed, {report['rounds_voided']} voided",
            f"  MACs: {rep.macs}",
            f"  high-water mark: {rep.mark}",
        ]
        lines += [f"  error: {e}" for e in report["errors"]]
        return "\n".join(lines)

    emit(report, args.json, human)
    return 0 if report["ok"] else 1


def _operator() -> str:
    """Who runs this: the user, and who they were before sudo."""
    name = pwd.getpwuid(os.geteuid()).pw_name
    sudo = os.environ.get("SUDO_USER")
    return f"{name} (sudo from {sudo})" if sudo and sudo != name else name


def cmd_accept_loss(args: argparse.Namespace) -> int:
    # Root only: on the image the journal key is a root-only file, and this is a decision a
    # supervisor takes through sudo (which the record names), never the daemon's own user.
    if os.geteuid() != 0:
        print("tablectl: journal accept-loss is for root (a supervisor, through sudo)",
              file=sys.stderr)
        return 1
    try:
        record = accept_loss(args.state_dir, reason=args.reason, user=_operator(),
                             key_file=args.key_file, outbox_after=args.outbox_after)
    except (JournalError, ValueError) as exc:
        print(f"tablectl: journal accept-loss refused: {exc}", file=sys.stderr)
        return 1
    lost = record["lost"]
    # Also to the system log (journald on the table): a loss is an event for surveillance.
    syslog.openlog("tablectl")
    syslog.syslog(syslog.LOG_WARNING, f"journal loss accepted: {json.dumps(record)}")
    emit(record, args.json, lambda: (
        f"loss recorded as journal #{record['seq']} by {record['by']}: "
        + (f"seq {lost[0]}..{lost[1]} lost" if lost else record["problem"])
        + f"; next outbox message {record['outbox_next']}"
        + f"; high-water mark reset to seq {record['seq']}"))
    return 0


def cmd_keygen(args: argparse.Namespace) -> int:
    try:
        key = make_key_file(args.path)
    except FileExistsError:
        print(f"tablectl: journal keygen: {args.path} exists; a key is never replaced (the "
              "journal it protects could not be reopened)", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"tablectl: journal keygen: {args.path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    syslog.openlog("tablectl")
    syslog.syslog(syslog.LOG_NOTICE, f"journal key made: {key.source} (key id {key.key_id})")
    emit({"path": key.source, "key_id": key.key_id}, args.json,
         lambda: f"journal key made: {key.source} (key id {key.key_id}); keep a copy off the table")
    return 0
