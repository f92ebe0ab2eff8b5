"""The image's build record (issue 32): what went into a table image, so a lab can rebuild it.

Host tool, standard library only (run by build.sh with the checkout's Python):

    python image/buildrecord.py debs ROOT --out packages.lock [--lock LOCK]
        every Debian package installed in ROOT with its version and the sha256 of its .deb
        (from the mirror's index apt used, still in ROOT/var/lib/apt/lists during the build);
        with --lock, refuse (exit 1, naming each package) a build whose packages differ.
    python image/buildrecord.py info --commit C --epoch E --packages-lock P --file NAME=PATH...
            --out build.json
        the record installed in the image (signed into its manifest; `tablectl --version`).
    python image/buildrecord.py artifacts DIR --info build.json NAME... --out build-record.json
        the record beside the image: build.json's fields plus the sha256 of each artifact.
    python image/buildrecord.py fetch packages.lock DIR --mirror URL
        download exactly the recorded .debs from URL (e.g. a snapshot.debian.org archive) into
        DIR, each checked against its recorded sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

LOCK_HEADER = "# package architecture version sha256 filename (image/buildrecord.py debs)\n"


class RecordError(Exception):
    """A build input is missing, malformed or differs from its lock."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _stanzas(text: str) -> Iterator[dict[str, str]]:
    """deb822 paragraphs (dpkg's status file, apt's Packages indexes) as dicts."""
    fields: dict[str, str] = {}
    last = ""
    for line in text.splitlines():
        if not line.strip():
            if fields:
                yield fields
            fields, last = {}, ""
        elif line[0] in " \t":
            if last:
                fields[last] += "\n" + line
        elif ":" in line:
            last, value = line.split(":", 1)
            fields[last] = value.strip()
    if fields:
        yield fields


def installed_packages(root: Path) -> list[tuple[str, str, str]]:
    """(package, architecture, version) of every package dpkg has installed in root, sorted."""
    status = root / "var/lib/dpkg/status"
    try:
        text = status.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecordError(f"{status}: not found (not a Debian root?)") from None
    out = [
        (s["Package"], s["Architecture"], s["Version"])
        for s in _stanzas(text)
        if s.get("Status", "").endswith(" installed")
    ]
    return sorted(out)


