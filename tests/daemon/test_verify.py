"""Software verification (controller/verify/, controller/extensions/verify.py, `tablectl verify`):
manifest build, sign, verify; tamper detection naming the file; wrong key; HMAC known answers
computed independently here (by the documented framing, and by openssl)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.config.machine import build_machine
from controller.daemon.build import build_devices, simulation_config
from controller.daemon.service import TableService
from controller.extensions.verify import METER_TEXT, SoftwareVerification
from controller.logs import setup as log_setup
from controller.verify import (
    ManifestError,
    Settings,
    build_manifest,
    generate_keypair,
    hmac_digests,
    load_private_key,
    parse_manifest,
    parse_seed,
    sign,
    verify,
)
from tests.support.daemon import REPO, ask, start_daemon, wait_for_socket

PROGRAM = {
    "opt/tablectl/bin/tablectld": b"#!/opt/tablectl/bin/python\nfrom controller import daemon\n",
    "opt/tablectl/lib/python3.11/site-packages/controller/__init__.py": b'"""tablectl."""\n',
    "opt/tablectl/lib/python3.11/site-packages/controller/rules.py": b"PAYOUT = 95\n" * 300,
    "opt/tablectl/lib/python3.11/site-packages/z\u00e9ro.py": b"",  # empty, non-ASCII name
    "etc/systemd/system/tablectld.service": b"[Service]\nType=notify\n",
}
INCLUDES = ["opt/tablectl", "etc/systemd/system/tablectld.service"]
SHARE = "opt/tablectl/share/tablectl"


def make_tree(root: Path) -> None:
    for rel, data in PROGRAM.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    os.symlink("/usr/bin/python3", root / "opt/tablectl/bin/python")


def install(tmp_path: Path) -> Settings:
    """A fake installed program with its signed manifest, as the image build makes it."""
    root = tmp_path / "root"
    make_tree(root)
    share = root / SHARE
    share.mkdir(parents=True)
    keys = tmp_path / "keys"
    keys.mkdir()
    generate_keypair(keys / "signing.pem", share / "signing.pub")
    manifest_path = share / "manifest.json"
    excluded = [f"{SHARE}/manifest.json", f"{SHARE}/manifest.json.sig"]
    manifest = build_manifest(root, INCLUDES, exclude=excluded, version="1.2.3")
    manifest_path.write_bytes(manifest.to_bytes())
    sig = Path(f"{manifest_path}.sig")
    sig.write_bytes(sign(manifest.to_bytes(), load_private_key(keys / "signing.pem")))
    return Settings(manifest_path, sig, share / "signing.pub", root)


def check(s: Settings):
    return verify(s.manifest, s.signature, s.public_key, s.root)


def test_manifest_lists_every_file_sorted_with_sha256(tmp_path: Path) -> None:
    s = install(tmp_path)
    m = parse_manifest(s.manifest.read_bytes())
    paths = [f.path for f in m.files]
    assert paths == sorted(paths, key=lambda p: p.encode())
    expected = {*PROGRAM, "opt/tablectl/bin/python", f"{SHARE}/signing.pub"}
    assert set(paths) == expected
    for f in m.files:
        if f.link is not None:
            assert f.link == "/usr/bin/python3"
        else:
            assert f.sha256 == hashlib.sha256((s.root / f.path).read_bytes()).hexdigest()
            assert f.size == (s.root / f.path).stat().st_size
    assert m.version == "1.2.3"
    # The canonical bytes round-trip exactly (what is signed is what is read).
    assert m.to_bytes() == s.manifest.read_bytes()


def test_untouched_tree_verifies(tmp_path: Path) -> None:
    report = check(install(tmp_path))
    assert report.ok, report.problems
    assert report.files == len(PROGRAM) + 2
    assert report.summary().startswith("software verified")


@pytest.mark.parametrize(
    "tamper, named, why",
    [
        (
            lambda r: (
                r / "opt/tablectl/lib/python3.11/site-packages/controller/rules.py"
            ).write_bytes(b"PAYOUT = 96\n" * 300),
            "controller/rules.py",
            "SHA-256 mismatch",
        ),
        (
            lambda r: (r / "etc/systemd/system/tablectld.service").unlink(),
            "etc/systemd/system/tablectld.service",
            "missing",
        ),
        (
            lambda r: (r / "opt/tablectl/lib/python3.11/site-packages/evil.pth").write_text(
                "import os\n"
            ),
            "site-packages/evil.pth",
            "not in the manifest",
        ),
        (
            lambda r: (
                (r / "opt/tablectl/bin/python").unlink(),
                os.symlink("/tmp/python", r / "opt/tablectl/bin/python"),
            ),
            "opt/tablectl/bin/python",
            "symlink to /tmp/python",
        ),
    ],
    ids=["changed", "removed", "added", "relinked"],
)
def test_tampering_is_detected_and_names_the_file(tmp_path, tamper, named, why) -> None:
    s = install(tmp_path)
    tamper(s.root)
    report = check(s)
    assert not report.ok
    assert len(report.problems) == 1, report.problems
    assert named in report.problems[0] and why in report.problems[0]
    assert named in report.summary()


def test_same_size_single_byte_change_is_detected(tmp_path: Path) -> None:
    s = install(tmp_path)
    target = s.root / "opt/tablectl/bin/tablectld"
    data = bytearray(target.read_bytes())
    data[5] ^= 1
    target.write_bytes(bytes(data))
    report = check(s)
    assert [p.split(":")[0] for p in report.problems] == ["opt/tablectl/bin/tablectld"]


def test_wrong_key_fails_the_signature(tmp_path: Path) -> None:
    s = install(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    generate_keypair(other / "k.pem", other / "k.pub")
    report = verify(s.manifest, s.signature, other / "k.pub", s.root)
    assert not report.ok
    assert "signature does not verify" in report.problems[0]


def test_edited_manifest_fails_the_signature(tmp_path: Path) -> None:
    """Someone changes a file AND its manifest line: the signature catches it."""
    s = install(tmp_path)
    rules = s.root / "opt/tablectl/lib/python3.11/site-packages/controller/rules.py"
    old = hashlib.sha256(rules.read_bytes()).hexdigest()
    rules.write_bytes(b"PAYOUT = 99\n")
    text = s.manifest.read_text().replace(old, hashlib.sha256(b"PAYOUT = 99\n").hexdigest())
    s.manifest.write_text(text.replace('"size": 3600', '"size": 12'))
    report = check(s)
    assert not report.ok and "signature does not verify" in report.problems[0]


def test_missing_or_garbage_inputs_are_reported_not_raised(tmp_path: Path) -> None:
    s = install(tmp_path)
    s.signature.write_bytes(b"not base64 !!!\n")
    assert "signature does not verify" in check(s).problems[0]
    s.signature.unlink()
    assert "cannot read the signature" in check(s).problems[0]
    s.public_key.write_text("garbage")
    assert "not a usable public key" in check(s).problems[0]


@pytest.mark.parametrize(
    "doc, says",
    [
        (b"{", "not valid JSON"),
        (b'{"format": "other/1"}', "format must be"),
        (
            b'{"format": "tablectl-manifest/1", "hash": "sha256", "files": [{"path": "../etc/x",'
            b' "size": 1, "sha256": "' + b"0" * 64 + b'"}]}',
            "not a clean relative path",
        ),
        (
            b'{"format": "tablectl-manifest/1", "hash": "sha256", "files": [{"path": "a",'
            b' "size": -1, "sha256": "' + b"0" * 64 + b'"}]}',
            "size must be",
        ),
    ],
)
def test_bad_manifests_name_the_problem(doc: bytes, says: str) -> None:
    with pytest.raises(ManifestError, match=says):
        parse_manifest(doc)


# --- HMAC field verification --------------------------------------------------------------------


def independent_message(root: Path, paths: list[str]) -> bytes:
    """The documented framing, written out again: path | NUL | 8-byte BE length | content,
    files in order of their path's UTF-8 bytes; a symlink's content is its target."""
    out = b""
    for rel in sorted(paths, key=lambda p: p.encode("utf-8")):
        full = root / rel
        content = os.readlink(full).encode() if full.is_symlink() else full.read_bytes()
        out += rel.encode("utf-8") + b"\0" + len(content).to_bytes(8, "big") + content
    return out


def test_hmac_known_answer_against_independent_framing(tmp_path: Path) -> None:
    s = install(tmp_path)
    seed = bytes.fromhex("0102030405060708090a0b0c0d0e0f1011121314")
    got = hmac_digests(parse_manifest(s.manifest.read_bytes()), s.root, seed)
    message = independent_message(
        s.root, [*PROGRAM, "opt/tablectl/bin/python", f"{SHARE}/signing.pub"]
    )
    assert got["hmac_sha1"] == hmac.new(seed, message, hashlib.sha1).hexdigest()
    assert got["hmac_sha256"] == hmac.new(seed, message, hashlib.sha256).hexdigest()
    assert got["bytes"] == sum(
        len(os.readlink(s.root / p)) if (s.root / p).is_symlink() else (s.root / p).stat().st_size
        for p in [*PROGRAM, "opt/tablectl/bin/python", f"{SHARE}/signing.pub"]
    )
    # A different seed gives different digests; the same seed the same ones.
    again = hmac_digests(parse_manifest(s.manifest.read_bytes()), s.root, seed)
    other = hmac_digests(parse_manifest(s.manifest.read_bytes()), s.root, b"\x00")
    assert again == got and other["hmac_sha256"] != got["hmac_sha256"]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_hmac_known_answer_against_openssl(tmp_path: Path) -> None:
    """A lab can reproduce the digests with openssl over the framed concatenation."""
    s = install(tmp_path)
    seed = "c0ffee00"
    manifest = parse_manifest(s.manifest.read_bytes())
    got = hmac_digests(manifest, s.root, bytes.fromhex(seed))
    framed = tmp_path / "framed.bin"
    framed.write_bytes(independent_message(s.root, [f.path for f in manifest.files]))
    for algo in ("sha1", "sha256"):
        out = subprocess.run(
            [
                "openssl",
                "dgst",
                f"-{algo}",
                "-mac",
                "HMAC",
                "-macopt",
                f"hexkey:{seed}",
                str(framed),
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert out.strip().split()[-1] == got[f"hmac_{algo}"]


def test_hmac_changes_when_one_byte_of_the_program_changes(tmp_path: Path) -> None:
    s = install(tmp_path)
    m = parse_manifest(s.manifest.read_bytes())
    before = hmac_digests(m, s.root, b"seed")
    target = s.root / "opt/tablectl/lib/python3.11/site-packages/controller/__init__.py"
    target.write_bytes(target.read_bytes().replace(b"t", b"T", 1))
    after = hmac_digests(m, s.root, b"seed")
    assert before["hmac_sha1"] != after["hmac_sha1"]
    assert before["hmac_sha256"] != after["hmac_sha256"]


@given(st.binary(min_size=1, max_size=64))
def test_seed_parsing_round_trips_hex(seed: bytes) -> None:
    assert parse_seed(seed.hex()) == seed
    assert parse_seed("0x" + seed.hex().upper()) == seed
    assert parse_seed(" ".join(seed.hex()[i : i + 2] for i in range(0, len(seed) * 2, 2))) == seed


@pytest.mark.parametrize(
    "text, says",
    [
        ("", "empty"),
        ("abc", "even number"),
        ("zz", "'z' is not a hex"),
        ("00" * 257, "at most 256"),
    ],
)
def test_bad_seeds_name_the_problem(text: str, says: str) -> None:
    with pytest.raises(ManifestError, match=says):
        parse_seed(text)


@settings(max_examples=25, deadline=None)
@given(
    st.dictionaries(
        st.text(st.characters(min_codepoint=0x30, max_codepoint=0x7A), min_size=1, max_size=8),
        st.binary(max_size=200),
        min_size=1,
        max_size=6,
    )
)
def test_any_tree_round_trips_and_any_flip_is_caught(tmp_path_factory, files) -> None:
    root = tmp_path_factory.mktemp("prop")
    for name, data in files.items():
        (root / "app" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "app" / name).write_bytes(data)
    m = build_manifest(root, ["app"], version="p")
    assert parse_manifest(m.to_bytes()) == m
    assert [f.path for f in m.files] == sorted((f"app/{n}" for n in files), key=str.encode)
    victim = sorted(files)[0]
    (root / "app" / victim).write_bytes(files[victim] + b"x")
    from controller.verify import check_files

    problems = check_files(m, root)
    assert len(problems) == 1 and problems[0].startswith(f"app/{victim}: SHA-256 mismatch")


# --- the daemon ---------------------------------------------------------------------------------


def _service(
    tmp_path: Path, ext: SoftwareVerification, mode: str = "production"
) -> TableService:
    state = tmp_path / "state"
    cfg = simulation_config("paigow", "nsw", state, state / "run")
    import random

    from controller.daemon.build import build_policy

    rng = random.Random(7)
    return TableService(
        cfg,
        build_machine(cfg),
        build_devices(cfg, rng),
        log_setup(journald=False),
        policy=build_policy(cfg, rng),
        autoplay=1,
        extensions=[ext],
        mode=mode,
    )


def test_daemon_refuses_to_play_on_a_mismatch_and_shows_it_on_the_meter(tmp_path: Path) -> None:
    s = install(tmp_path)
    (s.root / "opt/tablectl/bin/tablectld").write_bytes(b"#!/bin/sh\nexec evil\n")
    ext = SoftwareVerification(log_setup(journald=False), s)
    service = _service(tmp_path, ext)
    assert asyncio.run(service.run()) == 1  # autoplay stops at once: out of service
    assert service.out_of_service is not None
    assert "opt/tablectl/bin/tablectld" in service.out_of_service
    assert service.stats.rounds == {}  # not one round played
    assert service.devices["meter"].view.text == METER_TEXT
    st_ = ext.status()
    assert st_["state"] == "failed" and st_["problem_count"] == 1


def test_daemon_plays_when_verified_and_says_so(tmp_path: Path) -> None:
    s = install(tmp_path)
    ext = SoftwareVerification(log_setup(journald=False), s)
    service = _service(tmp_path, ext)
    assert asyncio.run(service.run()) == 0
    assert service.out_of_service is None and sum(service.stats.rounds.values()) == 1
    assert ext.status()["state"] == "verified"


def test_daemon_without_settings_says_not_verified_and_plays(tmp_path: Path) -> None:
    # Only in an explicit mode that may run unverified (here simulation, as --simulate).
    ext = SoftwareVerification(log_setup(journald=False), None, mode="simulation")
    service = _service(tmp_path, ext, mode="simulation")
    assert asyncio.run(service.run()) == 0
    assert ext.status()["state"] == "not_configured"


def test_settings_promising_a_missing_manifest_fail_closed(tmp_path: Path) -> None:
    s = install(tmp_path)
    s.manifest.unlink()  # deleting the manifest must not turn verification off
    ext = SoftwareVerification(log_setup(journald=False), s)
    service = _service(tmp_path, ext)
    assert asyncio.run(service.run()) == 1
    assert "cannot read the manifest" in (service.out_of_service or "")


def _settings_file(tmp_path: Path, s: Settings) -> Path:
    path = tmp_path / "verification.toml"
    path.write_text(
        f'manifest = "{s.manifest}"\nsignature = "{s.signature}"\n'
        f'public_key = "{s.public_key}"\nroot = "{s.root}"\n'
    )
    return path


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli.main", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_tablectl_verify_end_to_end_without_a_restart(tmp_path: Path) -> None:
    """A running table answers the inspector's seed; a file changed while it runs is found by
    `tablectl verify`, which takes the table out of service."""
    s = install(tmp_path)
    env = {"TABLECTL_VERIFICATION": str(_settings_file(tmp_path, s))}
    state = tmp_path / "state"
    proc = start_daemon(state, "--game", "paigow", "--autoplay", "0", "--pace", "0.05", env=env)
    try:
        status = wait_for_socket(state, proc)
        deadline = time.monotonic() + 30
        while status["verification"]["state"] == "checking" and time.monotonic() < deadline:
            time.sleep(0.05)  # the control socket answers before the extensions have started
            status = ask(state, "status")
        assert status["verification"]["state"] == "verified"
        assert status["out_of_service"] is None
        seed = "00112233445566778899aabbccddeeff"
        run = _cli("verify", "--hmac-seed", seed, "--runtime-dir", str(state / "run"), "--json")
        assert run.returncode == 0, run.stderr
        got = json.loads(run.stdout)
        manifest = parse_manifest(s.manifest.read_bytes())
        message = independent_message(s.root, [f.path for f in manifest.files])
        key = bytes.fromhex(seed)
        assert got["hmac_sha1"] == hmac.new(key, message, hashlib.sha1).hexdigest()
        assert got["hmac_sha256"] == hmac.new(key, message, hashlib.sha256).hexdigest()
        assert got["signature_ok"] is True
        # The same answer computed locally, without the daemon.
        local = _cli("verify", "--hmac-seed", seed, "--local", "--json", env=env)
        assert json.loads(local.stdout)["hmac_sha256"] == got["hmac_sha256"]
        # Tamper while running: the on-demand check names the file and stops play.
        (s.root / "opt/tablectl/lib/python3.11/site-packages/controller/rules.py").write_text("x")
        again = _cli("verify", "--runtime-dir", str(state / "run"))
        assert again.returncode == 1 and "controller/rules.py" in again.stdout
        status = ask(state, "status")
        assert status["state"] == "out_of_service"
        assert "rules.py" in status["out_of_service"]
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_tablectld_logs_the_file_and_exits_nonzero_in_autoplay(tmp_path: Path) -> None:
    s = install(tmp_path)
    (s.root / "etc/systemd/system/tablectld.service").write_text("[Service]\nUser=root\n")
    env = {"TABLECTL_VERIFICATION": str(_settings_file(tmp_path, s))}
    proc = start_daemon(tmp_path / "state", "--game", "uth", "--autoplay", "2", env=env)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "OUT OF SERVICE" in err and "etc/systemd/system/tablectld.service" in err
    assert "round" not in out


def test_manifest_tool_build_sign_verify_cli(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make_tree(root)
    tool = [sys.executable, "-m", "controller.verify"]

    def run(*a: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*tool, *a], cwd=REPO, capture_output=True, text=True, timeout=60)

    assert (
        run(
            "keygen", "--private", str(tmp_path / "k.pem"), "--public", str(tmp_path / "k.pub")
        ).returncode
        == 0
    )
    again = run("keygen", "--private", str(tmp_path / "k.pem"), "--public", str(tmp_path / "x"))
    assert again.returncode == 2 and "never overwrite" in again.stderr
    m = tmp_path / "manifest.json"
    assert (
        run("build", "--root", str(root), "--include", "opt/tablectl", "--out", str(m)).returncode
        == 0
    )
    assert run("sign", str(m), "--key", str(tmp_path / "k.pem")).returncode == 0
    sig = base64.b64decode(Path(f"{m}.sig").read_bytes())
    assert len(sig) == 64  # a raw ed25519 signature
    ok = run("verify", str(m), "--public-key", str(tmp_path / "k.pub"), "--root", str(root))
    assert ok.returncode == 0 and "software verified" in ok.stdout
    (root / "opt/tablectl/bin/tablectld").write_text("changed")
    bad = run(
        "verify", str(m), "--public-key", str(tmp_path / "k.pub"), "--root", str(root), "--json"
    )
    assert bad.returncode == 1
    assert json.loads(bad.stdout)["problems"][0].startswith("opt/tablectl/bin/tablectld:")


def test_the_daemon_process_never_loads_cryptography() -> None:
    # 7 MB of the daemon's memory (target <= 45 MB, docs/daemon.md): the signature is checked in
    # a child process, and nothing the daemon imports pulls the library in.
    code = ("import sys, controller.daemon.main, controller.extensions.verify;"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'cryptography'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"
