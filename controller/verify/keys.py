"""Ed25519 keys and the manifest's detached signature.

`cryptography` (7 MB of the daemon's memory once imported) is imported where a key is used:
the daemon checks the signature in a child process (controller/extensions/verify.py), so the
table's long-running process never loads it.
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from controller.verify.manifest import ManifestError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )


def generate_keypair(private_path: Path, public_path: Path) -> str:
    """A new ed25519 signing key (PKCS#8 PEM, mode 0600) and its public key; the fingerprint."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    public = key.public_key()
    public_path.write_bytes(
        public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return fingerprint(public)


def load_private_key(path: Path) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise ManifestError(f"{path}: not a usable private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ManifestError(f"{path}: not an ed25519 private key")
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = serialization.load_pem_public_key(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{path}: not a usable public key ({exc})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ManifestError(f"{path}: not an ed25519 public key")
    return key


def fingerprint(key: Ed25519PublicKey) -> str:
    """SHA-256 of the raw 32-byte public key: what an inspector compares with the lab's record."""
    from cryptography.hazmat.primitives import serialization

    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def sign(data: bytes, key: Ed25519PrivateKey) -> bytes:
    """The detached signature file's content: base64 of the 64-byte ed25519 signature."""
    return base64.b64encode(key.sign(data)) + b"\n"


def check_signature(data: bytes, signature: bytes, key: Ed25519PublicKey) -> bool:
    from cryptography.exceptions import InvalidSignature

    try:
        raw = base64.b64decode(signature.strip(), validate=True)
        key.verify(raw, data)
    except (InvalidSignature, ValueError):
        return False
    return True
