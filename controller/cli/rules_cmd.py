"""`tablectl rules trace`: every clause of the approved rules, traced to the code that decides it,
the tests that check it, or why it is left to people or not a table controller's
(docs/traceability.md, which `python -m controller.rules --refresh` writes from the same trace).

    tablectl rules trace [--rules nsw|nz|act|uth] [--json]

It reads a source checkout (the tests are not on a table's image). Exit status: 0 every clause
classified, none implemented but untested, no citation astray; 1 otherwise; 69 not a
source checkout.
"""

from __future__ import annotations

import argparse

from controller.cli.common import Unavailable, emit
from controller.rules import report
from controller.rules.clauses import BY_KEY
from controller.rules.trace import build


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("rules", help="the approved rules' clauses traced to code and tests")
    rsub = p.add_subparsers(dest="rules_command", required=True, parser_class=type(p))
    t = rsub.add_parser("trace", help="each clause: tested, implemented, people, n/a or unknown")
    t.add_argument("--rules", choices=sorted(BY_KEY), help="one seed (default: all four)")
    t.add_argument("--json", action="store_true")
    t.set_defaults(func=cmd_trace)


def cmd_trace(args: argparse.Namespace) -> int:
    try:
        trace = build(seeds=[args.rules] if args.rules else None)
    except FileNotFoundError as exc:
        raise Unavailable(str(exc)) from None
    emit(report.as_json(trace), args.json, lambda: report.human(trace))
    return 1 if trace.unknown() or trace.untested() or trace.problems else 0
