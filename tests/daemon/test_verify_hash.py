"""sha256_file hashes a small file from one read of its size and a large one in chunks
(controller/verify/manifest.py): the same digest either way, at and around the bound."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from controller.verify import manifest


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 10_000])
def test_either_path_gives_the_files_sha256(tmp_path: Path, size: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifest, "WHOLE_READ_MAX", 4096)  # both paths at small sizes
    data = bytes(range(256)) * (size // 256 + 1)
    f = tmp_path / "f"
    f.write_bytes(data[:size])
    assert manifest.sha256_file(f) == hashlib.sha256(data[:size]).hexdigest()
    assert manifest.sha256_file(str(f)) == hashlib.sha256(data[:size]).hexdigest()
