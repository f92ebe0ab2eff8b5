"""`tablectl verify`: software verification on demand (docs/verification.md).

    tablectl verify --hmac-seed HEX [--json]     HMAC-SHA1 and HMAC-SHA256 over the installed
                                                 program, computed by the running daemon
    tablectl verify --hmac-seed HEX --local      the same, computed by this process (daemon down)
    tablectl verify [--local] [--json]           the full check: signature, every file's SHA-256,
                                                 no added files (the daemon's check goes out of
                                                 service on a failure; --local only reports)
    --settings FILE                              another verification.toml (a lab's mounted image)

Exit status: 0 verified, 1 verification failed, 2 bad input, 3 daemon not running.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from controller.cli.common import emit
from controller.cli.table_cmd import _ask
from controller.verify import (
    MAX_PROBLEMS_SHOWN,
    ManifestError,
    hmac_installed,
    load_settings,
    parse_seed,
    verify,
)
from shared.errors import InputError

HMAC_TIMEOUT_S = 600  # hashing a whole venv on a Pi 4 takes seconds, not minutes


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="software verification: signed manifest, HMAC field check")
    p.add_argument("--hmac-seed", metavar="HEX", help="the inspector's seed, hex")
    p.add_argument("--local", action="store_true", help="compute here, not in the daemon")
    p.add_argument("--settings", type=Path, help="verification.toml (implies --local)")
    p.add_argument("--runtime-dir", type=Path, help="where tablectld's control socket is")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    local = args.local or args.settings is not None
    try:
        seed = parse_seed(args.hmac_seed) if args.hmac_seed is not None else None
    except ManifestError as exc:
        raise InputError(str(exc)) from None
    if seed is not None:
        if local:
            result = hmac_installed(_settings(args), seed)
        else:
            result = _ask_long(args, "verify_hmac", {"seed": seed.hex()})
        emit(result, args.json, lambda: _hmac_text(result))
        return 0 if result.get("signature_ok") else 1
    if local:
        s = _settings(args)
        report = verify(s.manifest, s.signature, s.public_key, s.root).as_json()
    else:
        report = _ask_long(args, "verify_run", {})
    emit(report, args.json, lambda: _report_text(report))
    return 0 if report["ok"] else 1


def _settings(args: argparse.Namespace) -> Any:
    try:
        settings = load_settings(args.settings)
    except ManifestError as exc:
        raise InputError(str(exc)) from None
    if settings is None:
        raise InputError(
            "no verification settings installed (a development tree): pass --settings FILE"
        )
    return settings


def _ask_long(args: argparse.Namespace, cmd: str, payload: dict[str, Any]) -> Any:
    from controller.cli import table_cmd
    from controller.control import NotRunning, RequestRefused, request

    try:
        return request(table_cmd.socket_path(args), cmd, payload, timeout=HMAC_TIMEOUT_S)
    except NotRunning:
        return _ask(args, cmd, payload)  # prints the usual not-running message, exits 3
    except RequestRefused as exc:
        raise InputError(table_cmd.refusal_text(args, cmd, str(exc))) from None


def _hmac_text(r: dict[str, Any]) -> str:
    sig = "valid" if r.get("signature_ok") else "DOES NOT VERIFY"
    return "\n".join(
        [
            f"HMAC-SHA1    {r['hmac_sha1']}",
            f"HMAC-SHA256  {r['hmac_sha256']}",
            f"over         {r['files']} files, {r['bytes']} bytes, version {r['version']}",
            f"seed         {r['seed_bytes']} bytes",
            f"manifest     {r['manifest']} sha256 {r['manifest_sha256']}",
            f"signature    {sig}, key {r['key_fingerprint']}",
        ]
    )


def _report_text(r: dict[str, Any]) -> str:
    head = "VERIFIED" if r["ok"] else "FAILED"
    lines = [
        f"software {head}: {r['files']} files, {r['bytes']} bytes, version {r.get('version')}",
        f"manifest sha256 {r.get('manifest_sha256')}",
        f"key fingerprint {r.get('key_fingerprint')}",
    ]
    problems = r.get("problems") or []
    lines += [f"  {p}" for p in problems[:MAX_PROBLEMS_SHOWN]]
    if len(problems) > MAX_PROBLEMS_SHOWN:
        lines.append(f"  ... and {len(problems) - MAX_PROBLEMS_SHOWN} more (--json for all)")
    return "\n".join(lines)
