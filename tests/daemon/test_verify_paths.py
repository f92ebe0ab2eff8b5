"""The manifest's path handling on strings (controller/verify/manifest.py, check.py: ~4,000 paths
at every daemon start under TCG) decides exactly as the pathlib version it replaced, kept here
as the oracle."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.verify import ManifestError
from controller.verify.manifest import _rel, walk


def clean_by_pathlib(path: str) -> bool:
    p = PurePosixPath(path)
    return not (not path or p.is_absolute() or ".." in p.parts or str(p) != path or path == ".")


def walk_by_pathlib(root: Path, top: str) -> Iterable[str]:
    start = root / top
    if not (start.is_dir() and not start.is_symlink()):
        yield top
        return
    for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
        base = Path(dirpath)
        for name in [*filenames, *(d for d in dirnames if (base / d).is_symlink())]:
            yield (base / name).relative_to(root).as_posix()


@given(st.text(alphabet="a./\\ é", max_size=9))
def test_a_clean_path_is_what_pathlib_leaves_as_it_is(path: str) -> None:
    try:
        _rel(path, "files[0]")
        accepted = True
    except ManifestError as exc:
        assert repr(path) in str(exc)
        accepted = False
    assert accepted == clean_by_pathlib(path), path


@pytest.mark.parametrize("path", ["", ".", "/a", "a/", "a//b", "./a", "a/./b", "a/..", "../a"])
def test_unclean_paths_are_refused(path: str) -> None:
    with pytest.raises(ManifestError, match="not a clean relative path"):
        _rel(path, "roots")


def test_the_walk_finds_what_the_pathlib_walk_found(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for rel in ("opt/t/bin/x", "opt/t/lib/a b/é.py", "opt/t/lib/deep/er/f", "opt/t/.hidden"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / "opt/t/empty").mkdir()
    os.symlink("lib/deep", root / "opt/t/dirlink")  # a symlinked directory: a link, not followed
    os.symlink("bin/x", root / "opt/t/filelink")
    os.symlink("/nowhere", root / "opt/t/dangling")
    for top in ("opt/t", "opt/t/bin/x", "opt"):
        assert sorted(walk(root, top)) == sorted(walk_by_pathlib(root, top)), top
    assert "opt/t/dirlink" in set(walk(root, "opt/t"))
    assert not [p for p in walk(root, "opt/t") if p.startswith("opt/t/dirlink/")]
