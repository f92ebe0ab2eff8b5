"""The reproducible image's checks without a real build (issue 32): image/repro.py's compare
step (what `./dev image-repro` runs on the two builds), image/buildrecord.py's package lock,
and the manifest's time from SOURCE_DATE_EPOCH."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from controller.verify.manifest import build_manifest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "image"))

import buildrecord  # noqa: E402
import repro  # noqa: E402

EPOCH = 1_700_000_000  # a commit's time: every file of a reproducible build carries it


def _tree(root: Path) -> Path:
    """A small root as a build leaves it: files and a link, every mtime the epoch."""
    (root / "etc").mkdir(parents=True)
    (root / "etc/hostname").write_text("tablectl\n")
    (root / "opt/tablectl/bin").mkdir(parents=True)
    (root / "opt/tablectl/bin/tablectl").write_text("#!/bin/sh\n")
    (root / "opt/tablectl/bin/tablectl").chmod(0o755)
    (root / "usr/local/bin").mkdir(parents=True)
    (root / "usr/local/bin/tablectl").symlink_to("/opt/tablectl/bin/tablectl")
    for path in [root, *root.rglob("*")]:
        os.utime(path, (EPOCH, EPOCH), follow_symlinks=False)
    return root


def _tar(tree: Path, out: Path) -> None:
    """A canonical tar of tree (sorted, numeric owners, the members' own mtimes)."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted([tree, *tree.rglob("*")]):
            tar.add(path, arcname=str(path.relative_to(tree)), recursive=False)


def _build(out: Path) -> Path:
    """One 'build': the root tree, its tar, one more artifact."""
    out.mkdir()
    _tree(out / "root")
    _tar(out / "root", out / "base.tar")
    (out / "packages.lock").write_text("a arm64 1.0 " + "1" * 64 + " pool/a.deb\n")
    return out


def _stamp(build: Path) -> None:
    """The non-determinism the check must catch: a file holding the build's current time."""
    stamp = build / "root/etc/build-stamp"
    stamp.write_text(time.strftime("%Y-%m-%dT%H:%M:%S\n"))
    os.utime(stamp, (EPOCH, EPOCH))
    os.utime(build / "root/etc", (EPOCH, EPOCH))
    (build / "base.tar").unlink()
    _tar(build / "root", build / "base.tar")


def _run(a: Path, b: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            str(REPO / "image/repro.py"),
            "compare",
            str(a),
            str(b),
            "--time-a",
            "600",
            "--time-b",
            "610",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_two_identical_builds_pass(tmp_path: Path) -> None:
    a, b = _build(tmp_path / "a"), _build(tmp_path / "b")
    rows, diffs = repro.compare(a, b)
    assert [r[0] for r in rows] == ["base.tar", "packages.lock", "root"]
    assert diffs == {} and all(ha == hb for _, ha, hb in rows)
    run = _run(a, b)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "build A 600 s, build B 610 s" in run.stdout
    assert "3 of 3 artifacts identical" in run.stdout


def test_a_file_with_the_current_time_is_caught_and_named(tmp_path: Path) -> None:
    a, b = _build(tmp_path / "a"), _build(tmp_path / "b")
    _stamp(b)
    _, diffs = repro.compare(a, b)
    assert set(diffs) == {"base.tar", "root"}
    assert any(line.startswith("etc/build-stamp: only in B") for line in diffs["base.tar"])
    run = _run(a, b)
    assert run.returncode == 1
    assert "etc/build-stamp: only in B" in run.stdout
    assert "1 of 3 artifacts identical" in run.stdout
    # The same file in both builds, each written at its own time: the content is what differs.
    _stamp(a)
    time.sleep(1.1)  # the next second: a different timestamp text, not a timing assertion
    _stamp(b)
    _, diffs = repro.compare(a, b)
    assert any(line.startswith("etc/build-stamp: sha256") for line in diffs["base.tar"]), diffs


def test_an_mtime_left_at_build_time_is_caught_and_named(tmp_path: Path) -> None:
    a, b = _build(tmp_path / "a"), _build(tmp_path / "b")
    os.utime(b / "root/etc/hostname")  # now: not clamped to the epoch
    (b / "base.tar").unlink()
    _tar(b / "root", b / "base.tar")
    _, diffs = repro.compare(a, b)
    assert [line.split(":")[0:2] for line in diffs["base.tar"]] == [["etc/hostname", " mtime"]]
    assert diffs["root"][0].startswith("etc/hostname: mtime")


def test_a_missing_artifact_and_a_bad_directory_are_named(tmp_path: Path) -> None:
    a, b = _build(tmp_path / "a"), _build(tmp_path / "b")
    (b / "packages.lock").unlink()
    _, diffs = repro.compare(a, b)
    assert diffs == {"packages.lock": ["only in A"]}
    run = _run(a, tmp_path / "absent")
    assert run.returncode == 2 and "absent: not a directory of build artifacts" in run.stderr
    assert "Traceback" not in run.stderr


def _root_with_packages(root: Path, version: str) -> Path:
    (root / "var/lib/dpkg").mkdir(parents=True)
    (root / "var/lib/apt/lists").mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text(
        f"Package: chrony\nStatus: install ok installed\nArchitecture: arm64\nVersion: {version}\n"
        "Description: NTP\n more text\n\n"
        "Package: gone\nStatus: deinstall ok config-files\nArchitecture: all\nVersion: 1\n"
    )
    (root / "var/lib/apt/lists/mirror_dists_bookworm_InRelease").write_text(
        "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\nOrigin: Debian\n"
        "Date: Sat, 15 Nov 2025 09:04:37 UTC\n"
    )
    (root / "var/lib/apt/lists/mirror_dists_bookworm_main_binary-arm64_Packages").write_text(
        "".join(
            f"Package: chrony\nArchitecture: arm64\nVersion: {v}\n"
            f"Filename: pool/main/c/chrony/chrony_{v}_arm64.deb\nSHA256: {h * 64}\n\n"
            for v, h in (("4.3-2+deb12u1", "a"), ("4.3-2+deb12u2", "b"))
        )
    )
    return root


def test_the_package_lock_records_each_deb_and_refuses_another_version(tmp_path: Path) -> None:
    root = _root_with_packages(tmp_path / "root", "4.3-2+deb12u1")
    lock = buildrecord.package_lock(root)
    assert lock.splitlines()[1:] == [
        "# index mirror_dists_bookworm_InRelease: Sat, 15 Nov 2025 09:04:37 UTC",
        f"chrony arm64 4.3-2+deb12u1 {'a' * 64} pool/main/c/chrony/chrony_4.3-2+deb12u1_arm64.deb",
    ]
    (tmp_path / "packages.lock").write_text(lock)
    newer = _root_with_packages(tmp_path / "newer", "4.3-2+deb12u2")
    run = subprocess.run(
        [
            sys.executable,
            str(REPO / "image/buildrecord.py"),
            "debs",
            str(newer),
            "--out",
            str(tmp_path / "out.lock"),
            "--lock",
            str(tmp_path / "packages.lock"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1
    assert "chrony:arm64: locked at 4.3-2+deb12u1" in run.stderr
    assert "this build has 4.3-2+deb12u2" in run.stderr
    assert not (tmp_path / "out.lock").exists()


def test_a_package_in_no_index_is_an_error_not_a_guess(tmp_path: Path) -> None:
    root = _root_with_packages(tmp_path / "root", "4.3-9")
    with pytest.raises(buildrecord.RecordError, match=r"chrony:arm64=4\.3-9: installed but in no"):
        buildrecord.package_lock(root)


def test_the_manifest_time_is_source_date_epoch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "root")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    first = build_manifest(root, ["opt/tablectl"], version="1.0.0").to_bytes()
    time.sleep(1.1)  # a second later, as the second build would be
    assert build_manifest(root, ["opt/tablectl"], version="1.0.0").to_bytes() == first
    assert (
        build_manifest(root, ["opt/tablectl"], version="1.0.0").built_utc == "2023-11-14T22:13:20Z"
    )
