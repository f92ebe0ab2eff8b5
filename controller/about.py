"""What this program is: its version, the identity of the installed software (the signed
manifest's SHA-256 when it verifies) and of the image build that installed it (the build
record's id), for `tablectl --version` and the daemon's start line."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from controller import __version__


def program_version() -> str:
    """The installed distribution's version; the source tree's when run from a checkout.

    What `importlib.metadata.version("tablectl")` answers (the first `tablectl-*.dist-info` on
    sys.path), read directly: importlib.metadata brings email, zipfile, csv and ~40 modules,
    ~1 MB of every daemon and CLI for one line (issue 31)."""
    for entry in sys.path:
        try:
            found = sorted(Path(entry or ".").glob("tablectl-*.dist-info/METADATA"))
        except OSError:
            continue
        for meta in found:
            with meta.open(encoding="utf-8") as f:
                for line in f:
                    if line.startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                    if not line.strip():  # the headers end at the first blank line
                        break
    return __version__


def software_identity(settings_path: Path | None = None) -> tuple[bool, str]:
    """(verified, text): the manifest's SHA-256 when the installed program verifies against
    its signed manifest, else "unverified: why". Checks every file (seconds on a Pi)."""
    from controller.verify import ManifestError, load_settings, verify

    try:
        settings = load_settings(settings_path)
    except ManifestError as exc:
        return False, f"unverified: settings unusable: {exc}"
    if settings is None:
        return False, "unverified: no manifest installed (a development tree)"
    report = verify(settings.manifest, settings.signature, settings.public_key, settings.root)
    if not report.ok:
        return False, f"unverified: {report.summary()}"
    return True, f"manifest sha256 {report.manifest_sha256}"


BUILD_RECORD = "build.json"  # beside the manifest, listed in it (image/customize.sh)


def build_identity(settings_path: Path | None = None) -> str:
    """The image build's record (image/buildrecord.py): "build <id> of commit <commit>", where
    the id is the SHA-256 of the record as installed (the `build_id` of the build-record.json
    published beside the image), or why there is none. The record is one of the manifest's
    files, so software_identity's verification covers it."""
    from controller.verify import ManifestError, load_settings

    try:
        settings = load_settings(settings_path)
    except ManifestError:
        return "no build record: verification settings unusable"
    if settings is None:
        return "no build record (a development tree)"
    path = settings.manifest.parent / BUILD_RECORD
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return "no build record installed"
    except OSError as exc:
        return f"build record unreadable: {exc.strerror}"
    try:
        commit = str(json.loads(data)["commit"])
    except (ValueError, KeyError, TypeError):
        return f"build record {path} malformed"
    return f"build {hashlib.sha256(data).hexdigest()[:16]} of commit {commit[:12]}"
