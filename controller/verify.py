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

Why one module of ~650 lines: it is what a test laboratory reads to certify how the program
checks itself (the manifest's format, its signature, the check, the field HMAC) in one place,
and the image build and the A/B update run it as one tool (`python -m controller.verify`).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import os
import stat
import sys
import time
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from controller.errors import InputError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

# `cryptography` (7 MB of the daemon's memory once imported) is imported where a key is used:
# the daemon checks the signature in a child process (controller/extensions/verify.py), so the
# table's long-running process never loads it.

FORMAT = "tablectl-manifest/1"
CHUNK = 1 << 20
MAX_SEED_BYTES = 256
MAX_PROBLEMS_SHOWN = 50  # a wholesale mismatch is summarised past this many lines
# Where the image build says where its manifest is (inside the venv, on the read-only root, and
# itself listed in the manifest). TABLECTL_VERIFICATION overrides it (tests, a lab's bench).
SETTINGS_ENV = "TABLECTL_VERIFICATION"


def default_settings_path() -> Path:
    return Path(sys.prefix) / "share" / "tablectl" / "verification.toml"


class ManifestError(InputError):
    """A manifest, signature, key or seed that cannot be used; the message names it."""


# --- the manifest -------------------------------------------------------------------------------


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
    p = PurePosixPath(path)
    if not path or p.is_absolute() or ".." in p.parts or str(p) != path or path == ".":
        raise ManifestError(f"{what}: {path!r} is not a clean relative path")
    return path


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
    if paths != sorted(paths, key=_order) or len(set(paths)) != len(paths):
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


def _order(path: str) -> bytes:
    """Manifest order (and so HMAC order): by the path's UTF-8 bytes."""
    return path.encode("utf-8")


def _walk(root: Path, top: str) -> Iterable[str]:
    """Every regular file and symlink under root/top (or top itself), as relative paths. A
    symlinked directory is recorded as a link, never followed."""
    start = root / top
    st = os.lstat(start)
    if not stat.S_ISDIR(st.st_mode):
        yield top
        return
    for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
        base = Path(dirpath)
        for name in [*filenames, *(d for d in dirnames if (base / d).is_symlink())]:
            yield (base / name).relative_to(root).as_posix()


def sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
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
    roots = tuple(sorted({_rel(i.strip("/"), "include") for i in includes}, key=_order))
    excluded = tuple(sorted({_rel(e.strip("/"), "exclude") for e in exclude}, key=_order))
    paths: set[str] = set()
    for top in roots:
        try:
            paths.update(_walk(root, top))
        except FileNotFoundError:
            raise ManifestError(f"include {top}: not found under {root}") from None
    files = tuple(_entry(root, p) for p in sorted(paths - set(excluded), key=_order))
    return Manifest(
        product=product,
        version=version or _own_version(),
        built_utc=built_utc or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        roots=roots,
        excluded=excluded,
        files=files,
    )


def _own_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tablectl")
    except PackageNotFoundError:  # pragma: no cover - only outside an installed tree
        return "unknown"


# --- keys and signatures ------------------------------------------------------------------------


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


# --- verification -------------------------------------------------------------------------------


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

    def summary(self) -> str:
        if self.ok:
            return f"software verified: {self.files} files, version {self.version}"
        more = f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        return f"software verification failed: {self.problems[0]}{more}"


def check_files(manifest: Manifest, root: Path) -> list[str]:
    """Every difference between the manifest and the tree, one line each naming the file."""
    problems: list[str] = []
    for entry in manifest.files:
        full = root / entry.path
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
            found = sorted(set(_walk(root, top)) - listed, key=_order)
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
        data = _read(manifest_path, "manifest")
        report.manifest_sha256 = hashlib.sha256(data).hexdigest()
        signature = _read(signature_path, "signature")
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


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read the {what} ({exc.strerror})") from None


# --- GAT-style field verification ---------------------------------------------------------------


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


# --- where the installed manifest is ------------------------------------------------------------


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
    data = _read(settings.manifest, "manifest")
    signature = _read(settings.signature, "signature")
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


# --- command line (build machine and lab) -------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m controller.verify", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("keygen", help="a new ed25519 signing key pair")
    k.add_argument("--private", type=Path, required=True)
    k.add_argument("--public", type=Path, required=True)
    b = sub.add_parser("build", help="list the installed files with their SHA-256")
    b.add_argument("--root", type=Path, default=Path("/"))
    b.add_argument("--include", action="append", required=True, help="relative to --root")
    b.add_argument("--exclude", action="append", default=[], help="exact relative path")
    b.add_argument("--version", default="")
    b.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("sign", help="sign a manifest (writes MANIFEST.sig)")
    s.add_argument("manifest", type=Path)
    s.add_argument("--key", type=Path, required=True)
    s.add_argument("--out", type=Path)
    v = sub.add_parser("verify", help="check the signature and every file")
    v.add_argument("manifest", type=Path)
    v.add_argument("--signature", type=Path)
    v.add_argument("--public-key", type=Path, required=True)
    v.add_argument("--root", type=Path, default=Path("/"))
    v.add_argument("--json", action="store_true")
    h = sub.add_parser("hmac", help="HMAC-SHA1 and HMAC-SHA256 over the listed files")
    h.add_argument("manifest", type=Path)
    h.add_argument("--root", type=Path, default=Path("/"))
    h.add_argument("--seed", required=True, help="hex")
    args = ap.parse_args(argv)
    try:
        return _run(args)
    except ManifestError as exc:
        print(f"verify: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    if args.cmd == "keygen":
        try:
            print(f"key fingerprint {generate_keypair(args.private, args.public)}")
        except FileExistsError:
            raise ManifestError(f"{args.private}: exists; never overwrite a signing key") from None
        return 0
    if args.cmd == "build":
        manifest = build_manifest(
            args.root, args.include, exclude=args.exclude, version=args.version
        )
        args.out.write_bytes(manifest.to_bytes())
        print(f"{args.out}: {len(manifest.files)} files, {manifest.total_bytes} bytes")
        return 0
    if args.cmd == "sign":
        data = _read(args.manifest, "manifest")
        parse_manifest(data, str(args.manifest))  # never sign something we could not verify
        out = args.out or Path(f"{args.manifest}.sig")
        key = load_private_key(args.key)
        out.write_bytes(sign(data, key))
        print(f"{out}: signed with key {fingerprint(key.public_key())}")
        return 0
    if args.cmd == "verify":
        sig = args.signature or Path(f"{args.manifest}.sig")
        report = verify(args.manifest, sig, args.public_key, args.root)
        if args.json:
            print(json.dumps(report.as_json()))
        else:
            print(report.summary())
            for line in report.problems[:MAX_PROBLEMS_SHOWN]:
                print(f"  {line}")
        return 0 if report.ok else 1
    manifest = parse_manifest(_read(args.manifest, "manifest"), str(args.manifest))
    print(json.dumps(hmac_digests(manifest, args.root, parse_seed(args.seed))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
