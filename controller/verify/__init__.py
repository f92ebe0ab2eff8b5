"""Software verification: a signed manifest of the installed program, checked at start and on
demand (docs/verification.md).

At build time the image recipe lists every installed file of the program (the venv under
/opt/tablectl, the systemd units, sysusers/tmpfiles entries, udev rules) with its size and SHA-256
in a manifest and signs the manifest's exact bytes with ed25519 (`cryptography`). At start the
daemon checks the signature, every file's hash, and that no file was added under the manifest's
roots; any difference takes the table out of service, naming the files. `hmac_digests` gives the
GAT-style field check: HMAC-SHA1 and HMAC-SHA256, keyed with an inspector's seed, over the
listed files in manifest order.

    python -m controller.verify keygen --private KEY --public KEY.pub
    python -m controller.verify build --root ROOT --include opt/tablectl ... --out manifest.json
    python -m controller.verify sign manifest.json --key KEY        (writes manifest.json.sig)
    python -m controller.verify verify manifest.json --public-key KEY.pub --root ROOT
    python -m controller.verify hmac manifest.json --root ROOT --seed HEX

A test laboratory reads it in this order, one concern a module:

    manifest.py   the manifest's format, building it from a tree, parsing it back
    keys.py       ed25519 keys and the detached signature
    check.py      the check (signature, every file, nothing added) and its Report
    field.py      the GAT-style field HMAC
    settings.py   where the installed manifest is (verification.toml)
    __main__.py   the command line the image build and the A/B update run
"""

from __future__ import annotations

from controller.verify.check import MAX_PROBLEMS_SHOWN, Report, check_files, verify
from controller.verify.field import CHUNK, MAX_SEED_BYTES, hmac_digests, parse_seed
from controller.verify.keys import (
    check_signature,
    fingerprint,
    generate_keypair,
    load_private_key,
    load_public_key,
    sign,
)
from controller.verify.manifest import (
    FORMAT,
    FileEntry,
    Manifest,
    ManifestError,
    build_manifest,
    parse_manifest,
    sha256_file,
)
from controller.verify.settings import (
    SETTINGS_ENV,
    Settings,
    default_settings_path,
    hmac_installed,
    load_settings,
)

__all__ = [
    "CHUNK", "FORMAT", "MAX_PROBLEMS_SHOWN", "MAX_SEED_BYTES", "SETTINGS_ENV", "FileEntry",
    "Manifest", "ManifestError", "Report", "Settings", "build_manifest", "check_files",
    "check_signature", "default_settings_path", "fingerprint", "generate_keypair",
    "hmac_digests", "hmac_installed", "load_private_key", "load_public_key", "load_settings",
    "main", "parse_manifest", "parse_seed", "sha256_file", "sign", "verify",
]


def main(argv: list[str] | None = None) -> int:
    """The command line (`python -m controller.verify`)."""
    from controller.verify.__main__ import main as run

    return run(argv)
