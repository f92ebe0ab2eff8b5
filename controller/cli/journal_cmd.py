"""`tablectl journal ...`: the journal's technician commands. `tail` and `summary` ask the
running daemon; `verify`, `accept-loss`, `accept-archive-loss`, `start-fresh` and `keygen`
work offline, without it.

    tablectl journal tail [-n N] | summary | verify [--state-dir DIR] | accept-loss ... | keygen
    tablectl journal start-fresh --state-dir DIR [--config FILE] --reason TEXT
    tablectl journal segments | archive | prune [--keep-rounds N] [--keep-days D] [--dry-run]
        (--state-dir DIR; prune's retention defaults to [journal] of --config)
    tablectl journal downgrade --state-dir DIR   (schema 4 -> 3 for a rollback; daemon stopped)
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import pwd
import sqlite3
import sys
import syslog
from pathlib import Path
from typing import Any

from controller.cli.common import EX_NOPERM, emit
from controller.cli.show import event_args
from controller.cli.table_cmd import _ask
from controller.config.load import DEFAULT_PATH
from controller.config.model import ServiceConfig
from controller.errors import InputError
from controller.journal import (
    JOURNAL_FILE,
    Journal,
    JournalError,
    accept_loss,
    segments,
    start_fresh,
    verify_dir,
)
from controller.journal.mac import SYSTEM_KEY_FILE, KeyFileError, find_key, make_key_file
from controller.journal.retention import plan
from controller.journal.schema import read_meta
from controller.journal.segments import SegmentState


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
    v = jsub.add_parser("verify", help="verify the hash chain, its MACs, the high-water mark and "
                        "every segment's archive offline (no daemon needed)")
    v.add_argument("--state-dir", type=Path, help="default: the installed table's ([service]"
                   f" state_dir of {DEFAULT_PATH}, else {ServiceConfig.state_dir})")
    v.add_argument("--key-file", type=Path, help="the journal key (default: as the daemon finds "
                   "it; without one the MACs are not checked)")
    v.add_argument("--archive-dir", type=Path, help="where the segments' archives are, each "
                   "checked (default: [journal] archive_dir of --config when its state_dir is "
                   "STATE_DIR, else STATE_DIR/archive)")
    v.add_argument("--config", type=Path, default=DEFAULT_PATH,
                   help=f"the table's config, for its archive_dir (default {DEFAULT_PATH}; "
                        "verify needs none)")
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=cmd_verify)
    a = jsub.add_parser("accept-loss", help="root only, daemon stopped: record that the journal "
                        "lost records (or its high-water mark) and let the table play again")
    a.add_argument("--state-dir", type=Path, required=True)
    a.add_argument("--reason", required=True, help="why, for the record (who: taken from the OS)")
    a.add_argument("--key-file", type=Path)
    a.add_argument("--outbox-after", type=int, metavar="ID", help="head office's acknowledged "
                   "outbox id when it is beyond the journal (the out-of-service message names it)")
    a.add_argument("--round-after", type=int, metavar="N", help="head office's last ledgered "
                   "round when it is beyond the journal (the out-of-service message names it)")
    a.add_argument("--config", type=Path, help="the table's config, for its [journal] "
                   "outside_mark and its game (a round left open in a restored copy is voided "
                   f"by the game's rules) (default {DEFAULT_PATH} when it is there)")
    a.add_argument("--outside-mark", type=Path, help="the mark's copy outside the state "
                   "directory (default: [journal] outside_mark of --config)")
    a.add_argument("--json", action="store_true")
    a.set_defaults(func=cmd_accept_loss)
    f = jsub.add_parser("start-fresh", help="root only, daemon stopped: start a new journal "
                        "where one was lost (the daemon refuses to, silently), logged; rounds "
                        "and outbox ids go on after the lost journal's (mark, head office)")
    f.add_argument("--state-dir", type=Path, required=True)
    f.add_argument("--config", type=Path, default=DEFAULT_PATH,
                   help=f"the table's config: its table id, game and [journal] outside_mark "
                   f"(default {DEFAULT_PATH})")
    f.add_argument("--outside-mark", type=Path, help="the mark's copy outside the state "
                   "directory (default: [journal] outside_mark of --config)")
    f.add_argument("--reason", required=True, help="why, for the record (who: taken from the OS)")
    f.add_argument("--key-file", type=Path)
    f.add_argument("--outbox-after", type=int, metavar="ID", help="head office's last "
                   "acknowledged outbox id (linked: the out-of-service message names it)")
    f.add_argument("--round-after", type=int, metavar="N", help="head office's last ledgered "
                   "round (linked: the out-of-service message names it)")
    f.add_argument("--json", action="store_true")
    f.set_defaults(func=cmd_start_fresh)
    segs = jsub.add_parser("segments", help="the journal's segments: closed, archived, "
                           "acknowledged by head office, pruned (offline; the daemon may run)")
    ar = jsub.add_parser("archive", help="daemon stopped: archive the closed segments not "
                         "archived yet (the daemon does it as it runs)")
    pr = jsub.add_parser("prune", help="daemon stopped: prune the archived segments head office "
                         "acknowledged, beyond the retention ([journal] of the table's config, "
                         "or --keep-rounds/--keep-days); --dry-run: say what and why (the "
                         "daemon may run)")
    pr.add_argument("--keep-rounds", type=int, metavar="N",
                    help="rounds kept on the table (default: [journal] keep_rounds of --config)")
    pr.add_argument("--keep-days", type=int, metavar="D",
                    help="days kept on the table (default: [journal] keep_days of --config)")
    pr.add_argument("--config", type=Path, default=DEFAULT_PATH,
                    help=f"the table's config, read when neither --keep-* is given "
                         f"(default {DEFAULT_PATH})")
    pr.add_argument("--dry-run", action="store_true")
    for p, func in ((segs, cmd_segments), (ar, cmd_archive), (pr, cmd_prune)):
        p.add_argument("--state-dir", type=Path, required=True)
        p.add_argument("--key-file", type=Path)
        p.add_argument("--json", action="store_true")
        if p is not segs:
            p.add_argument("--archive-dir", type=Path, help="default STATE_DIR/archive")
        p.set_defaults(func=func)
    al = jsub.add_parser("accept-archive-loss", help="root only, daemon stopped: record that a "
                         "pruned or moved segment's archive is lost for good (missing or altered "
                         "and no copy to put back), who and why, so that verify and status stop "
                         "raising it (E106)")
    al.add_argument("--state-dir", type=Path, required=True)
    al.add_argument("--segment", type=int, required=True, metavar="N",
                    help="the segment `journal verify` names")
    al.add_argument("--reason", required=True, help="why it cannot be put back, for the record "
                    "(who: taken from the OS)")
    al.add_argument("--key-file", type=Path)
    al.add_argument("--archive-dir", type=Path, help="default STATE_DIR/archive")
    al.add_argument("--json", action="store_true")
    al.set_defaults(func=cmd_accept_archive_loss)
    dg = jsub.add_parser("downgrade", help="root only, daemon stopped: give every row of a "
                         "schema-4 journal its chain hash back and mark it schema 3, for the "
                         "software from before schema 4 (tablectl-slot rollback runs it)")
    dg.add_argument("--state-dir", type=Path, required=True)
    dg.add_argument("--key-file", type=Path)
    dg.add_argument("--json", action="store_true")
    dg.set_defaults(func=cmd_downgrade)
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
                f"#{r['seq']} {r['utc']} round {r['round']} {r['kind']} {event_args(r['data'])}"
                .rstrip()
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

    if args.state_dir is None:
        args.state_dir = installed_state_dir(args.config)
    if not args.state_dir.exists():  # not a FAILED report with MAC lines about nothing
        raise FileNotFoundError(errno.ENOENT, "no such state directory (no table installed"
                                " here? give --state-dir)", str(args.state_dir))
    if not (args.state_dir / JOURNAL_FILE).exists() and os.access(args.state_dir, os.X_OK):
        raise InputError(f"no journal in {args.state_dir} ({JOURNAL_FILE} is not there): give"
                         " --state-dir")
    rep = verify_dir(args.state_dir, key_file=args.key_file, progress=progress if show else None,
                     archive_dir=args.archive_dir or _configured_archive_dir(args))
    if show:
        print(file=sys.stderr)
    report = {**rep.as_json(), "macs": rep.macs, "mark": rep.mark, "archives": rep.archives,
              "archive_faults": rep.archive_faults}

    def human() -> str:
        head = "OK" if report["ok"] else "FAILED"
        lines = [
            f"journal {args.state_dir} {head}: {report['records']} records,"
            f" {report['rounds_completed']} rounds completed, {report['rounds_voided']} voided",
            f"  MACs: {rep.macs}",
            f"  high-water mark: {rep.mark}",
            f"  archives: {rep.archives}",
        ]
        lines += [f"  error: {e}" for e in report["errors"]]
        return "\n".join(lines)

    emit(report, args.json, human)
    return 0 if report["ok"] else 1


def installed_state_dir(config: Path = DEFAULT_PATH) -> Path:
    """The installed table's state directory: its config's, else the service's default."""
    from controller.config import ConfigError, load_config

    try:
        return load_config(config).service.state_dir
    except (ConfigError, OSError):
        return ServiceConfig.state_dir


