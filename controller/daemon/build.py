"""Assembling a table from its configuration: the round machine, the devices, the simulated
players, the extensions, and the run mode. The daemon's entry point (main.py), the benches and
the tests build tables with these."""

from __future__ import annotations

import argparse
import grp
import logging
import os
import random
from pathlib import Path

from controller.config import TableConfig, validate_text
from controller.daemon.service import Policy
from controller.extensions.base import Extension
from controller.random_source import RandomSource
from devices.base import Device

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


def build_policy(cfg: TableConfig, rng: random.Random) -> Policy:
    if cfg.paigow is not None:
        from controller.sim.paigow import PaiGowSim

        return PaiGowSim(rng, cfg.paigow.profile, boxes=cfg.paigow.boxes)
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
        from devices.sim import build_simulators  # simulators only with --simulate (issue 31)

        devices = build_simulators(cfg, rng)
    devices["rng"] = RandomSource(rng=rng)
    game = cfg.uth or cfg.paigow
    if cfg.link.enabled and game is not None:
        # Player Cards asked of head office over the link (issue 29; link/patron_device.py).
        from controller.link.patron_device import PatronDevice

        devices["patron"] = PatronDevice(cfg.table_id, game.cards.answer_ms / 1000)
    return devices


def run_mode(cfg: TableConfig, args: argparse.Namespace) -> str:
    """production, simulation (--simulate) or development (service.development = true, never
    on an installed table): only the last two may play unverified (docs/verification.md)."""
    from controller.extensions.verify import installed_layout

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
    """The daemon's parts beside the round machine, in start order (extensions/base.py).
    Each later issue adds its part here: the head-office link, software verification, ..."""
    from controller.daemon.lifecycle import StartLine
    from controller.extensions.verify import SoftwareVerification

    # Software verification first: a program that fails it never plays nor talks to head office.
    log = logging.getLogger("tablectl")
    verification = SoftwareVerification.installed(log, mode=mode)
    # Then the start line, which says what the check found (version, manifest digest).
    extensions: list[Extension] = [verification, StartLine(log, verification)]
    from controller.extensions.devices import DevicesExtension

    extensions.append(DevicesExtension())  # tablectl devices list|test|watch
    from controller.extensions.service_menu import ServiceMenu

    extensions.append(ServiceMenu())  # tablectl devices lamps|buttons|loopback (between rounds)
    if cfg.link.enabled:
        from controller.link.extension import LinkExtension

        extensions.append(LinkExtension(cfg))  # head office over MQTT (docs/mqtt.md)
    return extensions
