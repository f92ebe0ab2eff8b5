"""Benchmark: our UTH evaluator against pokerkit and treys on the same hands, in one run.

    .venv/bin/python bench/bench_uth_eval.py [--hands 200000] [--pokerkit-hands 20000]

Prints hands/s per evaluator and hand size and our speed as a ratio of each baseline (measured
in this run, on the same hands). pokerkit is much slower, so it gets a prefix of the hands.
Our tables are built first (as the daemon does before READY), timed on their own. The
baseline "dict" is our evaluator with the rank-multiset table as a dict (what it was until
2026-11-27): its speed, and its memory beside our tables' (each container and every distinct
object it holds, by sys.getsizeof).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from array import array
from collections.abc import Callable, Sequence

from controller.games.uth import evaluator
from controller.games.uth.cards import format_card
from controller.games.uth.evaluator import build_tables, hand_rank, nonflush_rank
from controller.games.uth.tables_compute import multisets

_RANK_FIELD = (1 << evaluator._SUIT_SHIFT) - 1


def _held(*containers: object) -> int:
    """Bytes of the containers and of every distinct object they hold (keys and values)."""
    seen: dict[int, object] = {}
    for c in containers:
        seen[id(c)] = c
        if isinstance(c, array):
            continue  # its items are machine words inside it, not objects
        items = list(c.items()) if isinstance(c, dict) else [(x,) for x in c]  # type: ignore[attr-defined]
        for row in items:
            for x in row:
                seen[id(x)] = x
    return sum(map(sys.getsizeof, seen.values()))


def _dict_evaluator() -> tuple[Callable[[Sequence[int]], int], int]:
    """(hand_rank with a dict on the rank multiset, the dict's bytes): the baseline."""
    # Keyed by the cards' summed rank field (the base-5 digits since issue 31).
    table = {
        sum(n * evaluator._rank_digit(r) for r, n in enumerate(c)): nonflush_rank(c)
        for size in (5, 6, 7)
        for c in multisets(size)
    }
    value = evaluator._CARD_VALUE

    def rank(cards: Sequence[int]) -> int:
        total = sum(map(value.__getitem__, cards))
        if ((total >> evaluator._SUIT_SHIFT) + 0x3333) & 0x8888:
            return hand_rank(cards)  # a flush: the same list lookup either way
        return table[total & _RANK_FIELD]

    return rank, _held(table)


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

    start = time.perf_counter()
    build_tables()
    built = time.perf_counter() - start
    multisets = _held(evaluator._LOW, evaluator._HIGH, evaluator._NONFLUSH)
    by_dict, dict_bytes = _dict_evaluator()
    print(
        f"tables built in {built:.2f} s; the rank-multiset table holds {multisets / 1e6:.2f} MB,"
        f" as a dict {dict_bytes / 1e6:.2f} MB (x{dict_bytes / multisets:.1f}); the flush"
        f" table {_held(evaluator._FLUSH) / 1e6:.2f} MB"
    )
    rng = random.Random(args.seed)
    treys_eval = Evaluator()
    tcard = [TCard.new(format_card(c)) for c in range(52)]
    text = [format_card(c) for c in range(52)]

    print(
        f"{'cards':>5} {'ours h/s':>12} {'dict h/s':>12} {'treys h/s':>12} {'pokerkit h/s':>13} "
        f"{'x dict':>7} {'x treys':>8} {'x pokerkit':>10}"
    )
    for size in (5, 6, 7):
        hands = [rng.sample(range(52), size) for _ in range(args.hands)]
        t_hands = [[tcard[c] for c in h] for h in hands]
        p_hands = ["".join(text[c] for c in h) for h in hands[: args.pokerkit_hands]]
        ours = _rate(hand_rank, hands)
        base = _rate(by_dict, hands)
        treys = _rate(lambda h: treys_eval.evaluate(h[:2], h[2:]), t_hands)
        poker = _rate(lambda s: StandardHighHand.from_game(s[:4], s[4:]), p_hands)
        print(
            f"{size:>5} {ours:>12,.0f} {base:>12,.0f} {treys:>12,.0f} {poker:>13,.0f} "
            f"{ours / base:>7.2f} {ours / treys:>8.1f} {ours / poker:>10.1f}"
        )


if __name__ == "__main__":
    main()
