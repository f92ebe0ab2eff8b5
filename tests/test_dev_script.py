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
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# What a simulated table never needs: a browser, the broker's C clients, systemd, compilers.
NOT_FOR_RUN = {"chromium", "chromium-driver", "mosquitto-clients", "mosquitto", "systemd", "gcc",
               "python3-dev", "libsystemd-dev", "pkg-config", "openssl"}


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A copy of the checkout where `./dev run` puts its tables' control sockets
    (state/<game>/run/control.sock) within the 107 bytes of a Unix socket's path: pytest's
    tmp_path under xdist is too deep for that, and the daemon refuses such a path."""
    path = Path(tempfile.mkdtemp(prefix="dev-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


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


def test_dev_run_says_where_the_state_went_and_resumes(short_dir: Path) -> None:
    """`./dev run` twice, as a newcomer runs it (issue 28 item 9): it installs nothing here,
    ends saying where the tables' journals went and what to try next, and the second run says
    each table resumed where the first stopped. A copy of `./dev` whose .venv holds only links
    to this environment's commands (so nothing is ever installed into this one)."""
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "tablectld").exists() or not (bin_dir / "tablectl").exists():
        pytest.skip("the project is not installed in this Python's environment")
    work = short_dir / "clone"
    (work / ".venv" / "bin").mkdir(parents=True)
    for name in ("python", "tablectl", "tablectld"):
        (work / ".venv" / "bin" / name).symlink_to(bin_dir / name)
    (work / ".venv" / ".tablectl-installed").touch()
    (work / "dev").write_bytes((REPO / "dev").read_bytes())
    (work / "dev").chmod(0o755)
    (work / "pyproject.toml").write_bytes((REPO / "pyproject.toml").read_bytes())
    os.utime(work / "pyproject.toml", (0, 0))  # older than the stamp: set up already

    def dev_run() -> str:
        out = subprocess.run([str(work / "dev"), "run"], cwd=work, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        assert "installing apt packages" not in out.stderr, out.stderr
        return out.stdout

    first = dev_run()
    assert f"== done: the tables' journals are in {work}/state ==" in first
    assert "state/paigow-nsw: a new journal, rounds 1-10" in first
    assert "state/uth-nsw: a new journal, rounds 1-10" in first
    assert "Next:\n  ./dev run            again: both tables resume" in first
    assert "./dev run --linked" in first.split("Next:")[1]
    second = dev_run()
    assert "state/paigow-nsw: resumed after round 10; 20 rounds in it now" in second
    assert "state/uth-nsw: resumed after round 10; 20 rounds in it now" in second


@pytest.mark.slow
def test_dev_run_on_a_fresh_copy_opens_without_warning_boxes(short_dir: Path) -> None:
    """`./dev run` in a fresh copy of the checkout (no .venv): it makes the venv, installs the
    project for a run (no extras) and plays, printing no setuptools warning box (issue 28 item
    9: three boxes of `project.license` deprecation opened it; pip 26, not 23, also shows
    setuptools' "Editable installation" note on every editable install of this layout)."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
    clone = short_dir / "clone"
    for name in files.stdout.decode().split("\0"):
        if name and (REPO / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            (clone / name).write_bytes((REPO / name).read_bytes())
    (clone / "dev").chmod(0o755)
    out = subprocess.run([str(clone / "dev"), "run"], cwd=clone, capture_output=True, text=True,
                         timeout=900)
    said = out.stdout + out.stderr
    if out.returncode != 0 and "No matching distribution found" in said:
        pytest.skip("no package index reachable for the project's dependencies")
    assert out.returncode == 0, said[-3000:]
    for line in said.splitlines():  # (only where python3-venv is missing: it alone)
        if line.startswith("dev: installing apt packages:"):
            assert not set(line.split(":", 1)[1].split()) & NOT_FOR_RUN, line
    for box in ("BuildBackendWarning", "SetuptoolsDeprecationWarning", "project.license",
                "Editable installation", "********"):
        assert box not in said, said[:3000]
    assert "== done: the tables' journals are in" in out.stdout
    assert (clone / ".venv" / ".tablectl-installed-base").exists()