def _configured_archive_dir(args: argparse.Namespace) -> Path | None:
    """[journal] archive_dir of the table's config, when that config's state directory is the
    one verified (a copy elsewhere keeps its archives beside it); None (STATE_DIR/archive)
    when there is no such config, or it cannot be read: verify works without one."""
    from controller.config import ConfigError, load_config

    try:
        cfg = load_config(args.config)
    except (ConfigError, OSError):
        return None
    if cfg.service.state_dir.resolve() != Path(args.state_dir).resolve():
        return None
    return cfg.journal.archive_dir


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
                             key_file=args.key_file, outbox_after=args.outbox_after,
                             round_after=args.round_after, outside_mark=_outside_mark(args),
                             machine=lambda: _machine(args.config or DEFAULT_PATH))
    except (JournalError, ValueError, InputError) as exc:
        print(f"tablectl: journal accept-loss refused: {exc}", file=sys.stderr)
        return 1
    lost = record["lost"]
    # Also to the system log (journald on the table): a loss is an event for surveillance.
    syslog.openlog("tablectl")
    syslog.syslog(syslog.LOG_WARNING, f"journal loss accepted: {json.dumps(record)}")
    emit(record, args.json, lambda: (
        f"loss recorded as journal #{record['seq']} by {record['by']}: "
        + (f"seq {lost[0]}..{lost[1]} lost" if lost else record["problem"])
        + (f"; round {record['voided_round']}, open in the restored copy, voided"
           if record["voided_round"] is not None else "")
        + f"; next outbox message {record['outbox_next']}, next round {record['round_next']}"
        + f"; high-water mark reset to seq {record['seq']}"))
    return 0


