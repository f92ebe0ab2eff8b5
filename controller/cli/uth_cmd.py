"""`tablectl uth ...` and `tablectl math uth`."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction, math_sub: argparse._SubParsersAction) -> None:
    """Add this game's commands to the CLI."""
