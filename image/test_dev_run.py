"""The README's first command on a fresh Debian 12 (slow; `./dev image-test`, not `./dev test`).

A clean bookworm root (mmdebstrap minbase with python3 and nothing else of ours: no chromium,
no python3-venv), this working tree copied in, and `./dev run` run inside it as root, with the
network, through mmdebstrap's customize hook. `./dev` must install python3-venv through apt (the
apt path is exercised) and nothing a simulated table does not need: chromium, chromium-driver,
mosquitto-clients, systemd and the compilers stay absent. The fast form of the same decision,
with a fake PATH, is tests/test_dev_script.py. Needs root, mmdebstrap and the Debian and PyPI
registries.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MIRROR = os.environ.get("TABLECTL_MIRROR", "http://deb.debian.org/debian")
ABSENT = ("chromium", "chromium-driver", "mosquitto-clients", "mosquitto", "systemd", "gcc",
          "python3-dev", "libsystemd-dev")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="mmdebstrap root mode and chroot need root"),
    pytest.mark.skipif(shutil.which("mmdebstrap") is None, reason="mmdebstrap is not installed"),
]


def tree_files() -> list[str]:
    """The working tree as a fresh clone has it (tracked and new files, not .venv or state)."""
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                         capture_output=True, check=True)
    return [f for f in out.stdout.decode().split("\0") if f and (REPO / f).is_file()]


def installed(root: Path, package: str) -> bool:
    status = (root / "var/lib/dpkg/status").read_text()
    return f"Package: {package}\nStatus: install ok installed" in status


def test_dev_run_on_a_fresh_debian_installs_no_browser(tmp_path: Path) -> None:
    src = tmp_path / "tablectl"
    for f in tree_files():
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, src / f)
    root = tmp_path / "root"
    log = tmp_path / "dev-run.log"
    # A machine whose HTTPS goes through an inspecting proxy names its CA bundle for pip
    # (PIP_CERT, inherited by the chroot): the root gets the same file, as its own would be.
    bundles = sorted({os.environ[k] for k in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
                      if os.environ.get(k) and Path(os.environ[k]).is_file()})
    certs = "".join(f'mkdir -p "$1{Path(b).parent}" && cp {b} "$1{b}" && ' for b in bundles)
    run = (f'{certs}mkdir -p "$1/root/tablectl" && cp -a {src}/. "$1/root/tablectl/" && '
           f'chroot "$1" /bin/bash -c "cd /root/tablectl && ./dev run" > {log} 2>&1')
    started = time.monotonic()
    result = subprocess.run(
        ["mmdebstrap", "--mode=root", "--variant=minbase", "--include=python3,ca-certificates",
         f"--customize-hook={run}", "bookworm", str(root), MIRROR],
        capture_output=True, text=True, timeout=1800)
    print(f"\ndev-run: fresh root and ./dev run in {time.monotonic() - started:.0f} s",
          file=sys.stderr)
    text = log.read_text() if log.exists() else ""
    assert result.returncode == 0, result.stderr[-3000:] + text[-3000:]
    assert "dev: installing apt packages: python3-venv" in text
    assert "== done: the tables' journals are in /root/tablectl/state ==" in text
    assert "state/paigow-nsw: a new journal, rounds 1-10" in text
    assert installed(root, "python3-venv")
    for package in ABSENT:
        assert not installed(root, package), f"./dev run installed {package}"
    assert not (root / "usr/bin/chromium").exists()
