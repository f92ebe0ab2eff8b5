"""A table without a link loads no OpenSSL (controller/daemon/entry.py, issue 31: a READY UTH
table <= 30 MB); a linked one loads it as before (tests/link/test_link_daemon.py runs a
TLS-linked tablectld through the same entry point)."""

from __future__ import annotations

import hashlib
import hmac
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from controller.daemon.entry import config_argument, without_link
from tests.support.daemon import REPO, start_daemon, wait_ready

LINK = '[link]\nenabled = true\nhost = "ho.example"\n'


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "table.toml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--simulate", "--game", "uth"], (True, None)),
        (["--config", "/etc/t.toml"], (True, "/etc/t.toml")),
        (["--config=/etc/t.toml", "--simulate"], (True, "/etc/t.toml")),
        (["--conf", "/etc/t.toml"], (False, None)),  # argparse takes the abbreviation
        (["--config"], (False, None)),  # argparse refuses it; nothing is decided here
        (["--", "--config", "x"], (True, None)),
    ],
)
def test_the_config_argument_is_read_as_argparse_reads_it(
    argv: list[str], expected: tuple[bool, str | None]
) -> None:
    assert config_argument(argv) == expected


@pytest.mark.parametrize(
    ("argv", "config", "expected"),
    [
        (["--simulate", "--game", "uth"], None, True),  # the simulation's config has no [link]
        (["--simulate=pty", "--game", "uth"], None, True),
        ([], None, False),  # /etc/tablectl/table.toml, unread here: OpenSSL as before
        (["--config", "{path}"], 'table_id = "T1"\n', True),
        (["--config", "{path}", "--simulate"], 'table_id = "T1"\n' + LINK, False),
        (["--config", "{path}"], LINK + "[link.tls]\nca = '/ca.pem'\n", False),
        (["--config", "{path}"], "not = [toml", False),  # the loader reports it, as before
        (["--config", "/nonexistent/table.toml"], None, False),
        (["--conf", "{path}", "--simulate"], 'table_id = "T1"\n' + LINK, False),
    ],
)
def test_only_a_table_certainly_without_a_link_refuses_openssl(
    tmp_path: Path, argv: list[str], config: str | None, expected: bool
) -> None:
    path = _config(tmp_path, config) if config is not None else ""
    assert without_link([a.replace("{path}", path) for a in argv]) is expected


def test_a_standalone_table_at_ready_has_no_openssl_mapped(tmp_path: Path) -> None:
    proc = start_daemon(tmp_path, "--game", "uth", "--autoplay", "0", "--quiet", capture=False)
    try:
        wait_ready(tmp_path, proc)
        maps = Path(f"/proc/{proc.pid}/maps").read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert "libcrypto" not in maps and "libssl" not in maps
    assert "libpython" in maps or "python" in maps  # the maps are the daemon's own


PROBE = """
import sys
from controller.daemon.entry import refuse_openssl
print(refuse_openssl(sys.argv[1:]))
import asyncio, hashlib, hmac
key, msg = bytes(range(32)), b"a journal record" * 20
print(hashlib.sha256(msg).hexdigest(), hmac.new(key, msg, hashlib.sha256).hexdigest(),
      hashlib.sha1(msg).hexdigest(), hashlib.sha256.__module__ == "_hashlib", asyncio.sslproto.ssl)
"""


def test_without_openssl_the_digests_are_the_same_bytes() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, "--simulate", "--game", "uth"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        timeout=60,
    ).stdout.split()
    key, msg = bytes(range(32)), b"a journal record" * 20
    assert out == [
        "True",
        hashlib.sha256(msg).hexdigest(),
        hmac.new(key, msg, hashlib.sha256).hexdigest(),
        hashlib.sha1(msg).hexdigest(),
        "False",  # Python's own SHA-256, not OpenSSL's
        "None",  # asyncio without TLS transports
    ]
