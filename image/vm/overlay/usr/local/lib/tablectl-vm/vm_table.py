"""VM only (image/vm/): tablectld with simulated players and dealer around the real drivers.

The shipped `tablectld --config F` plays only with a real dealer and real GPIO; `--simulate`
swaps the serial devices for simulators too. In the VM the serial devices are real (/dev/ttyUSB*
behind the udev names, QEMU's USB serial adapters wired to the wire-level simulators on the
host), while players, dealer and GPIO inputs are simulated (controller/sim/, gpiozero's mock
pins): the config says `simulate = true` (that is what allows mock pins) and this entry point
builds the hardware drivers. Everything else is tablectld's own code: journal, verification,
watchdog, control socket, head-office link, logging to journald, and its entry point's lean
start (no OpenSSL for a table without a link).
"""

from __future__ import annotations

import os
import random
import sys

from controller.daemon.entry import refuse_openssl


def main() -> int:
    # As tablectld's entry point does before any import: a table without [link] loads no
    # OpenSSL (controller/daemon/entry.py). The imports below come after it for that reason.
    refuse_openssl(sys.argv[1:])
    from controller import logs
    from controller.config.machine import build_machine
    from controller.daemon import build
    from controller.daemon import main as daemon
    from controller.daemon.service import TableService
    from controller.random_source import RandomSource
    from devices.build import build_hardware

    args = daemon.parse_args(sys.argv[1:])
    log = logs.setup()  # journald when systemd-python is installed, else stderr (journald too)
    cfg = daemon.load(args)
    machine = build_machine(cfg)
    devices = build_hardware(cfg)  # the real drivers on /dev/tablectl-*, GPIO on mock pins
    devices["rng"] = RandomSource()
    pace = float(os.environ.get("TABLECTL_VM_PACE", "0.2"))
    # TABLECTL_VM_PLAYERS=0: nobody plays (the table idles, its link still drains the outbox).
    players = os.environ.get("TABLECTL_VM_PLAYERS", "1") != "0"
    service = TableService(
        cfg,
        machine,
        devices,
        log,
        policy=build.build_policy(cfg, random.Random()) if players else None,
        pace_s=pace,
        on_round=daemon.print_round,
        extensions=build.build_extensions(cfg, args),
    )
    return daemon.run_to_end(service, log)  # a stop bounded as tablectld's (issue 27)


if __name__ == "__main__":
    sys.exit(main())
