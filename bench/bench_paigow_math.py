"""Benchmark: the grouped, vectorised Pai Gow par sheet against a straightforward loop.

Baseline (measured in the same run): for a sample of physical player hands, loop over every
banker hand of the 28 remaining tiles in plain Python, comparing precomputed house-way keys.
Candidate: the par sheet's type-grouped numpy count (controller.games.paigow.parsheet).

    .venv/bin/python bench/bench_paigow_math.py [--rules nsw] [--sample 40]

Prints matchups per second of each and their ratio, and the whole par sheet's time for both
(the loop's extrapolated from its sample).
"""

from __future__ import annotations

import argparse
import itertools
import random
import time

from controller.games.paigow import parsheet
from controller.games.paigow.houseway import house_way_function
from controller.games.paigow.profiles import parse_profile
from controller.games.paigow.tiles import FULL_SET

TOTAL_MATCHUPS = 35_960 * 20_475


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rules", default="nsw")
    ap.add_argument("--sample", type=int, default=40, help="player hands for the loop baseline")
    args = ap.parse_args()
    profile = parse_profile(args.rules)
    hw = house_way_function(profile)

    # Baseline: precompute each physical hand's keys (as a careful loop would), then loop.
    start = time.perf_counter()
    combos = list(itertools.combinations(range(32), 4))
    keys = {}
    for c in combos:
        s = hw([FULL_SET[i] for i in c])
        keys[c] = (s.high.key_by_tile if profile.value == "act" else s.high.key, s.low.key)
    setup = time.perf_counter() - start
    sample = random.Random(1).sample(combos, args.sample)
    start = time.perf_counter()
    n = 0
    for hand in sample:
        hp, lp = keys[hand]
        rest = [i for i in range(32) if i not in hand]
        for b in itertools.combinations(rest, 4):
            hb, lb = keys[b]
            _ = (hp > hb) + (lp > lb)
            n += 1
    loop = time.perf_counter() - start
    loop_rate = n / loop

    start = time.perf_counter()
    sheet = parsheet.compute(profile, hw)
    vec = time.perf_counter() - start
    vec_rate = sheet.matchups / vec

    print(f"rules {profile.value}: {sheet.matchups:,} matchups")
    print(f"baseline loop   {loop_rate:14,.0f} matchups/s  (sample {n:,}; setup {setup:.1f}s)")
    print(f"grouped numpy   {vec_rate:14,.0f} matchups/s")
    print(f"ratio grouped/loop: {vec_rate / loop_rate:,.0f}x")
    print(f"whole par sheet: grouped {vec:.1f}s, loop ~{setup + TOTAL_MATCHUPS / loop_rate:,.0f}s")


if __name__ == "__main__":
    main()
