"""`tablectl math uth`: the exact par sheet (hand counts, Trips and jackpot return; docs/uth.md).
Apart from `tablectl uth` (uth_cmd.py), which registers it, so that file stays one concern."""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from typing import Any

from controller.cli.uth_args import emit, pool_and_table
from controller.games.uth.parsheet import par_sheet
from controller.games.uth.paytables import TRIPS_CATEGORIES, TRIPS_PAYTABLE, parse_paytable
from shared.money import dollars as _dollars


def _progress_printer() -> Any:
    if not sys.stderr.isatty():
        return None
    start = time.monotonic()

    def show(stage: str, done: int, total: int) -> None:
        pct = 100 * done // max(total, 1)
        print(
            f"\r{stage}: {pct:3d}%  {time.monotonic() - start:5.1f}s ",
            end="",
            file=sys.stderr,
            flush=True,
        )

    return show


def _ratio(x: Fraction) -> dict[str, Any]:
    return {"value": float(x), "exact": str(x)}


def cmd_math(args: argparse.Namespace) -> int:
    trips_table = (
        parse_paytable(args.trips_pays, TRIPS_CATEGORIES) if args.trips_pays else (TRIPS_PAYTABLE)
    )
    state, table, wager = pool_and_table(args)
    progress = _progress_printer()
    sheet = par_sheet(
        trips_table=trips_table,
        jackpot_table=table,
        pool=state.amount,
        wager=wager,
        seed=state.seed,
        increment=state.increment,
        hidden=state.hidden,
        progress=progress,
    )
    if progress:
        print(file=sys.stderr)
    jp = sheet.jackpot
    out = {
        "seven_card": {c.label: n for c, n in sorted(sheet.seven_card.items(), reverse=True)},
        "five_card": {c.label: n for c, n in sorted(sheet.five_card.items(), reverse=True)},
        "trips": {
            "pay_table": {c.label: str(o) for c, o in trips_table.items()},
            "return": float(sheet.trips.return_),
            "return_exact": str(sheet.trips.return_),
            "house_edge": float(sheet.trips.house_edge),
            "hit_frequency": float(sheet.trips.hit_frequency),
            "hit_frequencies": {c.label: float(p) for c, p in sheet.trips.hit.items()},
        },
        "jackpot": {
            "qualifying_hand": "two hole cards + flop (rule 15.2.6)",
            "probability": {c.label: _ratio(p) for c, p in jp.probability.items()},
            "wager": wager,
            "pool": state.amount,
            "seed": state.seed,
            "increment_rate": str(state.increment),
            "hidden_rate": str(state.hidden),
            "fixed_return": float(jp.fixed_return),
            "return": float(jp.return_at_pool),
            "return_exact": str(jp.return_at_pool),
            "long_run_return": float(jp.long_run_return),
            "break_even_pool": None if jp.break_even_pool is None else int(jp.break_even_pool),
        },
    }
    if args.json:
        emit(out)
        return 0
    print(f"{'category':<16}{'7-card hands':>14}{'5-card hands':>14}")
    for label in out["seven_card"]:
        print(f"{label:<16}{out['seven_card'][label]:>14,}{out['five_card'][label]:>14,}")
    print(f"{'total':<16}{sum(sheet.seven_card.values()):>14,}{sum(sheet.five_card.values()):>14,}")
    t = out["trips"]
    print(
        f"Trips ({', '.join(t['pay_table'].values())}): return {t['return']:.6f}, "
        f"house edge {100 * t['house_edge']:.4f}%, hit frequency {t['hit_frequency']:.6f}"
    )
    print(f"Jackpot (wager {_dollars(wager)}, pool {_dollars(state.amount)}):")
    for label, p in out["jackpot"]["probability"].items():
        print(f"  {label:<16} 1 in {1 / p['value']:>12,.1f}")
    j = out["jackpot"]
    print(
        f"  return at this pool {j['return']:.6f} (fixed awards {j['fixed_return']:.6f}); "
        f"long-run {j['long_run_return']:.6f}; break-even pool "
        f"{_dollars(j['break_even_pool']) if j['break_even_pool'] is not None else '-'}"
    )
    return 0
