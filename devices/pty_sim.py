"""Wire-level simulators on a host: the shaker, the shuffler and the meter as hardware behind
pty pairs, for a VM whose emulated serial adapters open the pty (image/vm/):

    python -m devices.pty_sim --shaker LINK --shuffler LINK --meter LINK [--cardreader LINK]
                              [--cut-die] [--decks N]
                              [--loopback LINK]

makes LINK a symlink to each simulator's pty and runs until SIGTERM or SIGINT; `--loopback` is
a loopback plug, for `tablectl devices loopback --port LINK`. The simulators are each device's
`wire_sim` (its descriptor, devices/kind.py: devices/shaker/wire.py, ...), the ones
`tablectld --simulate=pty` and the tests use; docs/devices.md lists their faults. Each is
imported only when asked for.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Mapping, Sequence

from devices.kind import GameNeeds, Setup
from devices.kinds import kinds
from devices.proto.wire_sim import LoopbackPlug, WireSim

__all__ = ["main", "make_sims", "names", "parser", "serve"]


def names() -> tuple[str, ...]:
    """Every device with a wire simulator (its descriptor's `wire_sim`), and the loopback plug."""
    return (*(k.name for k in kinds() if k.wire_sim is not None), "loopback")


def make_sims(
    links: Mapping[str, str], *, cut_die: bool = False, decks: int = 1
) -> dict[str, WireSim]:
    """The named simulators (not started), each its descriptor's `wire_sim`."""
    how = Setup(needs=GameNeeds(game="", boxes=None, cut_die=cut_die, decks=decks), boxes=0)
    wire = {k.name: k.wire_sim for k in kinds() if k.wire_sim is not None}
    return {name: LoopbackPlug() if name == "loopback" else wire[name].make(how) for name in links}


# --- host-side entry point ----------------------------------------------------------------------


async def serve(links: dict[str, str], *, cut_die: bool = False, decks: int = 1) -> None:
    """Start the named simulators, point each link at its pty, run until SIGTERM/SIGINT."""
    sims = make_sims(links, cut_die=cut_die, decks=decks)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        for name, sim in sims.items():
            await sim.start()
            tmp = f"{links[name]}.tmp"
            os.symlink(sim.path, tmp)
            os.replace(tmp, links[name])
            print(f"pty_sim: {name} {sim.path} -> {links[name]}", flush=True)
        await stop.wait()
    finally:
        for sim in sims.values():
            await sim.close()
        for name, sim in sims.items():
            print(f"pty_sim: {name} counters {dict(sim.counters)}", flush=True)


def parser() -> argparse.ArgumentParser:
    doc = (__doc__ or "").split("\n")[0]
    ap = argparse.ArgumentParser(prog="python -m devices.pty_sim", description=doc)
    for name in names():
        ap.add_argument(f"--{name}", metavar="LINK", help=f"symlink to make to the {name}'s pty")
    ap.add_argument("--cut-die", action="store_true", help="the shaker has a fourth die (NSW)")
    ap.add_argument("--decks", type=int, default=1, choices=(1, 2), help="shuffler decks")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    links = {n: getattr(args, n) for n in names() if getattr(args, n)}
    if not links:
        ap.error(f"name at least one of {', '.join('--' + n for n in names())}")
    asyncio.run(serve(links, cut_die=args.cut_die, decks=args.decks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
