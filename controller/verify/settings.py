"""Where the installed manifest, its signature and the public key are (verification.toml, written
by the image build), and the field HMAC over the installed program."""

from __future__ import annotations

import hashlib
import os
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.verify.check import read_bytes
from controller.verify.field import hmac_digests
from controller.verify.keys import check_signature, fingerprint, load_public_key
from controller.verify.manifest import ManifestError, parse_manifest

# Where the image build says where its manifest is (inside the venv, on the read-only root, and
# itself listed in the manifest). TABLECTL_VERIFICATION overrides it (tests, a lab's bench).
SETTINGS_ENV = "TABLECTL_VERIFICATION"


def default_settings_path() -> Path:
    return Path(sys.prefix) / "share" / "tablectl" / "verification.toml"


@dataclass(frozen=True)
class Settings:
    manifest: Path
    signature: Path
    public_key: Path
    root: Path = Path("/")
    source: Path | None = None

    def as_json(self) -> dict[str, Any]:
        return {k: str(v) for k, v in self.__dict__.items()}


def load_settings(path: Path | None = None) -> Settings | None:
    """The installed program's verification settings, or None when there are none (a
    development tree or simulation). A settings file that exists but is wrong raises."""
    if path is None:
        env = os.environ.get(SETTINGS_ENV)
        path = Path(env) if env else default_settings_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path}: cannot read ({exc})") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: not valid TOML: {exc}") from None
    known = {"manifest", "signature", "public_key", "root"}
    if unknown := sorted(set(doc) - known):
        raise ManifestError(f"{path}: unknown key {unknown[0]!r}; expected {sorted(known)}")
    values: dict[str, Path] = {}
    for key in sorted(known):
        value = doc.get(key)
        if value is None and key in ("signature", "root"):
            continue
        if not isinstance(value, str) or not value.startswith("/"):
            raise ManifestError(f"{path}: {key} must be an absolute path")
        values[key] = Path(value)
    return Settings(
        manifest=values["manifest"],
        signature=values.get("signature", Path(f"{values['manifest']}.sig")),
        public_key=values["public_key"],
        root=values.get("root", Path("/")),
        source=path,
    )


def hmac_installed(settings: Settings, seed: bytes) -> dict[str, Any]:
    """`tablectl verify --hmac-seed`: the digests, with what they were computed over."""
    data = read_bytes(settings.manifest, "manifest")
    signature = read_bytes(settings.signature, "signature")
    key = load_public_key(settings.public_key)
    result = hmac_digests(parse_manifest(data, str(settings.manifest)), settings.root, seed)
    result.update(
        seed_bytes=len(seed),
        manifest=str(settings.manifest),
        manifest_sha256=hashlib.sha256(data).hexdigest(),
        signature_ok=check_signature(data, signature, key),
        key_fingerprint=fingerprint(key),
    )
    return result
