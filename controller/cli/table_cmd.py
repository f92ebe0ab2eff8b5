"""Technician commands that talk to the running daemon over its control socket, plus the offline
`config validate` that never needs it.

    tablectl status [--json] | watch | round show N   (journal: controller/cli/journal_cmd.py)
        status exits 0 healthy, 1 out of service, 3 not running, 4 needs a person (an active
        alarm, a device in fault, a stuck round: controller/cli/attention.py)
    tablectl dealer ACTION [key=value ...] | table open|close | selftest | config validate FILE
    tablectl config show [FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from controller.cli.attention import (
    EXIT_HEALTHY,
    EXIT_NEEDS_ATTENTION,
    EXIT_NOT_RUNNING,
    EXIT_OUT_OF_SERVICE,
    EXIT_STARTING,
    attention_lines,
    state_text,
)
from controller.cli.common import emit
from controller.cli.show import (
    config_lines,
    event_args,
    in_dollars,
    link_text,
    pool_text,
    tree_lines,
    value_text,
    watch_lines,
)
from controller.config import DEFAULT_PATH, ConfigError, config_json, load_config
from controller.config.model import MAX_JACKPOT_WAGER, TableConfig
from controller.control import SOCKET_NAME, NotRunning, RequestRefused, request, stream
from controller.describe import describe_round
from shared.errors import InputError
from shared.money import dollars, dollars_or_dash


def register(sub: argparse._SubParsersAction) -> None:
    def add(name: str, help_: str, func: Any, json_flag: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_)
        p.add_argument("--runtime-dir", type=Path, help="where tablectld's control socket is")
        if json_flag:
            p.add_argument("--json", action="store_true")
        p.set_defaults(func=func)
        return p

    add("status", "game, rules, state, round, devices, link, pool and what needs a person"
        " (exit 0 healthy, 1 out of service, 3 not running, 4 needs a person, 5 still starting)",
        cmd_status)
    add("watch", "live view of every event and effect", cmd_watch)
    add("selftest", "ask the daemon to exercise its devices", cmd_selftest)

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

    table = add("table", "open or close the table (supervisor; journaled with who)", cmd_table)
    table.add_argument("action", choices=("open", "close"))

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
        return _in_runtime_dir(Path(args.runtime_dir), "--runtime-dir")
    if os.environ.get("TABLECTL_RUNTIME_DIR"):
        return _in_runtime_dir(Path(os.environ["TABLECTL_RUNTIME_DIR"]), "TABLECTL_RUNTIME_DIR")
    try:
        return load_config(DEFAULT_PATH).service.runtime_dir / SOCKET_NAME
    except (ConfigError, OSError):
        return Path("/run/tablectl") / SOCKET_NAME


def _in_runtime_dir(run: Path, named_by: str) -> Path:
    """The control socket in a runtime directory a person named; a file there instead of a
    directory is said with its name (the socket's connect would say only "Not a directory")."""
    if run.exists() and not run.is_dir():
        raise InputError(f"{named_by} {run} is not a directory: give the daemon's runtime"
                         f" directory, the one holding {SOCKET_NAME} ([service] runtime_dir)")
    return run / SOCKET_NAME


def _ask(args: argparse.Namespace, cmd: str, payload: dict[str, Any] | None = None) -> Any:
    try:
        return request(socket_path(args), cmd, payload)
    except NotRunning as exc:
        print(f"tablectl: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_NOT_RUNNING) from None
    except RequestRefused as exc:
        raise InputError(refusal_text(args, cmd, str(exc))) from None


def refusal_text(args: argparse.Namespace, cmd: str, text: str) -> str:
    """The daemon's refusal names its request (`'meters_close_shift' needs group ...`); a person
    typed a command: name that (`tablectl meters close-shift needs group ...`)."""
    typed = getattr(args, "typed", None)
    if typed and text.startswith(f"permission denied: {cmd!r} "):
        return text.replace(f"{cmd!r}", f"`{typed}`", 1)
    return text


def cmd_status(args: argparse.Namespace) -> int:
    st = _ask(args, "status")

    def human() -> str:
        lines = [
            f"table    {st['table_id']}  {st['game']} ({st.get('rules') or '-'})",
            f"state    {st['state']}  round {st.get('round')}",
        ]
        if st.get("out_of_service"):
            lines.append(f"OUT OF SERVICE: {st['out_of_service']}")
        elif st.get("ready") is False:  # devices and service tests answer once it is ready
            lines.append("STARTING: devices and journal not up yet; ask again in a moment")
        faults = st.get("archive_faults") or []
        if faults:
            lines.append(f"ALARM: {len(faults)} journal archive(s) missing or altered (E106; "
                         "tablectl journal verify; docs/operations.md, \"An archive missing or "
                         "altered\"): " + "; ".join(faults[:3]))
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
            lines.append(software_text(st["verification"]))
        for name, h in st["devices"].items():
            err = f"  last error: {h['last_error']}" if h.get("last_error") else ""
            lines.append(f"device   {name:<9} {state_text(h)}{err}")
        lines.append(f"events   {st['events']} this run, uptime {st['uptime_s']} s")
        lines += attention_lines(st.get("attention"))
        return "\n".join(lines)

    emit(st, args.json, human)
    return status_exit(st)


def status_exit(st: dict[str, Any]) -> int:
    """0 in service and nothing needs a person; 1 out of service; 4 in service but an alarm, a
    device fault or a stuck round needs one; 5 still starting: nothing is known healthy yet
    (3, not running, is `_ask`'s)."""
    if st.get("out_of_service"):
        return EXIT_OUT_OF_SERVICE
    if st.get("ready") is False:
        return EXIT_STARTING
    if not (st.get("attention") or {}).get("healthy", True) or st.get("archive_faults"):
        return EXIT_NEEDS_ATTENTION  # an archive missing or altered (E106) is one too
    return EXIT_HEALTHY


SOFTWARE_STATES = {
    "verified": "the installed files match the signed manifest",
    "checking": "checking the installed files against the manifest",
    "not_configured": "not checked: no manifest configured (allowed only in development or"
                      " simulation)",
    "missing": "no verification settings: the table will not play",
    "failed": "the installed files do not match the manifest: the table will not play",
}


def software_text(v: dict[str, Any]) -> str:
    """`software verified` with what the state means, and the detail when there is one."""
    state = str(v.get("state"))
    line = f"software {state}: {SOFTWARE_STATES.get(state, 'see tablectl verify')}"
    detail = v.get("detail")
    if detail and state != "not_configured":
        line += f" ({detail})"
    return line


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
        arch = rnd.get("archive")
        if arch:
            lines.append(f"  (not in the journal file: read back from the archive {arch['path']}"
                         f" of segment {arch['segment']}, sha256 {arch['sha256']}, its chain "
                         "checked to the segment's head)")
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


def _acted(args: argparse.Namespace, name: str, result: dict[str, Any]) -> int:
    """Exit 0 when the machine took the action (what it did on stdout); 1 when it refused: one
    line on stderr saying so and that nothing changed, nothing on stdout (a person must not read
    `-> journal #20, state ...` as done)."""
    said = [e["data"].get("text") for e in result.get("effects", [])
            if e["kind"] in ("log", "alarm") and not e["data"].get("refused")]
    status = result.get("status") or {}
    where = f"state {status.get('state')} round {status.get('round')}"
    if result.get("refused"):
        if args.json:
            emit(result, True, str)
        reason = result["refused"]  # the machines' words start "<kind> refused: " (UTH, Pai Gow)
        kept = ("the refusal is journaled as #" + str(result["seq"])) if result.get("seq") \
            is not None else "not journaled"
        print(f"tablectl: {reason if name in reason else f'{name} refused: {reason}'};"
              f" nothing changed ({where}; {kept})", file=sys.stderr)
        return 1

    def human() -> str:
        head = f"{name} done: journal #{result['seq']}, {where}"
        return "\n".join([head, *(f"  {in_dollars(str(text))}" for text in said)])

    emit(result, args.json, human)
    return 0


def cmd_dealer(args: argparse.Namespace) -> int:
    data = dict(_field(f) for f in args.fields)
    result = _ask(args, "dealer", {"action": args.action, "data": data})
    return _acted(args, f"dealer.{args.action}", result)


def cmd_table(args: argparse.Namespace) -> int:
    result = _ask(args, "table", {"action": args.action})
    return _acted(args, f"table.{args.action}", result)


def cmd_selftest(args: argparse.Namespace) -> int:
    report = _ask(args, "selftest")
    att = _ask(args, "status").get("attention") if not args.json else None

    def human() -> str:
        lines = [f"selftest {'OK' if report['ok'] else 'FAILED'}"]
        for name, r in report["devices"].items():
            lines.append(f"  {name:<9} {'ok' if r.get('ok') else 'FAIL'}")
            lines += tree_lines({k: v for k, v in r.items() if k != "ok"}, "      ")
        return "\n".join(lines + attention_lines(att))

    emit(report, args.json, human)
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
    notes = head_office_notes(cfg)
    emit(
        {"ok": True, "config": config_json(cfg), "notes": notes},
        args.json,
        lambda: "\n".join([f"{args.file}: OK ({cfg.game}, table {cfg.table_id})",
                           *(f"  note: {n}" for n in notes)]),
    )
    return 0


def head_office_notes(cfg: TableConfig) -> list[str]:
    """What head office will accept of this table's configuration, by default: what a valid
    file cannot promise alone (head office's own configuration decides)."""
    jackpot = cfg.jackpot
    if cfg.game != "uth" or jackpot is None or not jackpot.enabled:
        return []
    return [f"uth.jackpot.wager is {jackpot.wager} cents ({dollars(jackpot.wager)}); head office "
            f"accepts a jackpot wager up to {MAX_JACKPOT_WAGER} cents "
            f"({dollars(MAX_JACKPOT_WAGER)}) by default ([service] max_jackpot_wager), and only "
            f"the wager of pool {jackpot.pool_id!r} when that pool sets one ([[pools]] wager, "
            "15.2.5.3): an increment at another wager is refused"]


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
