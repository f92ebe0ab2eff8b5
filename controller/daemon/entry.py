"""`tablectld`'s entry point (pyproject.toml [project.scripts], `python -m controller.daemon`):
what must happen before the daemon imports anything, then `controller.daemon.main`.

A table without a head-office link loads no OpenSSL (issue 31: a READY UTH table <= 30 MB).
OpenSSL is ~4.4 MB of a READY table's resident memory (libcrypto's pages, libssl, `ssl`'s
tables), loaded by two imports a standalone table does not need: `ssl` (asyncio imports it
for TLS transports the table never opens) and `_hashlib` (hashlib's OpenSSL back end, whose
SHA-256 and HMAC are the same bytes as Python's own). Python is written for a build without
OpenSSL: asyncio then has no TLS transports and hashlib uses its built-in SHA-1/SHA-2/BLAKE2
(the journal's chain and MACs, the evaluator tables' digest: ~5 us more a record here). So
before any import, both names are entered in `sys.modules` as None, the import system's
"not importable" (https://docs.python.org/3/reference/import.html#the-module-cache).

Only when the arguments say for certain that the table has no [link]: `--simulate` without
`--config` (the simulation's config has none), or `--config FILE` whose TOML has no [link]
table. Anything else (a [link], TLS or not: aiomqtt and paho import ssl; an unreadable or
invalid file, which the config loader then reports; an abbreviated option) refuses nothing,
and the daemon loads OpenSSL as before. The installed program's verification runs in a
child process of its own (controller/extensions/verify.py), with OpenSSL's hashes.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Sequence

OPENSSL_MODULES = ("ssl", "_hashlib")
CONFIG = "--config"


def _option(token: str) -> str:
    return token.split("=", 1)[0]


def config_argument(argv: Sequence[str]) -> tuple[bool, str | None]:
    """(certain, path): the --config argument as argparse will read it; certain=False when an
    abbreviation of --config (argparse accepts `--conf`) or a missing value makes it unsure."""
    path = None
    for i, token in enumerate(argv):
        if token == "--":
            break
        option = _option(token)
        if option == CONFIG:
            if "=" in token:
                path = token.split("=", 1)[1]
            elif i + 1 < len(argv):
                path = argv[i + 1]
            else:
                return False, None
        elif len(option) > 2 and CONFIG.startswith(option):
            return False, None
    return True, path


def without_link(argv: Sequence[str]) -> bool:
    """Whether these arguments certainly start a table without a [link] (module docstring)."""
    certain, path = config_argument(argv)
    if not certain:
        return False
    if path is None:
        return any(_option(t) == "--simulate" for t in argv)
    try:
        with open(path, "rb") as f:
            text = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False
    return "link" not in text


def refuse_openssl(argv: Sequence[str]) -> bool:
    """Enter OPENSSL_MODULES in sys.modules as not importable when `argv` starts a table
    without a link and neither is imported yet; whether it did."""
    if not without_link(argv) or any(m in sys.modules for m in OPENSSL_MODULES):
        return False
    for name in OPENSSL_MODULES:
        sys.modules[name] = None  # type: ignore[assignment]
    return True


def main() -> int:
    refuse_openssl(sys.argv[1:])
    from controller.daemon.main import main as daemon_main

    return daemon_main()
