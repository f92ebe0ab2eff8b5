"""`tablectl-headoffice console` and `console-password`: serve the console with uvicorn, and
make an Argon2id hash for a `[[users]]` entry.

    tablectl-headoffice console [--config headoffice.toml] [--console-config F]
                                [--listen HOST:PORT]
    tablectl-headoffice console-password < password   (or asked twice on a terminal)

Bad configuration exits 2 with its errors; the console listens on 127.0.0.1:8080 unless the
console config or --listen says otherwise.
"""

from __future__ import annotations

import argparse
import getpass
import ipaddress
import logging
import sys
from pathlib import Path

from shared.errors import InputError

# Imported by `tablectl-headoffice` for every command: the web stack (the `console` extra) is
# imported only when the console runs, so the worker's installs need none of it.
CONSOLE_PATH = Path("/etc/tablectl/headoffice-console.toml")
EXTRA = "the console needs the `console` extra: pip install 'tablectl[console]'"
log = logging.getLogger("tablectl.headoffice.console")


def add_parsers(sub: argparse._SubParsersAction, cfg: argparse.ArgumentParser) -> None:
    c = sub.add_parser("console", parents=[cfg],
                       help="the operators' console in the browser (docs/headoffice-console.md)")
    c.add_argument("--console-config", default=str(CONSOLE_PATH),
                   help=f"accounts and settings (default {CONSOLE_PATH})")
    c.add_argument("--listen", help="HOST:PORT (default: the console config's, 127.0.0.1:8080)")
    sub.add_parser("console-password",
                   help="print an Argon2id hash of a password for a console [[users]] entry")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def password_main() -> int:
    from headoffice.console.accounts import hash_password

    if sys.stdin.isatty():
        first = getpass.getpass("password: ")
        if getpass.getpass("again: ") != first:
            print("tablectl-headoffice: the two passwords differ", file=sys.stderr)
            return 2
    else:
        first = sys.stdin.readline().rstrip("\r\n")
    try:
        print(hash_password(first))
    except InputError as exc:
        print(f"tablectl-headoffice: {exc}", file=sys.stderr)
        return 2
    return 0


def main(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from headoffice.console.accounts import (
            ConsoleConfigError,
            load_console_config,
            parse_listen,
        )
        from headoffice.console.app import create_app
    except ImportError as exc:
        print(f"tablectl-headoffice: {EXTRA} ({exc})", file=sys.stderr)
        return 2
    if args.cmd == "console-password":
        return password_main()
    from headoffice.config import DEFAULT_PATH, HeadOfficeConfigError, load_config
    from headoffice.ledger import Ledger

    try:
        ho = load_config(args.config or DEFAULT_PATH)
        cfg = load_console_config(args.console_config, ho.operators)
        host, port = parse_listen(args.listen or cfg.listen)
        ledger = Ledger.open(ho.database)
    except (HeadOfficeConfigError, ConsoleConfigError, InputError, RuntimeError,
            OSError) as exc:
        print(f"tablectl-headoffice: {exc}", file=sys.stderr)
        return 2
    if not _loopback(host):
        log.warning("console: listening on %s, beyond this machine: put it behind a TLS"
                    " proxy and set cookie_secure", host)
    if not cfg.users:
        log.warning("console: no [[users]] in %s: nobody can log in", args.console_config)
    try:
        uvicorn.run(create_app(ho, cfg, ledger), host=host, port=port, log_level="info",
                    proxy_headers=False, server_header=False, access_log=True)
    finally:
        ledger.close()
    return 0
