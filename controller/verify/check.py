"""The check at start and on demand: the signature first, then every listed file, then no file
added under the manifest's roots. A bad tree or manifest is reported, never raised."""

from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.verify.keys import check_signature, fingerprint, load_public_key
from controller.verify.manifest import (
    Manifest,
    ManifestError,
    manifest_order,
    parse_manifest,
    sha256_file,
    walk,
)

MAX_PROBLEMS_SHOWN = 50  # a wholesale mismatch is summarised past this many lines


_STR_OR_NONE = (str, type(None))
# Report's fields and the JSON types each may have (Report.from_json).
_REPORT_TYPES: dict[str, Any] = {
    "ok": bool, "problems": list, "files": int, "bytes": int, "version": _STR_OR_NONE,
    "built_utc": _STR_OR_NONE, "manifest_sha256": _STR_OR_NONE, "key_fingerprint": _STR_OR_NONE,
    "elapsed_s": (int, float),
}


@dataclass
class Report:
    ok: bool
    problems: list[str] = field(default_factory=list)
    files: int = 0
    bytes: int = 0
    version: str | None = None
    built_utc: str | None = None
    manifest_sha256: str | None = None
    key_fingerprint: str | None = None
    elapsed_s: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "problems": self.problems,
            "files": self.files,
            "bytes": self.bytes,
            "version": self.version,
            "built_utc": self.built_utc,
            "manifest_sha256": self.manifest_sha256,
            "key_fingerprint": self.key_fingerprint,
            "elapsed_s": self.elapsed_s,
        }

    @classmethod
    def from_json(cls, doc: Any) -> Report:
        """`as_json` read back (the daemon's verification child prints it); ManifestError for
        anything else."""
        if not isinstance(doc, dict) or set(doc) != set(_REPORT_TYPES):
            raise ManifestError(f"not a verification report: {str(doc)[:200]!r}")
        for name, types in _REPORT_TYPES.items():
            value = doc[name]
            if not isinstance(value, types) or (isinstance(value, bool) and types is not bool):
                raise ManifestError(f"verification report: {name} is {value!r}")
        if not all(isinstance(p, str) for p in doc["problems"]):
            raise ManifestError("verification report: a problem that is not a string")
        if doc["ok"] == bool(doc["problems"]):
            raise ManifestError("verification report: ok contradicts its problems")
        return cls(**doc)

    def summary(self) -> str:
        if self.ok:
            return f"software verified: {self.files} files, version {self.version}"
        more = f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        return f"software verification failed: {self.problems[0]}{more}"


def check_files(manifest: Manifest, root: Path) -> list[str]:
    """Every difference between the manifest and the tree, one line each naming the file."""
    problems: list[str] = []
    base = os.path.join(root, "")  # strings, not Paths: ~4,000 files at every daemon start
    for entry in manifest.files:
        full = base + entry.path
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            problems.append(f"{entry.path}: missing")
            continue
        except OSError as exc:
            problems.append(f"{entry.path}: cannot read ({exc.strerror})")
            continue
        if entry.link is not None:
            if not stat.S_ISLNK(st.st_mode):
                problems.append(f"{entry.path}: should be a symlink to {entry.link}")
            elif (target := os.readlink(full)) != entry.link:
                problems.append(f"{entry.path}: symlink to {target}, expected {entry.link}")
            continue
        if not stat.S_ISREG(st.st_mode):
            problems.append(f"{entry.path}: not a regular file")
            continue
        try:
            digest = sha256_file(full)
        except OSError as exc:
            problems.append(f"{entry.path}: cannot read ({exc.strerror})")
            continue
        if digest != entry.sha256:
            problems.append(
                f"{entry.path}: SHA-256 mismatch (expected {entry.sha256[:16]}...,"  # type: ignore[index]
                f" found {digest[:16]}..., size {st.st_size} vs {entry.size})"
            )
    listed = {f.path for f in manifest.files} | set(manifest.excluded)
    for top in manifest.roots:
        try:
            found = sorted(set(walk(root, top)) - listed, key=manifest_order)
        except FileNotFoundError:
            continue  # its files are reported missing above
        problems += [f"{path}: not in the manifest (added file)" for path in found]
    return problems


def verify(
    manifest_path: Path, signature_path: Path, public_key_path: Path, root: Path = Path("/")
) -> Report:
    """Signature first, then every file. Never raises for a bad tree or manifest: the report
    says what is wrong (the daemon must not crash on what it finds on disk)."""
    started = time.monotonic()
    report = Report(ok=False)

    def done() -> Report:
        report.ok = not report.problems
        report.elapsed_s = round(time.monotonic() - started, 3)
        return report

    try:
        key = load_public_key(public_key_path)
        report.key_fingerprint = fingerprint(key)
        data = read_bytes(manifest_path, "manifest")
        report.manifest_sha256 = hashlib.sha256(data).hexdigest()
        signature = read_bytes(signature_path, "signature")
    except ManifestError as exc:
        report.problems.append(str(exc))
        return done()
    if not check_signature(data, signature, key):
        report.problems.append(
            f"{signature_path}: the manifest's signature does not verify with key"
            f" {report.key_fingerprint[:16]}..."
        )
        return done()
    try:
        manifest = parse_manifest(data, str(manifest_path))
    except ManifestError as exc:
        report.problems.append(str(exc))
        return done()
    report.version, report.built_utc = manifest.version, manifest.built_utc
    report.files, report.bytes = len(manifest.files), manifest.total_bytes
    report.problems += check_files(manifest, root)
    return done()


def read_bytes(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read the {what} ({exc.strerror})") from None
