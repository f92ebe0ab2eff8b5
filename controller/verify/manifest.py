"""The manifest: every installed file of the program with its size and SHA-256 (or a
symlink's target), in canonical bytes that are signed; built from a tree and parsed back
(docs/verification.md)."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared.errors import InputError

FORMAT = "tablectl-manifest/1"


class ManifestError(InputError):
    """A manifest, signature, key or seed that cannot be used; the message names it."""


@dataclass(frozen=True)
class FileEntry:
    """One installed file: a regular file (size, sha256) or a symlink (its target)."""

    path: str  # relative to the root, POSIX, no leading slash
    size: int = 0
    sha256: str | None = None
    link: str | None = None

    def as_json(self) -> dict[str, Any]:
        if self.link is not None:
            return {"path": self.path, "link": self.link}
        return {"path": self.path, "size": self.size, "sha256": self.sha256}


@dataclass(frozen=True)
class Manifest:
    product: str
    version: str
    built_utc: str
    roots: tuple[str, ...]  # walked at build time; a file under them not listed is an error
    excluded: tuple[str, ...]  # exact paths left out (the manifest and its signature)
    files: tuple[FileEntry, ...]

    def to_bytes(self) -> bytes:
        """Canonical bytes: these are what is signed and what a lab archives."""
        doc = {
            "format": FORMAT,
            "product": self.product,
            "version": self.version,
            "built_utc": self.built_utc,
            "hash": "sha256",
            "roots": list(self.roots),
            "excluded": list(self.excluded),
            "files": [f.as_json() for f in self.files],
        }
        return (json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


def _rel(path: str, what: str) -> str:
    """`path` if it is a clean relative POSIX path (one PurePosixPath leaves as it is, without
    `..`), checked on the string: the daemon parses ~4,000 of them at every start."""
    if not path or path[0] == "/" or any(part in _UNCLEAN for part in path.split("/")):
        raise ManifestError(f"{what}: {path!r} is not a clean relative path")
    return path


_UNCLEAN = frozenset({"", ".", ".."})  # `a//b`, `a/`, `./a`, `a/../b`


def parse_manifest(data: bytes, source: str = "manifest") -> Manifest:
    """Read and check a manifest; every problem is a ManifestError naming the field."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ManifestError(f"{source}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ManifestError(f"{source}: format must be {FORMAT!r}")
    if doc.get("hash") != "sha256":
        raise ManifestError(f"{source}: hash must be 'sha256'")
    files: list[FileEntry] = []
    for i, raw in enumerate(doc.get("files") or []):
        where = f"{source}: files[{i}]"
        if not isinstance(raw, dict):
            raise ManifestError(f"{where}: not an object")
        path = _rel(str(raw.get("path", "")), where)
        if "link" in raw:
            if not isinstance(raw["link"], str) or not raw["link"]:
                raise ManifestError(f"{where} ({path}): link must be a non-empty string")
            files.append(FileEntry(path, link=raw["link"]))
            continue
        size, digest = raw.get("size"), raw.get("sha256")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ManifestError(f"{where} ({path}): size must be a non-negative integer")
        if not isinstance(digest, str) or len(digest) != 64 or digest.strip("0123456789abcdef"):
            raise ManifestError(f"{where} ({path}): sha256 must be 64 lowercase hex digits")
        files.append(FileEntry(path, size, digest))
    paths = [f.path for f in files]
    if paths != sorted(paths, key=manifest_order) or len(set(paths)) != len(paths):
        raise ManifestError(f"{source}: files must be unique and sorted by path")
    for key in ("product", "version", "built_utc"):
        if not isinstance(doc.get(key), str):
            raise ManifestError(f"{source}: {key} must be a string")
    return Manifest(
        product=doc["product"],
        version=doc["version"],
        built_utc=doc["built_utc"],
        roots=tuple(_rel(str(r), f"{source}: roots") for r in doc.get("roots") or []),
        excluded=tuple(_rel(str(r), f"{source}: excluded") for r in doc.get("excluded") or []),
        files=tuple(files),
    )


def manifest_order(path: str) -> bytes:
    """Manifest order (and so HMAC order): by the path's UTF-8 bytes."""
    return path.encode("utf-8")


def walk(root: Path, top: str) -> Iterable[str]:
    """Every regular file and symlink under root/top (or top itself), as relative paths. A
    symlinked directory is recorded as a link, never followed."""
    start = root / top
    st = os.lstat(start)
    if not stat.S_ISDIR(st.st_mode):
        yield top
        return
    for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
        rel = Path(dirpath).relative_to(root).as_posix()  # once a directory, not once a file
        for name in [*filenames, *(d for d in dirnames if os.path.islink(f"{dirpath}/{d}"))]:
            yield f"{rel}/{name}"


# A file up to this size is hashed from one read of exactly its size (FileIO.readall sizes its
# buffer from fstat); hashlib.file_digest reads through a fresh 256 KiB buffer per file, and the
# check hashes ~4,000 files, most a few KB, at every daemon start (image/vm/README.md).
WHOLE_READ_MAX = 8 << 20


def sha256_file(path: str | Path) -> str:
    with open(path, "rb", buffering=0) as fh:
        if os.fstat(fh.fileno()).st_size <= WHOLE_READ_MAX:
            return hashlib.sha256(fh.readall()).hexdigest()
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _entry(root: Path, rel: str) -> FileEntry:
    full = root / rel
    st = os.lstat(full)
    if stat.S_ISLNK(st.st_mode):
        return FileEntry(rel, link=os.readlink(full))
    if not stat.S_ISREG(st.st_mode):
        raise ManifestError(f"{rel}: not a regular file or symlink (mode {st.st_mode:o})")
    return FileEntry(rel, st.st_size, sha256_file(full))


def build_manifest(
    root: Path,
    includes: Sequence[str],
    *,
    exclude: Sequence[str] = (),
    product: str = "tablectl",
    version: str = "",
    built_utc: str | None = None,
) -> Manifest:
    """List every file under root/<include> (directories walked, symlinks recorded as links)."""
    roots = tuple(sorted({_rel(i.strip("/"), "include") for i in includes}, key=manifest_order))
    excluded = tuple(sorted({_rel(e.strip("/"), "exclude") for e in exclude}, key=manifest_order))
    paths: set[str] = set()
    for top in roots:
        try:
            paths.update(walk(root, top))
        except FileNotFoundError:
            raise ManifestError(f"include {top}: not found under {root}") from None
    files = tuple(_entry(root, p) for p in sorted(paths - set(excluded), key=manifest_order))
    return Manifest(
        product=product,
        version=version or _own_version(),
        built_utc=built_utc or _build_time().strftime("%Y-%m-%dT%H:%M:%SZ"),
        roots=roots,
        excluded=excluded,
        files=files,
    )


def _build_time() -> datetime:
    """SOURCE_DATE_EPOCH when set (a reproducible build: the same manifest bytes from the same
    commit, docs/verification.md), else now."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not epoch:
        return datetime.now(UTC)
    try:
        return datetime.fromtimestamp(int(epoch), UTC)
    except (ValueError, OverflowError, OSError):
        raise ManifestError(f"SOURCE_DATE_EPOCH={epoch!r}: not a time in seconds") from None


def _own_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tablectl")
    except PackageNotFoundError:  # pragma: no cover - only outside an installed tree
        return "unknown"
