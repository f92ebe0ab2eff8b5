"""Compare two builds of the table image (`./dev image-repro`, issue 32).

    python image/repro.py compare A B [--time-a S] [--time-b S] [ARTIFACT...]

Prints every artifact's sha256 side by side (A's, B's) with the two builds' times; exit 0 when
every artifact is byte-identical, 1 otherwise. For an artifact that differs it names what
differs inside it: the members of a tar (content, mode, owner, mtime, link), the files of a
directory. Without ARTIFACT names, every file and directory at the top of A and B is one.
Standard library only: the lab needs nothing but Python to check.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import stat
import sys
import tarfile
from collections.abc import Sequence
from pathlib import Path

SHOWN = 40  # differences listed per artifact; the count says how many more


def sha256_path(path: Path) -> str:
    """A file's sha256; a directory's is the sha256 of its canonical listing (tree_listing)."""
    h = hashlib.sha256()
    if path.is_dir():
        for name, meta in sorted(tree_listing(path).items()):
            h.update(f"{name}\0{meta}\n".encode())
        return h.hexdigest()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tree_listing(root: Path) -> dict[str, str]:
    """Every entry under root: relative path -> type, mode, owner, mtime and content digest."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in [*dirnames, *sorted(filenames)]:
            full = Path(dirpath, name)
            st = full.lstat()
            meta = f"mode {st.st_mode:o} owner {st.st_uid}:{st.st_gid} mtime {int(st.st_mtime)}"
            if stat.S_ISLNK(st.st_mode):
                meta += f" link {os.readlink(full)}"
            elif stat.S_ISREG(st.st_mode):
                meta += f" sha256 {sha256_path(full)}"
            out[str(full.relative_to(root))] = meta
    return out


def tar_listing(path: Path) -> dict[str, str]:
    """Every member of a tar: name -> type, mode, owner, mtime, link and content digest."""
    out: dict[str, str] = {}
    with tarfile.open(path) as tar:
        for m in tar:
            meta = f"type {m.type!r} mode {m.mode:o} owner {m.uid}:{m.gid} mtime {int(m.mtime)}"
            if m.issym() or m.islnk():
                meta += f" link {m.linkname}"
            elif m.isfile():
                f = tar.extractfile(m)
                meta += f" sha256 {hashlib.sha256(f.read() if f else b'').hexdigest()}"
            out[m.name] = meta
    return out


def _diff_listings(a: dict[str, str], b: dict[str, str]) -> list[str]:
    lines = []
    for name in sorted(a.keys() | b.keys()):
        if name not in b:
            lines.append(f"{name}: only in A")
        elif name not in a:
            lines.append(f"{name}: only in B")
        elif a[name] != b[name]:
            fields_a, fields_b = a[name].split(" "), b[name].split(" ")
            what = sorted(
                {
                    fields_a[i]
                    for i in range(0, min(len(fields_a), len(fields_b)), 2)
                    if fields_a[i : i + 2] != fields_b[i : i + 2]
                }
            )
            lines.append(f"{name}: {', '.join(what) or 'differs'}: A {a[name]} | B {b[name]}")
    return lines


def inside_differences(a: Path, b: Path) -> list[str]:
    """What differs inside two versions of one artifact, as far as its kind lets us say."""
    if a.is_dir() and b.is_dir():
        return _diff_listings(tree_listing(a), tree_listing(b))
    # By name: tarfile.is_tarfile takes an ext4 image for a tar (measured on root.img).
    if a.name.endswith(".tar") and tarfile.is_tarfile(a) and tarfile.is_tarfile(b):
        lines = _diff_listings(tar_listing(a), tar_listing(b))
        return lines or ["the members are the same: their order or the tar headers differ"]
    return [f"{a.stat().st_size} and {b.stat().st_size} bytes (diffoscope shows where)"]


def compare(
    a: Path, b: Path, names: Sequence[str] = ()
) -> tuple[list[tuple[str, str, str]], dict[str, list[str]]]:
    """(rows of (artifact, sha256 in A, sha256 in B), {artifact: what differs inside})."""
    if not names:
        names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    rows, diffs = [], {}
    for name in names:
        pa, pb = a / name, b / name
        ha = sha256_path(pa) if pa.exists() else "(missing)"
        hb = sha256_path(pb) if pb.exists() else "(missing)"
        rows.append((name, ha, hb))
        if ha != hb or not pa.exists():  # missing from both builds is no match either
            if pa.exists() and pb.exists():
                diffs[name] = inside_differences(pa, pb)
            elif pa.exists() or pb.exists():
                diffs[name] = [f"only in {'A' if pa.exists() else 'B'}"]
            else:
                diffs[name] = ["in neither build"]
    return rows, diffs


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="image/repro.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("artifacts", nargs="*")
    c.add_argument("--time-a", type=int, help="build A's time, seconds")
    c.add_argument("--time-b", type=int, help="build B's time, seconds")
    args = ap.parse_args(argv)
    for d in (args.a, args.b):
        if not d.is_dir():
            print(f"repro: {d}: not a directory of build artifacts", file=sys.stderr)
            return 2
    rows, diffs = compare(args.a, args.b, args.artifacts)
    if args.time_a is not None and args.time_b is not None:
        print(f"build A {args.time_a} s, build B {args.time_b} s")
    width = max(len(r[0]) for r in rows) if rows else 8
    print(f"{'artifact':<{width}}  {'sha256 A':<64}  {'sha256 B':<64}  same")
    for name, ha, hb in rows:
        print(f"{name:<{width}}  {ha:<64}  {hb:<64}  {'NO' if name in diffs else 'yes'}")
    for name, lines in diffs.items():
        print(f"\n{name} differs ({len(lines)} difference(s)):")
        for line in lines[:SHOWN]:
            print(f"  {line}")
        if len(lines) > SHOWN:
            print(f"  ... and {len(lines) - SHOWN} more")
    print(f"\n{len(rows) - len(diffs)} of {len(rows)} artifacts identical")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
