"""`tablectl demo`: what the README's first command runs."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="a short demonstration of the rules engines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("tablectl demo")
    return 0
