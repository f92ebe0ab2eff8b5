"""`tablectl demo`: what the README's first command runs until the daemon exists.

Deals a random hand from a shuffled set (CSPRNG), sets it the house way of each profile with the
rule that decided it, and prints each profile's exact par sheet.
"""

from __future__ import annotations

import argparse
import secrets

from controller.cli.common import paigow_parsheet, progress_printer
from controller.games.paigow.houseway import explain, house_way_function
from controller.games.paigow.profiles import Profile
from controller.games.paigow.tiles import FULL_SET


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="house way of a random hand and the par sheets")
    p.add_argument("--no-math", action="store_true", help="skip the par sheets")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    tiles = secrets.SystemRandom().sample(FULL_SET, 4)
    print("hand dealt:", " ".join(t.notation for t in tiles))
    for profile in Profile:
        setting, rule = explain(tiles, profile)
        print(f"  {profile.value:<3} house way: {setting}   ({rule})")
    if args.no_math:
        return 0
    parsheet = paigow_parsheet()  # numpy: the `math` extra
    print("\nexact par sheets, both hands set the house way, 5% commission:")
    print(
        f"  {'rules':<5} {'win':>9} {'push':>9} {'lose':>9} {'edge player':>12} {'edge banker':>12}"
    )
    for profile in Profile:
        sheet = parsheet.compute(
            profile, house_way_function(profile), progress=progress_printer(profile.value)
        )
        out = sheet.as_json()
        print(
            f"  {profile.value:<5} {out['player_win']:>9.4%} {out['push']:>9.4%}"
            f" {out['player_lose']:>9.4%} {out['house_edge_player']:>12.4%}"
            f" {out['house_edge_banker']:>12.4%}"
        )
    return 0