def index_hashes(root: Path) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(package, architecture, version) -> (sha256 of the .deb, pool filename), from the
    Packages indexes apt downloaded into root."""
    lists = root / "var/lib/apt/lists"
    found: dict[tuple[str, str, str], tuple[str, str]] = {}
    for index in sorted(lists.glob("*_Packages")):
        for s in _stanzas(index.read_text(encoding="utf-8")):
            if {"Package", "Architecture", "Version", "SHA256", "Filename"} <= s.keys():
                found[(s["Package"], s["Architecture"], s["Version"])] = (
                    s["SHA256"],
                    s["Filename"],
                )
    if not found:
        raise RecordError(f"{lists}: no Packages index (run before apt's lists are removed)")
    return found


def index_dates(root: Path) -> list[str]:
    """The Date of each Release file apt used: the snapshot.debian.org archive at (or just
    after) that time serves the same indexes and .debs (docs/verification.md)."""
    dates = []
    for release in sorted((root / "var/lib/apt/lists").glob("*Release")):
        for s in _stanzas(release.read_text(encoding="utf-8", errors="replace")):
            if "Date" in s:
                dates.append(f"{release.name}: {s['Date']}")
                break
    return dates


def package_lock(root: Path) -> str:
    """The lock text: one line per installed package, with its .deb's sha256 and pool path,
    after a comment naming the date of each index it came from."""
    hashes = index_hashes(root)
    lines = [f"# index {d}\n" for d in index_dates(root)]
    for pkg in installed_packages(root):
        if pkg not in hashes:
            raise RecordError(f"{pkg[0]}:{pkg[1]}={pkg[2]}: installed but in no Packages index")
        lines.append(" ".join((*pkg, *hashes[pkg])) + "\n")
    return LOCK_HEADER + "".join(lines)


def parse_lock(text: str, source: str) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(package, architecture) -> (version, sha256, filename)."""
    out: dict[tuple[str, str], tuple[str, str, str]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 5 or len(parts[3]) != 64:
            raise RecordError(f"{source}:{n}: expected 'package arch version sha256 filename'")
        out[(parts[0], parts[1])] = (parts[2], parts[3], parts[4])
    return out


def lock_differences(wanted: str, got: str) -> list[str]:
    """Every package whose version or .deb differs between two locks, one line each."""
    a, b = parse_lock(wanted, "lock"), parse_lock(got, "this build")
    problems = []
    for key in sorted(a.keys() | b.keys()):
        name = f"{key[0]}:{key[1]}"
        if key not in b:
            problems.append(f"{name}: locked at {a[key][0]}, not installed by this build")
        elif key not in a:
            problems.append(f"{name}: {b[key][0]} installed, not in the lock")
        elif a[key][:2] != b[key][:2]:
            problems.append(
                f"{name}: locked at {a[key][0]} ({a[key][1][:12]}), "
                f"this build has {b[key][0]} ({b[key][1][:12]})"
            )
    return problems


def build_info(commit: str, epoch: int, packages_lock: Path, files: Sequence[str]) -> dict:
    """The record installed in the image. Its id is the sha256 of its bytes (record_id)."""
    inputs = {}
    for spec in files:
        name, sep, path = spec.partition("=")
        if not sep:
            raise RecordError(f"--file {spec}: expected NAME=PATH")
        inputs[name] = sha256_file(Path(path))
    return {
        "format": 1,
        "commit": commit,
        "source_date_epoch": epoch,
        "inputs_sha256": dict(sorted(inputs.items())),
        "packages_lock_sha256": sha256_file(packages_lock),
        "packages": [
            f"{p}:{a}={v} {h}"
            for (p, a), (v, h, _f) in sorted(
                parse_lock(packages_lock.read_text(), str(packages_lock)).items()
            )
        ],
    }


def dumps(doc: dict) -> bytes:
    """One canonical JSON encoding, so the same record is the same bytes."""
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()


def record_id(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(lock: Path, dest: Path, mirror: str) -> int:
    dest.mkdir(parents=True, exist_ok=True)
    bad = 0
    for (pkg, arch), (version, sha, filename) in sorted(
        parse_lock(lock.read_text(), str(lock)).items()
    ):
        out = dest / Path(filename).name
        if not (out.exists() and sha256_file(out) == sha):
            with urllib.request.urlopen(f"{mirror.rstrip('/')}/{filename}") as r:
                out.write_bytes(r.read())
        if sha256_file(out) != sha:
            print(
                f"fetch: {pkg}:{arch}={version}: {out.name} sha256 differs from the lock",
                file=sys.stderr,
            )
            bad += 1
    return 1 if bad else 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="image/buildrecord.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("debs")
    d.add_argument("root", type=Path)
    d.add_argument("--out", type=Path, required=True)
    d.add_argument("--lock", type=Path)
    i = sub.add_parser("info")
    i.add_argument("--commit", required=True)
    i.add_argument("--epoch", type=int, required=True)
    i.add_argument("--packages-lock", type=Path, required=True)
    i.add_argument("--file", action="append", default=[], help="NAME=PATH: an input's sha256")
    i.add_argument("--out", type=Path, required=True)
    a = sub.add_parser("artifacts")
    a.add_argument("dir", type=Path)
    a.add_argument("names", nargs="+")
    a.add_argument("--info", type=Path, required=True)
    a.add_argument("--out", type=Path, required=True)
    f = sub.add_parser("fetch")
    f.add_argument("lock", type=Path)
    f.add_argument("dest", type=Path)
    f.add_argument("--mirror", required=True)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "debs":
            text = package_lock(args.root)
            if args.lock:
                problems = lock_differences(args.lock.read_text(), text)
                if problems:
                    print(f"buildrecord: the packages differ from {args.lock}:", file=sys.stderr)
                    for p in problems:
                        print(f"  {p}", file=sys.stderr)
                    return 1
            args.out.write_text(text)
        elif args.cmd == "info":
            doc = build_info(args.commit, args.epoch, args.packages_lock, args.file)
            args.out.write_bytes(dumps(doc))
        elif args.cmd == "artifacts":
            info = args.info.read_bytes()
            doc = json.loads(info)
            doc["build_id"] = record_id(info)
            doc["artifacts_sha256"] = {n: sha256_file(args.dir / n) for n in sorted(args.names)}
            args.out.write_bytes(dumps(doc))
        else:
            return fetch(args.lock, args.dest, args.mirror)
    except (RecordError, OSError, ValueError) as exc:
        print(f"buildrecord: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
