"""What this program is: its version, and the identity of the installed software (the signed
manifest's SHA-256 when it verifies), for `tablectl --version` and the daemon's start line."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from pathlib import Path

from controller import __version__


def program_version() -> str:
    """The installed distribution's version; the source tree's when run from a checkout."""
    try:
        return _dist_version("tablectl")
    except PackageNotFoundError:
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
