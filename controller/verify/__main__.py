"""`python -m controller.verify`: the build machine's and the lab's tool (keygen, build, sign,
verify, hmac); see the package's docstring."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import controller.verify as package
from controller.verify.check import MAX_PROBLEMS_SHOWN, read_bytes, verify
from controller.verify.field import hmac_digests, parse_seed
from controller.verify.keys import fingerprint, generate_keypair, load_private_key, sign
from controller.verify.manifest import ManifestError, build_manifest, parse_manifest


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m controller.verify", description=package.__doc__)
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
        data = read_bytes(args.manifest, "manifest")
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
    manifest = parse_manifest(read_bytes(args.manifest, "manifest"), str(args.manifest))
    print(json.dumps(hmac_digests(manifest, args.root, parse_seed(args.seed))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
