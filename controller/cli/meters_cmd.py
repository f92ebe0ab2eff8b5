"""`tablectl meters`: the table's accounting meters, this shift's and the lifetime's, per table
and per box (derived from the journal, docs/operations.md "Meters"); `tablectl meters
close-shift` closes the shift: the closing figures are journaled and sent to head office.

Exit codes: 0 shown (or closed); 2 refused (e.g. out of service, not a supervisor);
3 tablectld not running.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from controller.cli.common import emit
from controller.cli.show import figures_lines
from controller.cli.table_cmd import _ask
from controller.meters import incomplete_words


def register(sub: argparse._SubParsersAction) -> None:
    meters = sub.add_parser("meters", help="accounting meters: this shift and lifetime, per box")
    meters.add_argument("--runtime-dir", type=Path, help="where tablectld's control socket is")
    meters.add_argument("--json", action="store_true")
    meters.set_defaults(func=cmd_meters)
    msub = meters.add_subparsers(dest="meters_command", parser_class=type(meters))
    close = msub.add_parser("close-shift", help="close the shift: journal its figures and send"
                            " them to head office (supervisor)")
    close.add_argument("--runtime-dir", type=Path)
    close.add_argument("--json", action="store_true")
    close.set_defaults(func=cmd_close_shift)


def cmd_meters(args: argparse.Namespace) -> int:
    m = _ask(args, "meters")

    def human() -> str:
        shift = m["shift"]
        lines = [f"meters   {m['table_id']} ({m['game']})",
                 f"shift {shift['number']}, open since {shift.get('opened_utc') or '-'}",
                 *figures_lines(shift),
                 "lifetime", *figures_lines(m["lifetime"])]
        last = m.get("last_close")
        if last:
            lines.append(f"last shift closed: {last['shift']} at {last['closed_utc']}")
        lacking = m.get("incomplete")
        if lacking:
            lines.append(f"INCOMPLETE: replayed from a journal pruned through seq"
                         f" {lacking['pruned_through_seq']}: the lifetime figures"
                         f"{' and this shift' if lacking['shift'] else ''} lack those rounds"
                         " (E105, docs/operations.md \"Meters\")")
        return "\n".join(lines)

    emit(m, args.json, human)
    return 0


def cmd_close_shift(args: argparse.Namespace) -> int:
    closing = _ask(args, "meters_close_shift")

    def human() -> str:
        return "\n".join([
            f"shift {closing['shift']} closed at {closing['closed_utc']} (journal"
            f" #{closing['seq']}); its figures go to head office",
            *figures_lines(closing["figures"]),
            *([said] if (said := closing_lacks(closing)) else []),
        ])

    emit(closing, args.json, human)
    return 0


def closing_lacks(closing: dict[str, Any]) -> str | None:
    """The line a shift close shows when its meters lacked rounds (what head office is told:
    the `incomplete` of the `shift_meters` message, docs/mqtt.md); None when whole."""
    d = closing.get("incomplete")
    if not d:
        return None
    said = incomplete_words(d, f"journal pruned through seq {d['missing_through']}")
    return said + "; head office is told so" if d["shift"] else said
