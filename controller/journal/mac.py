"""The journal's key and MACs (docs/journal.md, "Keyed chain" and "Threat model").

The SHA-256 chain shows that records were changed unless whoever changed them recomputed it;
anyone can. The MACs need the table's key, which lives outside the data partition: on the image
a root-only file (`/etc/tablectl/journal-key`) that systemd hands to the daemon through
`LoadCredential=journal-key:...` (read at `$CREDENTIALS_DIRECTORY/journal-key`). Without one
(simulation, development) a key is generated in the state directory, next to the journal it
protects, which stops nobody who can write the journal: the daemon logs that loudly.

Every MAC is HMAC-SHA256 (truncated to 16 bytes) over the canonical JSON of `[domain, table_id,
game, ...fields]`, so a MAC of one kind, table or game is never valid as another.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.journal.errors import JournalError
from shared.errors import TablectlError

CREDENTIAL_NAME = "journal-key"  # LoadCredential=journal-key:/etc/tablectl/journal-key
SYSTEM_KEY_FILE = Path("/etc/tablectl/journal-key")
DEV_KEY_FILE = "journal.key"  # in the state directory: simulation and development only
KEY_HEX_CHARS = 64  # 32 random bytes, hex (`openssl rand -hex 32`)
# HMAC-SHA256 truncated to 128 bits (as HMAC-SHA-256-128, RFC 4868; NIST SP 800-107 allows it):
# forging one still takes ~2^128 tries, and each commit row is 16 bytes smaller than with the
# full 32 (measured: bytes written per round, docs/journal.md "Numbers").
MAC_BYTES = 16
MAX_KEY_FILE_BYTES = 4096


class KeyFileError(TablectlError):
    """No usable key: missing, unreadable or malformed. `denied`: it exists but this user may
    not read it (a technician without root: the MACs are then not checked, which is no error)."""

    def __init__(self, text: str, denied: bool = False) -> None:
        super().__init__(text)
        self.denied = denied


@dataclass(frozen=True)
class JournalKey:
    secret: bytes
    source: str  # where it came from, for logs and reports
    dev: bool  # a key kept beside the journal (no protection against whoever can write it)

    @property
    def key_id(self) -> str:
        """A public name for the key (which key MAC'd a journal), not the key."""
        return hmac.new(self.secret, b"tablectl-journal-key-id", hashlib.sha256).hexdigest()[:16]

    def mac(self, domain: str, table_id: str, game: str, *fields: Any) -> bytes:
        """HMAC over `json.dumps([domain, table_id, game, *fields], separators=(",", ":"))`;
        the keyed state and the constant head are computed once (verification MACs every
        commit of the journal at each start)."""
        head = _HEADS.get((self.secret, domain, table_id, game))
        if head is None:
            h = hmac.new(self.secret, digestmod=hashlib.sha256)
            h.update(_encode([domain, table_id, game])[:-1].encode("ascii"))
            head = _HEADS.setdefault((self.secret, domain, table_id, game), h)
        h = head.copy()
        h.update(("," + _encode(list(fields))[1:] if fields else "]").encode("ascii"))
        return h.digest()[:MAC_BYTES]

    def check(self, mac: Any, domain: str, table_id: str, game: str, *fields: Any) -> bool:
        return isinstance(mac, bytes) and hmac.compare_digest(
            mac, self.mac(domain, table_id, game, *fields))


_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True).encode  # built once
_HEADS: dict[tuple[bytes, str, str, str], hmac.HMAC] = {}  # a few per process (kinds x tables)


def read_key_file(path: Path, *, dev: bool = False) -> JournalKey:
    """A key file: 64 hex characters (surrounding whitespace ignored). KeyFileError otherwise."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        raise KeyFileError(f"journal key {path} unreadable: {exc.strerror or exc}",
                           denied=isinstance(exc, PermissionError)) from exc
    text = raw[:MAX_KEY_FILE_BYTES].strip()
    try:
        secret = bytes.fromhex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        secret = b""
    if len(raw) > MAX_KEY_FILE_BYTES or len(text) != KEY_HEX_CHARS or len(secret) != 32:
        raise KeyFileError(f"journal key {path} is not {KEY_HEX_CHARS} hex characters")
    return JournalKey(secret, str(path), dev)


def find_key(state_dir: Path, *, key_file: Path | None = None, create: bool = False
             ) -> JournalKey | None:
    """The table's key: `key_file` if given; else the systemd credential when the daemon runs
    under systemd (it must then be there); else the system key file; else the development key in
    the state directory, made when `create` (None when there is none and not `create`).

    The system key comes before the state directory's, so a key planted beside the journal is
    never preferred over the real one."""
    if key_file is not None:
        return read_key_file(key_file)
    creds = os.environ.get("CREDENTIALS_DIRECTORY")
    if creds:
        return read_key_file(Path(creds) / CREDENTIAL_NAME)
    if SYSTEM_KEY_FILE.exists():
        return read_key_file(SYSTEM_KEY_FILE)
    dev = state_dir / DEV_KEY_FILE
    if dev.exists() or not create:
        return read_key_file(dev, dev=True) if dev.exists() else None
    return _make_dev_key(dev)


def make_key_file(path: Path, *, dev: bool = False) -> JournalKey:
    """A new key, 0600, written once: O_EXCL never replaces one (a lost key means a journal
    that cannot be reopened). A symlink is followed to where it points (on the image
    /etc/tablectl/journal-key points at the data partition), since O_EXCL would refuse it."""
    path = Path(os.path.realpath(path))
    secret = os.urandom(32)  # getrandom(2): the kernel's CSPRNG, as `secrets` uses
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secret.hex().encode("ascii") + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(path.parent)
    return JournalKey(secret, str(path), dev)


def _make_dev_key(path: Path) -> JournalKey:
    return make_key_file(path, dev=True)


def fsync_dir(path: Path) -> None:
    """A new or renamed file's directory entry made durable (the journal uses it too)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def find_journal_key(path: Path, key_file: Path | None, *, create: bool, key_id: str | None
                     ) -> JournalKey:
    """The key of the journal at `path` (`find_key`); JournalError naming where it looked."""
    try:
        key = find_key(path.parent, key_file=key_file, create=create)
    except KeyFileError as exc:
        raise JournalError(f"journal {path}: {exc}") from exc
    if key is None:
        raise JournalError(
            f"journal {path}: no journal key (looked for $CREDENTIALS_DIRECTORY/journal-key, "
            f"/etc/tablectl/journal-key and {path.parent}/journal.key); its MACs were made with "
            f"key id {key_id}")
    return key
