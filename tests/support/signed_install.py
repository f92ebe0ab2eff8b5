"""A small installed program with its signed manifest, as the image build makes it, for tests
that need a daemon whose software verifies (tests/test_image_slot.py, tests/test_logs.py)."""

from __future__ import annotations

from pathlib import Path

from controller.verify import build_manifest, generate_keypair, load_private_key, sign


def signed_install(root: Path, keys: Path) -> Path:
    """Install under `root`, keys in `keys`; returns the verification.toml to point
    TABLECTL_VERIFICATION at."""
    prog = root / "opt/tablectl/lib/python3.11/site-packages/controller"
    prog.mkdir(parents=True)
    (prog / "rules.py").write_text("PAYOUT = 95\n")
    share = root / "opt/tablectl/share/tablectl"
    share.mkdir(parents=True)
    keys.mkdir()
    generate_keypair(keys / "signing.pem", share / "signing.pub")
    manifest = build_manifest(root, ["opt/tablectl/lib"], exclude=[], version="1.0.0")
    (share / "manifest.json").write_bytes(manifest.to_bytes())
    (share / "manifest.json.sig").write_bytes(
        sign(manifest.to_bytes(), load_private_key(keys / "signing.pem"))
    )
    settings = keys / "verification.toml"
    settings.write_text(
        f'manifest = "{share}/manifest.json"\nsignature = "{share}/manifest.json.sig"\n'
        f'public_key = "{share}/signing.pub"\nroot = "{root}"\n'
    )
    return settings
