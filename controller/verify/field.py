"""GAT-style field verification: HMAC-SHA1 and HMAC-SHA256 keyed with an inspector's seed over
the listed files in manifest order."""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from controller.verify.manifest import Manifest, ManifestError

CHUNK = 1 << 20
MAX_SEED_BYTES = 256


def parse_seed(text: str) -> bytes:
    """The inspector's seed as hex (spaces and a 0x prefix allowed): 1-256 bytes."""
    cleaned = "".join(text.split())
    cleaned = cleaned[2:] if cleaned.lower().startswith("0x") else cleaned
    if not cleaned:
        raise ManifestError("seed: empty; give the seed as hex digits, e.g. 0123456789abcdef")
    if len(cleaned) % 2:
        raise ManifestError(f"seed: {len(cleaned)} hex digits; an even number is needed (bytes)")
    try:
        seed = bytes.fromhex(cleaned)
    except ValueError:
        bad = next(c for c in cleaned if c not in "0123456789abcdefABCDEF")
        raise ManifestError(f"seed: {bad!r} is not a hex digit") from None
    if len(seed) > MAX_SEED_BYTES:
        raise ManifestError(f"seed: {len(seed)} bytes; at most {MAX_SEED_BYTES}")
    return seed


def hmac_digests(
    manifest: Manifest,
    root: Path,
    seed: bytes,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """HMAC-SHA1 and HMAC-SHA256 keyed with `seed` over the manifest's files as they are on disk,
    in manifest order (by path, UTF-8 bytes). Each file adds, in this order:
        its path (UTF-8) | 0x00 | its length (8 bytes, big-endian) | its content
    where a symlink's content is its target (UTF-8). A missing or unreadable file is an error:
    the digests of an incomplete program would mean nothing."""
    macs = [hmac.new(seed, digestmod=hashlib.sha1), hmac.new(seed, digestmod=hashlib.sha256)]
    total = 0
    for index, entry in enumerate(manifest.files):
        full = root / entry.path
        try:
            if entry.link is not None:
                content = os.readlink(full).encode("utf-8")
                _feed(macs, entry.path, len(content), [content])
                total += len(content)
            else:
                with open(full, "rb") as fh:
                    size = os.fstat(fh.fileno()).st_size
                    _feed(macs, entry.path, size, iter(lambda fh=fh: fh.read(CHUNK), b""))
                total += size
        except OSError as exc:
            raise ManifestError(f"{entry.path}: cannot read ({exc.strerror})") from None
        if progress is not None:
            progress(index + 1, len(manifest.files))
    return {
        "hmac_sha1": macs[0].hexdigest(),
        "hmac_sha256": macs[1].hexdigest(),
        "files": len(manifest.files),
        "bytes": total,
        "version": manifest.version,
    }


def _feed(macs: list[hmac.HMAC], path: str, size: int, chunks: Iterable[bytes]) -> None:
    head = path.encode("utf-8") + b"\0" + size.to_bytes(8, "big")
    for mac in macs:
        mac.update(head)
    seen = 0
    for chunk in chunks:
        seen += len(chunk)
        for mac in macs:
            mac.update(chunk)
    if seen != size:  # changed while we read it: the digest would not match any file
        raise OSError(0, f"changed while being read ({seen} bytes, stat said {size})")
