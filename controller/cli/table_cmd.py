"""Technician commands that talk to the running daemon over its control socket, plus the offline
ones (`journal verify`, `config validate`) that never need it.

    tablectl status [--json] | watch | journal tail|summary|verify|accept-loss|keygen | round show N
    tablectl dealer ACTION [key=value ...] | selftest | devices list | config validate FILE
    tablectl config show [FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import sys
import syslog
from pathlib import Path
from typing import Any

from controller.cli.common import emit
from controller.cli.show import (
    config_lines,
    event_args,
    fields_text,
    link_text,
    pool_text,
    value_text,
    watch_lines,
)
from controller.config import DEFAULT_PATH, ConfigError, config_json, load_config
from controller.control import SOCKET_NAME, NotRunning, RequestRefused, request, stream
from controller.describe import describe_round
from controller.errors import InputError
from controller.journal import JournalError, accept_loss, verify_dir
from controller.journal_mac import SYSTEM_KEY_FILE, make_key_file
from controller.money import dollars_or_dash

EXIT_NOT_RUNNING = 3


def register(sub: argparse._SubParsersAction) -> None:
    def add(name: str, help_: str, func: Any, json_flag: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_)
        p.add_argument("--runtime-dir", type=Path, help="where tablectld's control socket is")
        if json_flag:
            p.add_argument("--json", action="store_true")
        p.set_defaults(func=func)
        return p

    add("status", "game, rules, state, round, devices, link, pool", cmd_status)
    add("watch", "live view of every event and effect", cmd_watch)
    add("selftest", "ask the daemon to exercise its devices", cmd_selftest)

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

    rnd = sub.add_parser("round", help="one round from the journal")
    rsub = rnd.add_subparsers(dest="round_command", required=True, parser_class=type(rnd))
    show = rsub.add_parser("show")
    show.add_argument("number", type=int)
    show.add_argument("--runtime-dir", type=Path)
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_round)

    dealer = add("dealer", "inject a dealer keypad action", cmd_dealer)
    dealer.add_argument("action", help="e.g. no_more_bets, shake, void")
    dealer.add_argument("fields", nargs="*", help="key=value data (value parsed as JSON if it can)")

    # `tablectl devices ...` lives in controller/cli/devices_cmd.py.

    cfg = sub.add_parser("config", help="configuration")
    csub = cfg.add_subparsers(dest="config_command", required=True, parser_class=type(cfg))
    val = csub.add_parser("validate", help="check a table.toml without the daemon")
    val.add_argument("file", type=Path, nargs="?", default=Path(DEFAULT_PATH))
    val.add_argument("--json", action="store_true")
    val.set_defaults(func=cmd_config_validate)
    show = csub.add_parser("show", help="the configuration in effect: the running daemon's, or a"
                           " file's (amounts in dollars; --json: as the daemon holds it, cents)")
    show.add_argument("file", type=Path, nargs="?", help="a table.toml instead of the daemon's")
    show.add_argument("--runtime-dir", type=Path)
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_config_show)


def socket_path(args: argparse.Namespace) -> Path:
    """--runtime-dir, else $TABLECTL_RUNTIME_DIR, else the config's, else /run/tablectl."""
    if getattr(args, "runtime_dir", None):
        return Path(args.runtime_dir) / SOCKET_NAME
    if os.environ.get("TABLECTL_RUNTIME_DIR"):
        return Path(os.environ["TABLECTL_RUNTIME_DIR"]) / SOCKET_NAME
    try:
        return load_config(DEFAULT_PATH).service.runtime_dir / SOCKET_NAME
    except (ConfigError, OSError):
        return Path("/run/tablectl") / SOCKET_NAME


