"""`tablectld`: the table daemon.

    tablectld [--config /etc/tablectl/table.toml]
    tablectld --simulate[=inproc|pty] --game {uth,paigow} [--rules {nsw,nz,act}] --autoplay N ...

With --simulate every device is an in-process simulator (--simulate=pty: the real serial drivers
against wire-level simulators on pty pairs, GPIO on mock pins); simulated players and a dealer play;
--autoplay N stops after N rounds (0: forever); an existing state dir resumes where it stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import grp
import logging
import os
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from controller import logs
from controller.config import DEFAULT_PATH, ConfigError, TableConfig, load_config, validate_text
from controller.errors import InputError
from controller.rounds.base import RoundMachine
from controller.service import Extension, Policy, TableService
from devices.base import Device
from devices.rng import RandomSource
from devices.sim import build_simulators

SIM_LIMITS = {
    "paigow": "[paigow.limits]\nminimum = 2000\nmaximum = 1000000\nchip_unit = 100\n",
    "uth": (
        "[uth.limits]\nante_min = 1000\nante_max = 500000\ntrips_min = 500\n"
        "trips_max = 100000\nchip_unit = 100\n"
        '[uth.jackpot]\nenabled = true\npool_id = "sim-pool"\nwager = 100\n'
        "increment_bp = 2500\nhidden_bp = 500\nseed = 5000000\n"
    ),
}


def simulation_config(game: str, rules: str, state_dir: Path, runtime_dir: Path) -> TableConfig:
    """A table configured for simulation: every device simulated, standalone jackpot."""
    section = f'[paigow]\nrules = "{rules}"\n' if game == "paigow" else "[uth]\n"
    text = (
        f'table_id = "SIM-{game.upper()}-{rules.upper()}"\ngame = "{game}"\n'
        f'[service]\nstate_dir = "{state_dir}"\nruntime_dir = "{runtime_dir}"\n'
        f'socket_group = "{_own_group()}"\nwatchdog = true\n'
        f"{section}{SIM_LIMITS[game]}[devices]\nsimulate = true\n"
    )
    return validate_text(text, "simulation")


def _own_group() -> str:
    try:
        return grp.getgrgid(os.getgid()).gr_name
    except KeyError:
        return "root"


def build_machine(cfg: TableConfig) -> RoundMachine[Any]:
    if cfg.paigow is not None:
        from controller.rounds.paigow import PaiGowConfig, PaiGowMachine

        p = cfg.paigow
        return PaiGowMachine(
            PaiGowConfig(
                profile=p.rules,
                boxes=p.boxes,
                money=p.money,
                max_banks_per_box=p.banks_per_box,
                steal_offered=p.steal_offered,
                multiples_notice=p.multiples_notice,
            )
        )
    assert cfg.uth is not None
    return build_uth_machine(cfg)


def build_uth_machine(cfg: TableConfig) -> RoundMachine[Any]:
    from controller.games.uth.deal import DealMethod
    from controller.games.uth.settlement import Limits, SettlementRules, Spot
    from controller.rounds.uth import UthConfig, UthMachine

    u = cfg.uth
    assert u is not None
    ante = Limits(u.limits.ante_min, u.limits.ante_max)
    rules = SettlementRules(
        trips=u.trips_paytable,
        blind=u.blind_paytable,
        # The Blind equals the Ante (5.3) and shares its sign; Play follows from the Ante (9.x).
        limits={
            Spot.ANTE: ante,
            Spot.BLIND: ante,
            Spot.TRIPS: Limits(u.limits.trips_min, u.limits.trips_max),
        },
    )
    jp = u.jackpot
    return UthMachine(
        UthConfig(
            boxes=u.boxes,
            decks=(1, 2) if u.decks == 2 else (1,),
            deal_method=DealMethod(u.deal_method),
            rules=rules,
            jackpot_table=jp.awards,
            jackpot_wager=jp.wager,
            pool_id=jp.pool_id or f"{cfg.table_id}-local",
            pool=jp.new_pool(),
            linked=cfg.link.enabled,
            pool_timeout_ms=int(cfg.link.pool_timeout_s * 1000),
            chip_unit=u.limits.chip_unit,
        )
    )


def build_policy(cfg: TableConfig, rng: random.Random) -> Policy:
    if cfg.paigow is not None:
        from controller.sim.paigow import PaiGowSim

        return PaiGowSim(rng, cfg.paigow.rules, boxes=cfg.paigow.boxes)
    from controller.sim.uth import UthSim

    assert cfg.uth is not None
    return UthSim(rng, boxes=cfg.uth.boxes)


def build_devices(
    cfg: TableConfig, rng: random.Random | None, mode: str = "inproc"
) -> dict[str, Device]:
    """Real drivers; with simulate, in-process simulators ("inproc") or the real drivers
    against wire-level simulators on pty pairs ("pty", devices/build.py)."""
    from devices.build import build_hardware, build_pty

    if not cfg.devices.simulate:
        devices = build_hardware(cfg)
    elif mode == "pty":
        devices = build_pty(cfg, rng)
    else:
        devices = build_simulators(cfg, rng)
    devices["rng"] = RandomSource(rng=rng)
    return devices


def run_mode(cfg: TableConfig, args: argparse.Namespace) -> str:
    """production, simulation (--simulate) or development (service.development = true, never
    on an installed table): only the last two may play unverified (docs/verification.md)."""
    from controller.verify_service import installed_layout

    if args.simulate:
        return "simulation"
    if cfg.service.development:
        if installed_layout():
            logging.getLogger("tablectl").critical(
                "service.development = true is refused on an installed table: the software"
                " must be verified (running in production mode)"
            )
            return "production"
        return "development"
    return "production"


def build_extensions(
    cfg: TableConfig, args: argparse.Namespace, mode: str = "production"
) -> list[Extension]:
    """The daemon's parts beside the round machine, in start order (see service.Extension).
    Each later issue adds its part here: the head-office link, software verification, ..."""
    from controller.lifecycle import StartLine
    from controller.verify_service import SoftwareVerification

    # Software verification first: a program that fails it never plays nor talks to head office.
    log = logging.getLogger("tablectl")
    verification = SoftwareVerification.installed(log, mode=mode)
    # Then the start line, which says what the check found (version, manifest digest).
    extensions: list[Extension] = [verification, StartLine(log, verification)]
    from controller.devices_ext import DevicesExtension

    extensions.append(DevicesExtension())  # tablectl devices list|test|watch
    if cfg.link.enabled:
        from controller.link.extension import LinkExtension

        extensions.append(LinkExtension(cfg))  # head office over MQTT (docs/mqtt.md)
    return extensions


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="tablectld", description=__doc__.split("\n\n")[0])
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


def _money(cents: Any) -> str:
    if not isinstance(cents, int):
        return "-"
    sign = "-" if cents < 0 else ""
    return f"{sign}${abs(cents) // 100:,}.{abs(cents) % 100:02d}"


def describe_round(record: dict[str, Any]) -> str:
    """One line a newcomer can read: what happened in the round."""
    s = record.get("summary") or {}
    head = f"round {record.get('number')} {record.get('status')}"
    if record.get("status") == "voided":
        return f"{head}: {s.get('reason', '')}".rstrip(": ")
    if s.get("game") == "paigow":
        banker = s.get("banker") or {}
        who = (
            "house"
            if banker.get("holder") == "house"
            else f"{banker.get('holder')} box {banker.get('box')}"
        )
        dice = s.get("dice") or {}
        cut = (s.get("cut") or {}).get("cut")
        outcomes = " ".join(f"{b}:{o}" for b, o in sorted((s.get("outcomes") or {}).items()))
        money = s.get("settlement") or {}
        return (
            f"{head}: bank {who}; dice {dice.get('box_dice')} -> first box {s.get('first_box')},"
            f" cut {cut}; {outcomes or 'no wagers'}; house {_money(money.get('house_net'))}"
        )
    if "community" in s:
        dealer = s.get("dealer") or {}
        boxes = " ".join(
            f"{b.get('box')}:{b.get('decision')}/{b.get('category')}/{_money(b.get('net'))}"
            for b in s.get("boxes") or []
        )
        payouts = (s.get("jackpot") or {}).get("payouts") or []
        hits = (
            ", ".join(
                f"box {p.get('box')} {p.get('award')} {_money(p.get('amount'))}" for p in payouts
            )
            or "none"
        )
        return (
            f"{head}: board {' '.join(s.get('community') or [])}; dealer"
            f" {' '.join(dealer.get('cards') or [])} {dealer.get('category')}"
            f"{'' if dealer.get('qualifies') else ' (does not qualify)'}; {boxes or 'no wagers'};"
            f" jackpot hits {hits}; house {_money(s.get('house_net'))}"
        )
    if isinstance(s.get("text"), str):
        return f"{head}: {s['text']}"
    return head


def print_round(record: dict[str, Any]) -> None:
    print(describe_round(record), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    log = logs.setup(journald=None if not args.simulate else False)
    try:
        cfg = load(args)
        machine = build_machine(cfg)
        rng = random.Random(args.seed) if args.seed is not None else None
        devices = build_devices(cfg, rng, args.simulate or "inproc")
    except (ConfigError, InputError, OSError) as exc:
        print(f"tablectld: {exc}", file=sys.stderr)
        return 2
    policy = None
    if args.simulate:
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
    code = asyncio.run(service.run())
    from controller.lifecycle import stop_line

    stop_line(log, code)
    return code


if __name__ == "__main__":
    sys.exit(main())
