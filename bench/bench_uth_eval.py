"""Benchmark: our UTH evaluator against pokerkit and treys on the same hands, in one run.

    .venv/bin/python bench/bench_uth_eval.py [--hands 200000] [--pokerkit-hands 20000]

Prints hands/s per evaluator and hand size and our speed as a ratio of each baseline (measured
in this run, on the same hands). pokerkit is much slower, so it gets a prefix of the hands.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

from controller.games.uth.cards import format_card
from controller.games.uth.evaluator import hand_rank


def _rate(fn: Callable[[Sequence], object], hands: Sequence) -> float:
    start = time.perf_counter()
    for h in hands:
        fn(h)
    return len(hands) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=200_000)
    parser.add_argument("--pokerkit-hands", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=2025)
    args = parser.parse_args()

    from pokerkit import StandardHighHand
    from treys import Card as TCard
    from treys import Evaluator

    rng = random.Random(args.seed)
    treys_eval = Evaluator()
    tcard = [TCard.new(format_card(c)) for c in range(52)]
    text = [format_card(c) for c in range(52)]

    print(
        f"{'cards':>5} {'ours h/s':>12} {'treys h/s':>12} {'pokerkit h/s':>13} "
        f"{'x treys':>8} {'x pokerkit':>10}"
    )
    for size in (5, 6, 7):
        hands = [rng.sample(range(52), size) for _ in range(args.hands)]
        t_hands = [[tcard[c] for c in h] for h in hands]
        p_hands = ["".join(text[c] for c in h) for h in hands[: args.pokerkit_hands]]
        ours = _rate(hand_rank, hands)
        treys = _rate(lambda h: treys_eval.evaluate(h[:2], h[2:]), t_hands)
        poker = _rate(lambda s: StandardHighHand.from_game(s[:4], s[4:]), p_hands)
        print(
            f"{size:>5} {ours:>12,.0f} {treys:>12,.0f} {poker:>13,.0f} "
            f"{ours / treys:>8.1f} {ours / poker:>10.1f}"
        )


if __name__ == "__main__":
    main()
