"""`tablectld`: the table daemon.

    tablectld [--config /etc/tablectl/table.toml]
    tablectld --simulate[=inproc|pty] --game {uth,paigow} [--rules {nsw,nz,act}] --autoplay N ...

With --simulate every device is an in-process simulator (--simulate=pty: the real serial drivers
against wire-level simulators on pty pairs, GPIO on mock pins); simulated players and a dealer play
(--no-players: nobody plays, only the control socket and the devices' inputs act);
--autoplay N stops after N rounds (0: forever); an existing state dir resumes where it stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from controller import logs
from controller.config import DEFAULT_PATH, ConfigError, TableConfig, load_config
from controller.config.machine import build_machine
from controller.control import control_socket
from controller.daemon.build import (
    build_devices,
    build_extensions,
    build_policy,
    run_mode,
    simulation_config,
)
from controller.daemon.service import TableService
from controller.describe import describe_round
from controller.logs import event as log_event
from shared.errors import TablectlError
from shared.stopping import cancel_and_wait, names


def terminal_columns() -> int:
    """The terminal's width as `shutil.get_terminal_size().columns` answers it ($COLUMNS, else
    stdout's terminal, else 80), without importing shutil."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class HelpFormatter(argparse.HelpFormatter):
    """argparse's own, given the width it would find itself: argparse builds a formatter for
    every `add_argument`, and its own imports shutil for the width, with bz2 and lzma (~0.4 MB
    of a table's resident memory at READY, issue 31, docs/daemon.md "Start-up")."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        super().__init__(
            prog,
            indent_increment,
            max_help_position,
            terminal_columns() - 2 if width is None else width,
        )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="tablectld", description=__doc__.split("\n\n")[0], formatter_class=HelpFormatter
    )
    ap.add_argument("--config", type=Path, default=None, help=f"default {DEFAULT_PATH}")
    ap.add_argument(
        "--simulate",
        nargs="?",
        const="inproc",
        choices=["inproc", "pty"],
        default=None,
        help="simulated devices, players and dealer",
    )
    ap.add_argument("--game", choices=["paigow", "uth"])
    ap.add_argument("--rules", choices=["nsw", "nz", "act"], default="nsw")
    ap.add_argument("--autoplay", type=int, default=None, metavar="N", help="rounds; 0 = forever")
    ap.add_argument(
        "--no-players",
        action="store_true",
        help="with --simulate: no simulated dealer or players (a technician's bench)",
    )
    ap.add_argument("--state-dir", type=Path)
    ap.add_argument("--runtime-dir", type=Path)
    ap.add_argument("--seed", type=int, default=None, help="reproducible simulation (not CSPRNG)")
    ap.add_argument("--pace", type=float, default=0.0, help="seconds between simulated actions")
    ap.add_argument("--quiet", action="store_true", help="no per-round lines on stdout")
    args = ap.parse_args(argv)
    if args.simulate and not args.game and args.config is None:
        ap.error("--simulate needs --game (or --config)")
    if args.game == "uth" and args.rules != "nsw":
        ap.error("UTH rules exist for nsw only")
    if args.autoplay is not None and args.autoplay < 0:
        ap.error("--autoplay must be >= 0")
    if args.no_players and (not args.simulate or args.autoplay is not None):
        ap.error("--no-players needs --simulate and plays no rounds (no --autoplay)")
    return args


def load(args: argparse.Namespace) -> TableConfig:
    if args.simulate and args.config is None:
        state_dir = args.state_dir or Path("state") / f"{args.game}-{args.rules}"
        runtime_dir = args.runtime_dir or state_dir / "run"
        return simulation_config(args.game, args.rules, state_dir.resolve(), runtime_dir.resolve())
    cfg = load_config(args.config or DEFAULT_PATH)
    if args.state_dir or args.runtime_dir or args.simulate:
        from dataclasses import replace

        service = replace(
            cfg.service,
            state_dir=args.state_dir or cfg.service.state_dir,
            runtime_dir=args.runtime_dir or cfg.service.runtime_dir,
        )
        devices = replace(cfg.devices, simulate=bool(args.simulate) or cfg.devices.simulate)
        cfg = replace(cfg, service=service, devices=devices)
    return cfg


def print_round(record: dict[str, Any]) -> None:
    print(describe_round(record), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    log = logs.setup(journald=None if not args.simulate else False)
    try:
        cfg = load(args)
        control_socket(cfg.service.runtime_dir)  # refused here, named, before anything starts
        machine = build_machine(cfg)
        rng = random.Random(args.seed) if args.seed is not None else None
        devices = build_devices(cfg, rng, args.simulate or "inproc")
    except (ConfigError, TablectlError, OSError) as exc:
        print(f"tablectld: {exc}", file=sys.stderr)
        return 2
    policy = None
    if args.simulate and not args.no_players:
        policy = build_policy(cfg, rng or random.Random())
    mode = run_mode(cfg, args)
    service = TableService(
        cfg,
        machine,
        devices,
        log,
        policy=policy,
        autoplay=args.autoplay or None,
        pace_s=args.pace,
        on_round=None if args.quiet else print_round,
        extensions=build_extensions(cfg, args, mode),
        mode=mode,
    )
    if args.simulate:
        log.setLevel(logging.WARNING)
    return run_to_end(service, log)


# After the daemon's stop, tasks still running (parts abandoned at their limit) get this long more.
LEFTOVER_LIMIT_S = 1.0


def run_to_end(service: TableService, log: logging.Logger) -> int:
    """Run the daemon to its end and log the stop line. `asyncio.run` would then cancel the
    tasks left once and wait for them for good: a part abandoned at its stop limit (one that
    swallows cancels) would hang the exit it was abandoned to allow (issue 27). So the tasks
    left are cancelled until they end, for LEFTOVER_LIMIT_S; if some still run (already named
    in the log by the stop), the process exits without waiting for them (`os._exit`, after
    the stop line and the log are flushed: the journal is closed by then)."""
    from controller.daemon.lifecycle import stop_line

    loop = asyncio.new_event_loop()
    left: list[asyncio.Task[Any]] = []
    try:
        asyncio.set_event_loop(loop)
        code = loop.run_until_complete(service.run())
        running = [t for t in asyncio.all_tasks(loop) if not t.done()]
        left = loop.run_until_complete(cancel_and_wait(running, limit_s=LEFTOVER_LIMIT_S))
        loop.run_until_complete(loop.shutdown_asyncgens())
        if not left:  # a thread of an abandoned task may never end: not waited for then
            loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        asyncio.set_event_loop(None)
        if not left:
            loop.close()
    stop_line(log, code)
    if left:
        log_event(
            log,
            logging.ERROR,
            f"exiting without waiting for {names(left)} (abandoned at the stop)",
            tasks=names(left),
            code="E507",
        )
        sys.stdout.flush()
        logging.shutdown()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