def _machine(path: Path) -> Any:
    """The table's round machine from its config at `path` (accept-loss voids a round left open
    in a restored copy by the game's own rules)."""
    from controller.config import load_config
    from controller.daemon.build import build_machine

    return build_machine(load_config(path))


def _outside_mark(args: argparse.Namespace) -> Path | None:
    """--outside-mark, else [journal] outside_mark of --config (of the default config when
    it is there); InputError if a config named by --config cannot be read."""
    if args.outside_mark is not None:
        return Path(args.outside_mark)
    path = args.config or DEFAULT_PATH
    if args.config is None and not path.exists():
        return None
    from controller.config import ConfigError, load_config

    try:
        return load_config(path).journal.outside_mark
    except (ConfigError, OSError) as exc:
        raise InputError(f"the config {path} cannot be read for [journal] outside_mark: "
                         f"{exc}") from exc


def cmd_start_fresh(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:  # as accept-loss: a supervisor's decision, through sudo
        print("tablectl: journal start-fresh is for root (a supervisor, through sudo)",
              file=sys.stderr)
        return 1
    from controller.config import ConfigError, load_config

    try:
        cfg = load_config(args.config)
        record = start_fresh(args.state_dir, table_id=cfg.table_id, game=cfg.game,
                             reason=args.reason, user=_operator(), key_file=args.key_file,
                             outbox_after=args.outbox_after, round_after=args.round_after,
                             outside_mark=args.outside_mark or cfg.journal.outside_mark)
    except (ConfigError, JournalError, ValueError, OSError) as exc:
        print(f"tablectl: journal start-fresh refused: {exc}", file=sys.stderr)
        return 1
    syslog.openlog("tablectl")
    syslog.syslog(syslog.LOG_WARNING, f"journal started fresh: {json.dumps(record)}")
    emit(record, args.json, lambda: (
        f"new journal started by {record['by']} ({record['problem']}); first record "
        f"#{record['seq']}; next outbox message {record['outbox_next']}, next round "
        f"{record['round_next']}"))
    return 0


def cmd_keygen(args: argparse.Namespace) -> int:
    try:
        key = make_key_file(args.path)
    except FileExistsError:
        print(f"tablectl: journal keygen: {args.path} exists; a key is never replaced (the "
              "journal it protects could not be reopened)", file=sys.stderr)
        return 1
    except PermissionError:
        print(f"tablectl: journal keygen: {args.path}: permission denied: the journal key is"
              " root's (run it as root: sudo tablectl journal keygen)", file=sys.stderr)
        return EX_NOPERM
    except OSError as exc:
        parent = Path(os.path.realpath(args.path)).parent
        where = f" (the directory {parent} does not exist: make it first, mode 0755 root)" \
            if isinstance(exc, FileNotFoundError) and not parent.is_dir() else ""
        print(f"tablectl: journal keygen: {args.path}: {exc.strerror or exc}{where}",
              file=sys.stderr)
        return 1
    syslog.openlog("tablectl")
    syslog.syslog(syslog.LOG_NOTICE, f"journal key made: {key.source} (key id {key.key_id})")
    emit({"path": key.source, "key_id": key.key_id}, args.json,
         lambda: f"journal key made: {key.source} (key id {key.key_id}); keep a copy off the table")
    return 0


def _read_only(args: argparse.Namespace) -> tuple[dict[str, str], list[SegmentState], int, str]:
    """The journal's meta, segments, last round and how the MACs were checked, read-only."""
    path = args.state_dir / JOURNAL_FILE
    if not path.is_file():
        raise InputError(f"no journal: {path} does not exist")
    try:
        key = find_key(args.state_dir, key_file=args.key_file)
        macs = "checked" if key is not None else "not checked: no key"
    except KeyFileError as exc:
        key, macs = None, f"not checked: {exc}"
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        meta = read_meta(conn)
        states = segments.read_all(conn, key, meta["table_id"], meta["game"])
        last_round = int(conn.execute("SELECT coalesce(max(rec), 0) FROM commits").fetchone()[0])
    except (sqlite3.Error, KeyError) as exc:
        raise InputError(f"journal {path} unreadable: {exc}") from None
    finally:
        conn.close()
    return meta, states, last_round, macs


def _archive_dir(args: argparse.Namespace) -> Path:
    return args.archive_dir or args.state_dir / segments.ARCHIVE_DIR


def cmd_segments(args: argparse.Namespace) -> int:
    _meta, states, _last, macs = _read_only(args)
    rows = [st.as_json() for st in states]

    def deleted(r: dict[str, Any]) -> str:
        lost = r["archive_lost"]
        return (f" (deleted by retention {r['archive_deleted_utc']})" if r["archive_deleted_utc"]
                else f" (lost, accepted by {lost['by']} {lost['utc']})" if lost else "")

    def human() -> str:
        lines = [f"{len(rows)} closed segments (MACs {macs}); the open one follows the last"]
        for r in rows:
            state = ("pruned " + str(r["pruned_utc"]) if r["pruned_utc"] else
                     "moved to its archive " + str(r["moved_utc"]) if r["moved_utc"] else
                     "acknowledged" if r["acknowledged_utc"] else
                     "archived" if r["archive"] else "closed")
            lines.append(f"  segment {r['number']}: seq {r['first']}..{r['last']}, rounds "
                         f"{r['first_round']}..{r['last_round']}, {state}"
                         f"{'' if r['mac_ok'] else ', MAC DOES NOT CHECK OUT'}"
                         f"{', ' + r['archive'] if r['archive'] else ''}"
                         f"{deleted(r)}")
        return "\n".join(lines)

    emit(rows, args.json, human)
    return 0 if all(r["mac_ok"] for r in rows) else 1


def _writer(args: argparse.Namespace) -> Journal:
    meta, _states, _last, _macs = _read_only(args)
    # A tool never changes the journal's format: the daemon upgrades it (docs/journal.md).
    return Journal.open(args.state_dir, table_id=meta["table_id"], game=meta["game"],
                        create=False, fast=True, key_file=args.key_file, upgrade=False)


def cmd_archive(args: argparse.Namespace) -> int:
    try:
        with _writer(args) as j:
            done = j.archive(_archive_dir(args))
    except JournalError as exc:
        print(f"tablectl: journal archive: {exc}", file=sys.stderr)
        return 1
    out = [{"segment": n, "archive": str(_archive_dir(args) / name), "sha256": digest}
           for n, name, digest in done]
    emit(out, args.json, lambda: "\n".join(
        [f"{len(out)} segments archived"]
        + [f"  segment {o['segment']}: {o['archive']} sha256 {o['sha256']}" for o in out]))
    return 0


def cmd_accept_archive_loss(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:  # as accept-loss: a supervisor's decision, through sudo
        print("tablectl: journal accept-archive-loss is for root (a supervisor, through sudo)",
              file=sys.stderr)
        return 1
    try:
        with _writer(args) as j:
            record = j.retention.accept_lost(args.segment, _archive_dir(args),
                                             user=_operator(), reason=args.reason)
    except (JournalError, InputError, OSError) as exc:
        print(f"tablectl: journal accept-archive-loss refused: {exc}", file=sys.stderr)
        return 1
    syslog.openlog("tablectl")
    syslog.syslog(syslog.LOG_WARNING, f"journal archive loss accepted: {json.dumps(record)}")
    emit(record, args.json, lambda: (
        f"segment {record['segment']} (rounds {record['rounds'][0]}..{record['rounds'][1]}): "
        f"the loss of its archive {record['archive']} recorded by {record['by']} "
        f"({record['found']}); head office holds its digest {record['sha256']}"))
    return 0


def cmd_downgrade(args: argparse.Namespace) -> int:
    try:
        with _writer(args) as j:
            was4 = j.hashless
            filled = j.downgrade_to_v3()
    except JournalError as exc:
        print(f"tablectl: journal downgrade: {exc}", file=sys.stderr)
        return 1
    out = {"state_dir": str(args.state_dir), "was_schema": 4 if was4 else 3,
           "rows_given_their_hash": filled}
    emit(out, args.json, lambda: (
        f"journal {args.state_dir} downgraded to schema 3: {filled} rows given their chain hash "
        "back; the software before schema 4 reads it, and this software's daemon upgrades it "
        "again at its next start outside a trial boot" if was4 else
        f"journal {args.state_dir} is schema 3 already: nothing to do"))
    return 0


def _retention(args: argparse.Namespace) -> tuple[int | None, int | None]:
    """The flags, or the table's own [journal] retention (what the daemon applies), so a
    technician's prune keeps what the jurisdiction's setting keeps."""
    for flag, value in (("--keep-rounds", args.keep_rounds), ("--keep-days", args.keep_days)):
        if value is not None and value < 0:
            raise InputError(f"{flag} must be >= 0, got {value}")
    if args.keep_rounds is not None or args.keep_days is not None:
        return args.keep_rounds, args.keep_days
    from controller.config import ConfigError, load_config

    try:
        journal = load_config(args.config).journal
    except (ConfigError, OSError) as exc:
        raise InputError(f"no --keep-rounds/--keep-days and the config cannot be read: {exc}") \
            from exc
    if args.archive_dir is None and journal.archive_dir is not None:
        args.archive_dir = journal.archive_dir
    return journal.keep_rounds, journal.keep_days


def cmd_prune(args: argparse.Namespace) -> int:
    keep_rounds, keep_days = _retention(args)
    if args.dry_run:
        meta, states, last_round, _macs = _read_only(args)
        plans = plan(states, keep_rounds, _archive_dir(args), last_round,
                     int(meta.get("v1_last_seq", "0")), keep_days=keep_days)
    else:
        try:
            with _writer(args) as j:
                plans = j.prune(keep_rounds, _archive_dir(args), keep_days=keep_days)
        except JournalError as exc:
            print(f"tablectl: journal prune: {exc}", file=sys.stderr)
            return 1
    out = [p.as_json() for p in plans]
    verb = "would prune" if args.dry_run else "pruned"
    emit({"dry_run": args.dry_run, "segments": out}, args.json, lambda: "\n".join(
        [f"{verb} {sum(p.prune for p in plans)} of {len(plans)} unpruned segments"]
        + [f"  segment {p.number} (seq {p.first}..{p.last}, rounds {p.rounds[0]}.."
           f"{p.rounds[1]}): {'prune' if p.prune else 'keep'}: {p.why}" for p in plans]))
    return 0