def _ask(args: argparse.Namespace, cmd: str, payload: dict[str, Any] | None = None) -> Any:
    try:
        return request(socket_path(args), cmd, payload)
    except NotRunning as exc:
        print(f"tablectl: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_NOT_RUNNING) from None
    except RequestRefused as exc:
        raise InputError(str(exc)) from None


def cmd_status(args: argparse.Namespace) -> int:
    st = _ask(args, "status")

    def human() -> str:
        from controller.cli.devices_cmd import state_text  # (it imports this module)

        lines = [
            f"table    {st['table_id']}  {st['game']} ({st.get('rules') or '-'})",
            f"state    {st['state']}  round {st.get('round')}",
        ]
        if st.get("out_of_service"):
            lines.append(f"OUT OF SERVICE: {st['out_of_service']}")
        if st.get("mode") not in (None, "production"):
            lines.append(f"mode     {st['mode'].upper()} (may run unverified software)")
        failures = (st.get("tasks") or {}).get("failures") or {}
        if failures:
            lines.append("tasks    " + ", ".join(f"{n} died {c}x" for n, c in failures.items()))
        lines.append(f"link     {link_text(st.get('link'))}")
        if st.get("pool"):
            lines.append(f"pool     {pool_text(st['pool'])}")
        meters = (st.get("meters") or {}).get("shift")
        if meters:
            lines.append(
                f"shift    {meters.get('number')}: {meters.get('rounds_played')} rounds played,"
                f" {meters.get('rounds_voided')} voided, house win"
                f" {dollars_or_dash(meters.get('house_win'))} (tablectl meters)"
            )
        if isinstance(st.get("verification"), dict):
            lines.append(f"software {st['verification'].get('state')}")
        for name, h in st["devices"].items():
            err = f"  last error: {h['last_error']}" if h.get("last_error") else ""
            lines.append(f"device   {name:<9} {state_text(h)}{err}")
        lines.append(f"events   {st['events']} this run, uptime {st['uptime_s']} s")
        return "\n".join(lines)

    emit(st, args.json, human)
    return 0 if not st.get("out_of_service") else 1


def cmd_watch(args: argparse.Namespace) -> int:
    try:
        for item in stream(socket_path(args), "watch"):
            if args.json:
                print(json.dumps(item), flush=True)
            elif "status" in item:
                s = item["status"]
                print(
                    f"watching {s['table_id']} ({s['game']}) state {s['state']} round {s['round']}"
                )
            else:
                print("\n".join(watch_lines(item)), flush=True)
    except NotRunning as exc:
        print(f"tablectl: {exc}", file=sys.stderr)
        return EXIT_NOT_RUNNING
    except KeyboardInterrupt:
        return 0
    return 0


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
    rep = verify_dir(args.state_dir, key_file=args.key_file)
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


def cmd_round(args: argparse.Namespace) -> int:
    rnd = _ask(args, "round_show", {"number": args.number})

    def human() -> str:
        rec = rnd.get("record") or {}
        lines = [f"round {rnd['round']}: {rec.get('status', 'open')}"]
        lines += [
            f"  #{e['seq']} {e['utc']} {e['kind']} {event_args(e['data'])}".rstrip()
            for e in rnd["events"]
        ]
        if rec.get("summary"):
            lines.append("  " + describe_round({"number": rnd["round"], **rec}))
        return "\n".join(lines)

    emit(rnd, args.json, human)
    return 0


def _field(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise InputError(f"dealer data {text!r} must be key=value")
    key, value = text.split("=", 1)
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def cmd_dealer(args: argparse.Namespace) -> int:
    data = dict(_field(f) for f in args.fields)
    result = _ask(args, "dealer", {"action": args.action, "data": data})
    said = [
        e["data"].get("text") for e in result.get("effects", []) if e["kind"] in ("log", "alarm")
    ]

    def human() -> str:
        head = (
            f"dealer.{args.action} -> journal #{result['seq']}, state "
            f"{result['status'].get('state')} round {result['status'].get('round')}"
        )
        return "\n".join([head, *(f"  {text}" for text in said)])

    emit(result, args.json, human)
    # The machine answers a refused action with a log/alarm effect: make that a failure.
    return 0 if result["seq"] is not None and not said else 1


def cmd_selftest(args: argparse.Namespace) -> int:
    report = _ask(args, "selftest")
    emit(
        report,
        args.json,
        lambda: "\n".join(
            [f"selftest {'OK' if report['ok'] else 'FAILED'}"]
            + [
                f"  {n:<9} {'ok' if r.get('ok') else 'FAIL'} {fields_text(r, skip=('ok',))}"
                for n, r in report["devices"].items()
            ]
        ),
    )
    return 0 if report["ok"] else 1


def cmd_devices(args: argparse.Namespace) -> int:
    devices = _ask(args, "devices")
    emit(
        devices,
        args.json,
        lambda: "\n".join(
            f"{n:<9} {d['state']:<8} counters {value_text('counters', d['counters'])}"
            f" last error {d['last_error'] or '-'}"
            for n, d in devices.items()
        ),
    )
    return 0


def cmd_config_validate(args: argparse.Namespace) -> int:
    try:
        cfg = load_config(args.file)
    except ConfigError as exc:
        if args.json:
            print(json.dumps({"ok": False, "errors": exc.errors}))
        else:
            for line in exc.errors:
                print(f"{args.file}: {line}" if not line.startswith(str(args.file)) else line)
        return 1
    emit(
        {"ok": True, "config": config_json(cfg)},
        args.json,
        lambda: f"{args.file}: OK ({cfg.game}, table {cfg.table_id})",
    )
    return 0


def cmd_config_show(args: argparse.Namespace) -> int:
    """The daemon's configuration (what it runs with), else the file's: FILE, or the default
    path when the daemon is not running. Exit 0; 1 when the file is not valid (its problems
    listed, as `config validate` does); 3 when neither the daemon nor the file is there."""
    source: str
    if args.file is None:
        try:
            shown = request(socket_path(args), "status")["config"]
            source = "the running tablectld"
        except NotRunning:
            args.file = Path(DEFAULT_PATH)
    if args.file is not None:
        if not args.file.exists():
            print(f"tablectl: tablectld is not running and there is no {args.file}",
                  file=sys.stderr)
            return EXIT_NOT_RUNNING
        try:
            shown = config_json(load_config(args.file))
        except ConfigError:
            return cmd_config_validate(args)  # every problem listed, exit 1
        source = str(args.file)
    emit(shown, args.json, lambda: "\n".join([f"# {source}", *config_lines(shown)]))
    return 0
