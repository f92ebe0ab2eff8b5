"""`tablectl`: the technician CLI.

Each game registers its own sub-commands (controller/cli/<game>_cmd.py). A bad argument exits 2
with one line naming it, as the rest of the table's tooling expects; a file it may not read 77,
one it cannot read 74 (sysexits), also in one line: never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sqlite3
import sys
from collections.abc import Sequence

from controller.cli import (
    alarms_cmd,
    demo_cmd,
    devices_cmd,
    journal_cmd,
    logs_cmd,
    meters_cmd,
    paigow_cmd,
    rules_cmd,
    table_cmd,
    uth_cmd,
    verify_cmd,
)
from controller.cli.common import EX_NOPERM, EX_UNAVAILABLE, Unavailable
from controller.control import SocketDenied
from shared.errors import TablectlError


class _Version(argparse.Action):
    """--version: the version and the identity of the installed software, computed when asked
    (the manifest check reads every installed file, so never at import or for other commands)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="version and verified manifest digest")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from controller.about import build_identity, program_version, software_identity

        _verified, identity = software_identity()
        print(f"tablectl {program_version()} ({identity}), {build_identity()}")
        parser.exit(0)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # One line, naming the problem; exit 2 like argparse itself.
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tablectl", description="Technician CLI of the tablectl table controller")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    math = sub.add_parser("math", help="exact par sheets of a game's rules")
    math_sub = math.add_subparsers(dest="math_game", required=True, parser_class=_Parser)
    paigow_cmd.register(sub, math_sub)
    uth_cmd.register(sub, math_sub)
    demo_cmd.register(sub)
    table_cmd.register(sub)
    journal_cmd.register(sub)
    devices_cmd.register(sub)
    verify_cmd.register(sub)
    meters_cmd.register(sub)
    logs_cmd.register(sub)
    alarms_cmd.register(sub)
    rules_cmd.register(sub)
    return parser


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """One parser a process: building its 50-odd subparsers costs ~0.1 s (argparse looks up
    translations and the terminal's width for each), paid once, not by every in-process call
    (the tests make hundreds). Parsing leaves it as it was."""
    return build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    args.typed = typed_command(sys.argv[1:] if argv is None else list(argv))
    try:
        return int(args.func(args) or 0)
    except SocketDenied as exc:  # not in the socket's group: whatever the command, say so
        print(f"tablectl: error: {exc}", file=sys.stderr)
        return EX_NOPERM
    except Unavailable as exc:  # a TablectlError too: before it, for its own exit code
        print(f"tablectl: error: {exc}", file=sys.stderr)
        return EX_UNAVAILABLE
    except TablectlError as exc:  # a refusal or bad input, named in one line
        print(f"tablectl: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before a command's own handling of it: no traceback
        return 130
    except BrokenPipeError:
        # `tablectl logs | head`: the reader had enough. stdout goes to /dev/null so the
        # interpreter's last flush cannot fail again (and print a traceback).
        quiet_stdout()
        return 0
    except PermissionError as exc:
        print(f"tablectl: error: {_what(exc)}permission denied ({PERMISSION_HINT})",
              file=sys.stderr)
        return EX_NOPERM
    except OSError as exc:  # a file or directory that is not there or cannot be read
        print(f"tablectl: error: {_what(exc)}{exc.strerror or exc}", file=sys.stderr)
        return EX_IOERR
    except UnicodeDecodeError as exc:  # a file given where text belongs
        print(f"tablectl: error: a file it read is not UTF-8 text ({exc.reason} at byte"
              f" {exc.start})", file=sys.stderr)
        return EX_IOERR
    except sqlite3.Error as exc:  # a journal file that is not a database, or cannot be opened
        print(f"tablectl: error: the journal cannot be read: {exc}", file=sys.stderr)
        return EX_IOERR


def typed_command(argv: list[str]) -> str:
    """The command as the person typed it, without its options: `tablectl meters close-shift`
    (what a refusal names instead of the daemon's request)."""
    words = []
    for word in argv:
        if word.startswith("-"):
            break
        words.append(word)
    return " ".join(["tablectl", *words[:3]])


EX_IOERR = 74  # sysexits(3): a file the command needs cannot be read
PERMISSION_HINT = ("the table's files are the service's: run it as root (sudo) or as a member"
                   " of the group that owns them, e.g. tablectl")


def _what(exc: OSError) -> str:
    return f"{exc.filename}: " if exc.filename else ""


def quiet_stdout() -> None:
    """stdout to /dev/null, so the interpreter's last flush into a closed pipe cannot fail."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
