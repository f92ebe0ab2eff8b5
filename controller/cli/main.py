"""`tablectl`: the technician CLI.

Each game registers its own sub-commands (controller/cli/<game>_cmd.py). A bad argument exits 2
with one line naming it, as the rest of the table's tooling expects.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from controller.cli import demo_cmd, devices_cmd, paigow_cmd, table_cmd, uth_cmd, verify_cmd
from controller.errors import InputError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # One line, naming the problem; exit 2 like argparse itself.
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tablectl", description="Technician CLI of the tablectl table controller")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    math = sub.add_parser("math", help="exact par sheets of a game's rules")
    math_sub = math.add_subparsers(dest="math_game", required=True, parser_class=_Parser)
    paigow_cmd.register(sub, math_sub)
    uth_cmd.register(sub, math_sub)
    demo_cmd.register(sub)
    table_cmd.register(sub)
    devices_cmd.register(sub)
    verify_cmd.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"tablectl: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
