"""Helpers shared by the CLI's commands: JSON lines, batch input, progress on a terminal."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, TextIO

from shared.errors import InputError, TablectlError


def emit(obj: Any, as_json: bool, human: Callable[[], str], out: TextIO | None = None) -> None:
    (out or sys.stdout).write((json.dumps(obj, sort_keys=False) if as_json else human()) + "\n")


def run_batch(lines: Iterable[str], handle: Callable[[str], Any], out: TextIO | None = None) -> int:
    """One JSON object out per non-blank line in, in order.

    A bad line gives {"error": ..., "line": N} in its place, so the output stays aligned with the
    input, and the exit status is 2 once the batch is done.
    """
    out = out or sys.stdout
    status = 0
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        try:
            result = handle(line)
        except (InputError, json.JSONDecodeError) as exc:
            result = {"error": str(exc), "line": number}
            status = 2
        out.write(json.dumps(result) + "\n")
    out.flush()
    return status


def progress_printer(label: str, stream: TextIO | None = None) -> Callable[[int, int], None] | None:
    """A progress callback that draws on a terminal, or None when stderr is not one."""
    stream = stream or sys.stderr
    if not stream.isatty():
        return None

    def show(done: int, total: int) -> None:
        stream.write(f"\r{label}: {100 * done // total:3d}% ({done}/{total})")
        if done >= total:
            stream.write("\n")
        stream.flush()

    return show


def parse_json_object(text: str, what: str) -> dict[str, Any]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{what}: not valid JSON ({exc.msg} at line {exc.lineno} col {exc.colno})"
        ) from None
    if not isinstance(obj, dict):
        raise InputError(f"{what}: expected a JSON object, got {type(obj).__name__}")
    return obj


EX_UNAVAILABLE = 69  # sysexits(3): a part this command needs is not installed
EX_NOPERM = 77  # sysexits(3): this user may not read or use what the command needs


class Unavailable(TablectlError):
    """A command needs an optional part that is not installed (exit EX_UNAVAILABLE)."""


def paigow_parsheet() -> ModuleType:
    """The Pai Gow par sheet, imported when a command needs it: it needs numpy, which the
    table image leaves out (the `math` extra, docs/operations.md)."""
    try:
        from controller.games.paigow import parsheet
    except ModuleNotFoundError as exc:
        if exc.name != "numpy":
            raise
        raise Unavailable(
            "the Pai Gow par sheet needs numpy, which is not installed (the table image leaves"
            " it out): pip install 'tablectl[math]' on a workstation"
        ) from None
    return parsheet
