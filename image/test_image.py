"""The image recipe without hardware (slow; `./dev image-test`, not part of `./dev test`).

Builds a Debian bookworm root filesystem for this machine's architecture with mmdebstrap from
image/packages.txt, runs image/customize.sh on it (the same hook rpi-image-gen runs for the Pi
image: overlay, venv, units, account, manifest), then checks that the units are present and
enabled, `systemd-analyze verify --root` is clean, the signed manifest verifies, and the
installed program verifies itself and plays a simulated round inside the root.
Needs root (mmdebstrap's root mode, chroot) and the Debian and PyPI registries.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.verify import verify

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARE = "opt/tablectl/share/tablectl"
MIRROR = os.environ.get("TABLECTL_MIRROR", "http://deb.debian.org/debian")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="mmdebstrap root mode and chroot need root"),
    pytest.mark.skipif(shutil.which("mmdebstrap") is None, reason="mmdebstrap is not installed"),
]


def packages() -> list[str]:
    lines = (HERE / "packages.txt").read_text().splitlines()
    return [p.strip() for p in lines if p.strip() and not p.strip().startswith("#")]


@pytest.fixture(scope="module")
def rootfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("image")
    root = work / "root"
    wheels = work / "wheels"
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO)],
        check=True,
    )
    wheel = next(wheels.glob("tablectl-*.whl"))
    hook = f'TABLECTL_WHEEL={wheel} TABLECTL_PYTHON={sys.executable} {HERE}/customize.sh "$1"'
    result = subprocess.run(
        [
            "mmdebstrap",
            "--mode=root",
            "--variant=minbase",
            f"--include={','.join(packages())}",
            f"--customize-hook={hook}",
            "bookworm",
            str(root),
            MIRROR,
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    elapsed = time.monotonic() - started
    print(f"\nimage-test: root filesystem built in {elapsed:.0f} s", file=sys.stderr)
    assert result.returncode == 0, result.stderr[-4000:]
    return root


def in_root(root: Path, *cmd: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["chroot", str(root), *cmd], capture_output=True, text=True, timeout=timeout
    )


def test_units_are_installed_and_enabled(rootfs: Path) -> None:
    for unit in ("tablectld.service", "tablectl-headoffice.service"):
        installed = rootfs / "etc/systemd/system" / unit
        assert installed.read_bytes() == (REPO / "systemd" / unit).read_bytes()
    for unit in ("tablectld.service", "tablectl-health.service", "chrony.service"):
        state = subprocess.run(
            ["systemctl", f"--root={rootfs}", "is-enabled", unit], capture_output=True, text=True
        ).stdout.strip()
        assert state == "enabled", f"{unit}: {state}"
    for masked in ("swap.target", "dphys-swapfile.service"):
        assert os.readlink(rootfs / "etc/systemd/system" / masked) == "/dev/null"
    users = (rootfs / "etc/passwd").read_text()
    assert any(line.startswith("tablectl:") for line in users.splitlines())
    assert (rootfs / "etc/systemd/journald.conf.d/tablectl.conf").is_file()
    sysctl = "etc/sysctl.d/60-tablectl-writeback.conf"  # docs/daemon.md, "What reaches the card"
    assert (rootfs / sysctl).read_bytes() == (REPO / "image/overlay" / sysctl).read_bytes()
    assert os.readlink(rootfs / "etc/tablectl/table.toml") == "/persistent/etc/tablectl/table.toml"
    # No journal key in the image (it is the same on every table): made on the first boot.
    key_link = os.readlink(rootfs / "etc/tablectl/journal-key")
    assert key_link == "/persistent/etc/tablectl/journal-key"
    assert not (rootfs / "persistent/etc/tablectl/journal-key").exists()
    assert (rootfs / "etc/systemd/system/tablectl-journal-key.service").is_file()


def test_systemd_analyze_verify_root_is_clean(rootfs: Path) -> None:
    units = ["tablectld.service", "tablectl-health.service", "tablectl-journal-key.service"]
    if (rootfs / "opt/tablectl/bin/tablectl-headoffice").exists():
        units.append("tablectl-headoffice.service")
    else:
        print("image-test: tablectl-headoffice is not installed; its unit is not verified")
    result = subprocess.run(
        ["systemd-analyze", "verify", f"--root={rootfs}", *units],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr


def test_signed_manifest_covers_the_program_and_verifies(rootfs: Path) -> None:
    share = rootfs / SHARE
    report = verify(
        share / "manifest.json",
        share / "manifest.json.sig",
        share / "manifest-signing.pub",
        rootfs,
    )
    assert report.ok, report.problems[:10]
    assert report.files > 1000  # the venv, the interpreter's stdlib, the units
    print(f"image-test: manifest {report.files} files, {report.bytes} bytes")


def test_installed_program_verifies_itself_and_plays(rootfs: Path) -> None:
    check = in_root(rootfs, "/opt/tablectl/bin/tablectl", "verify", "--local")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "software VERIFIED" in check.stdout
    played = in_root(
        rootfs,
        "/opt/tablectl/bin/tablectld",
        "--simulate",
        "--game",
        "paigow",
        "--autoplay",
        "1",
        "--state-dir",
        "/tmp/sim",
    )
    assert played.returncode == 0, played.stderr
    assert "round 1 completed" in played.stdout
    assert "not verified" not in played.stderr


def _lock_pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        if "==" in line and not line.startswith((" ", "#")):
            name, _, rest = line.partition("==")
            pins[name.strip().lower().replace("_", "-")] = rest.split()[0]
    return pins


def test_venv_is_exactly_the_lock_plus_the_program(rootfs: Path) -> None:
    arch = {"x86_64": "x86_64", "aarch64": "aarch64"}[os.uname().machine]
    pins = _lock_pins(HERE / f"requirements-{arch}.lock")
    freeze = in_root(rootfs, "/opt/tablectl/bin/pip", "list", "--format=freeze",
                     "--disable-pip-version-check")
    assert freeze.returncode == 0, freeze.stderr
    installed = {
        name.lower().replace("_", "-"): version
        for name, _, version in (line.partition("==") for line in freeze.stdout.split())
    }
    installed.pop("tablectl")
    installed.pop("pip", None)  # the venv's own installer, from Debian's python3-venv
    assert installed == pins
    assert "numpy" not in installed  # the `math` extra is not on the table


def test_journald_route_and_persistent_journal(rootfs: Path) -> None:
    journal = in_root(rootfs, "/opt/tablectl/bin/python", "-c",
                      "from systemd.journal import JournalHandler; print('ok')")
    assert journal.stdout.strip() == "ok", journal.stderr
    assert os.readlink(rootfs / "var/log/journal") == "/persistent/log/journal"
    flush = rootfs / "etc/systemd/system/systemd-journal-flush.service.d/tablectl-persistent.conf"
    assert "/persistent/log/journal" in flush.read_text()
    assert (rootfs / "etc/tablectl/uth-nsw.toml.example").is_file()
    assert (rootfs / "etc/tablectl/table.toml.example").is_file()


def test_version_names_the_verified_manifest(rootfs: Path) -> None:
    import hashlib

    digest = hashlib.sha256((rootfs / SHARE / "manifest.json").read_bytes()).hexdigest()
    run = in_root(rootfs, "/opt/tablectl/bin/tablectl", "--version")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("tablectl ") and f"(manifest sha256 {digest})" in run.stdout
    math = in_root(rootfs, "/opt/tablectl/bin/tablectl", "math", "paigow", "--rules", "nsw")
    assert math.returncode == 69 and "tablectl[math]" in math.stderr


def test_slot_health_check_parses_on_the_image_python(rootfs: Path) -> None:
    script = (rootfs / "usr/local/sbin/tablectl-slot").read_text()
    program = script.split("python\" -c '", 1)[1].split("'", 1)[0]
    check = in_root(rootfs, "/usr/bin/python3", "-c", f"compile({program!r}, 'slot', 'exec')")
    assert check.returncode == 0, check.stderr
