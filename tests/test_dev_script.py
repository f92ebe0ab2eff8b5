"""`./dev`: each command installs only what it needs (issue 28 item 9), and the project builds
without setuptools' deprecation warnings about our own pyproject.toml.

The apt decision is `./dev apt-plan CMD`, the same function `setup` installs from, run here on a
machine made bare by a PATH holding only Python: there `./dev run` must want nothing beyond
Python (no chromium, chromium-driver, mosquitto-clients, systemd, compilers), while `./dev test`
wants each of them. The same decision in a clean Debian chroot without chromium, through apt and
pip for real: image/test_dev_run.py (slow, root, `./dev image-test`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# What a simulated table never needs: a browser, the broker's C clients, systemd, compilers.
NOT_FOR_RUN = {"chromium", "chromium-driver", "mosquitto-clients", "mosquitto", "systemd", "gcc",
               "python3-dev", "libsystemd-dev", "pkg-config", "openssl"}


def apt_plan(tmp_path: Path, *args: str) -> list[str]:
    """`./dev apt-plan ARGS` where PATH holds only this Python (and what bash needs to start)."""
    bare = tmp_path / "bin"
    bare.mkdir(exist_ok=True)
    python = Path(os.path.realpath(sys.executable))
    base = Path(sys.base_prefix) / "bin" / python.name
    for name, target in {"python3": base if base.exists() else python,
                         "dirname": Path("/usr/bin/dirname")}.items():
        if not (bare / name).exists():
            (bare / name).symlink_to(target)
    out = subprocess.run(["/bin/bash", str(REPO / "dev"), "apt-plan", *args], cwd=tmp_path,
                         env={"PATH": str(bare), "TABLECTL_MOSQUITTO": str(tmp_path / "none")},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_run_needs_only_python_on_a_bare_machine(tmp_path: Path) -> None:
    plan = apt_plan(tmp_path, "run")
    assert set(plan) <= {"python3", "python3-venv"}, plan
    assert not set(plan) & NOT_FOR_RUN


def test_test_needs_the_browser_broker_and_compilers(tmp_path: Path) -> None:
    plan = set(apt_plan(tmp_path, "test"))
    assert {"chromium", "chromium-driver", "mosquitto", "mosquitto-clients", "systemd", "gcc",
            "libsystemd-dev", "pkg-config"} <= plan, plan


def test_the_linked_demo_needs_mosquitto_and_nothing_for_tests(tmp_path: Path) -> None:
    plan = set(apt_plan(tmp_path, "run", "--linked"))
    assert "mosquitto" in plan
    assert not plan & (NOT_FOR_RUN - {"mosquitto"}), plan


def test_this_machine_plans_nothing_it_has(tmp_path: Path) -> None:
    """With the real PATH, a package whose command is present is not asked for again."""
    out = subprocess.run(["/bin/bash", str(REPO / "dev"), "apt-plan", "test"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    plan = out.stdout.split()
    for command, package in {"chromium": "chromium", "chromedriver": "chromium-driver",
                             "systemd-analyze": "systemd", "gcc": "gcc"}.items():
        if subprocess.run(["/bin/sh", "-c", f"command -v {command}"],
                          capture_output=True).returncode == 0:
            assert package not in plan


@pytest.mark.slow
def test_the_project_builds_without_license_deprecation_warnings(tmp_path: Path) -> None:
    """pip's isolated build gets the newest setuptools (>=77, the floor pyproject.toml names):
    a `license = { text = ... }` table printed three boxes of BuildBackendWarning on every
    install; an SPDX string prints none."""
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w",
                          str(tmp_path), str(REPO)], capture_output=True, text=True, timeout=600)
    if out.returncode != 0 and "No matching distribution found for setuptools" in out.stderr:
        pytest.skip("no package index reachable for the isolated build's setuptools")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "project.license" not in out.stdout + out.stderr
    assert "BuildBackendWarning" not in out.stdout + out.stderr
    assert list(tmp_path.glob("tablectl-*.whl"))
