"""The flush-point replay's host side (image/vm/flushpoints.py) on real journals: a UTH table
of the VM's own config (examples/vm-uth.toml) played on the host with simulated devices, its
files in an ext4 image as on the data partition, and a dm-log-writes log (the kernel's format)
taking that image to another; then what the replay makes of each point: the table continues,
refuses with a reason, or one of the failures (a silent rollback, a journal that disagrees
with head office), which must be caught."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from controller.journal import Journal
from image.vm.flushpoints import (
    ARCHIVE_ALARM,
    CONTINUES,
    FAIL_FS,
    FAIL_HEADOFFICE,
    FAIL_ROLLBACK,
    FAIL_UNCLEAR,
    FAIL_VERIFY,
    NEW_JOURNAL,
    Durable,
    Point,
    Source,
    classify,
    extract,
    host_config,
    replay_log,
)
from image.vm.logwrites import FLUSH, FUA
from shared.link import contract
from tests.test_image_vm_logwrites import build_log

REPO = Path(__file__).resolve().parent.parent
TABLE = "VM-UTH-01"

pytestmark = pytest.mark.skipif(
    not (shutil.which("mkfs.ext4") and shutil.which("debugfs") and shutil.which("e2fsck")),
    reason="e2fsprogs (mkfs.ext4, debugfs, e2fsck) not installed",
)


def play(tree: Path, rounds: int) -> None:
    """`rounds` more rounds of the VM's UTH table on the host, its files in `tree` laid out as
    on the data partition (the key where systemd's LoadCredential= would put it)."""
    etc = tree / "etc/tablectl"
    if not etc.exists():
        etc.mkdir(parents=True)
        (tree / "tablectl-mark").mkdir()
        (etc / "uth.toml").write_text((REPO / "examples/vm-uth.toml").read_text())
    cfg = tree.parent / f"{tree.name}.toml"
    cfg.write_text(host_config((etc / "uth.toml").read_text(), tree))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if (etc / "journal-key").exists():
        env["CREDENTIALS_DIRECTORY"] = str(etc)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.daemon.main",
            "--config",
            str(cfg),
            "--simulate",
            "--autoplay",
            str(rounds),
            "--pace",
            "0",
            "--quiet",
        ],
        env=env,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    dev_key = tree / "tablectl/journal.key"
    if dev_key.exists():  # the first start made one beside the journal: now the table's key
        dev_key.rename(etc / "journal-key")


def image_of(tree: Path, img: Path) -> None:
    subprocess.run(
        ["mkfs.ext4", "-q", "-L", "persistent", "-d", str(tree), str(img), "32M"], check=True
    )


def diff_log(before: Path, after: Path, log: Path) -> None:
    """A log taking image `before` to `after`: a flush, every changed 4 KiB block, a FUA."""
    a, b = before.read_bytes(), after.read_bytes()
    writes: list[tuple[int, int, bytes | str]] = [(0, FLUSH, b"")]
    for off in range(0, len(b), 4096):
        if a[off : off + 4096] != b[off : off + 4096]:
            writes.append((off // 512, 0, b[off : off + 4096]))
    sector, _, data = writes.pop()
    writes.append((sector, FUA, data))
    build_log(log, writes)


def ledger_of(tree: Path, path: Path, alter: int | None = None) -> Path:
    """Head office's ledger holding every message of the journal in `tree` as the link sends
    it (message `alter` with another amount of money)."""
    with (
        contextlib.closing(sqlite3.connect(path)) as db,
        db,
        Journal.open(
            tree / "tablectl",
            table_id=TABLE,
            game="uth",
            create=False,
            key_file=tree / "etc/tablectl/journal-key",
        ) as j,
    ):
        db.execute("CREATE TABLE messages (table_id TEXT, seq INTEGER, body TEXT)")
        for e in j.iter_events():
            for m in e.outbox:
                payload = m.payload
                if m.id == alter:
                    payload = {**payload, "house_net": payload.get("house_net", 0) + 100}
                body = contract.outbox_message(TABLE, m.id, m.seq, m.type, m.utc, payload, e.hash)
                db.execute("INSERT INTO messages VALUES (?, ?, ?)", (TABLE, m.id, json.dumps(body)))
    return path


@pytest.fixture(scope="module")
def states(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Images of one table's data partition: after 3 rounds (a), after 2 more (b), and (a)
    with its journal gone (gone: its marks say there was one)."""
    d = tmp_path_factory.mktemp("flush")
    tree = d / "tree"
    play(tree, 3)
    image_of(tree, d / "a.img")
    a_tree = d / "a-tree"
    shutil.copytree(tree, a_tree)
    play(tree, 2)
    image_of(tree, d / "b.img")
    (a_tree / "tablectl/journal.sqlite3").unlink()
    image_of(a_tree, d / "gone.img")
    ledger_of(tree, d / "ledger.db")
    ledger_of(tree, d / "altered.db", alter=8)  # of the 2 rounds after (a)
    return {
        "a": d / "a.img",
        "b": d / "b.img",
        "gone": d / "gone.img",
        "ledger": d / "ledger.db",
        "altered": d / "altered.db",
        "dir": d,
    }


def run(states: dict[str, Path], before: str, after: str, ledger: str, name: str):
    log = states["dir"] / f"{name}.log"
    diff_log(states[before], states[after], log)
    return replay_log(log, states[before], states[ledger], states["dir"] / name)


def test_every_point_continues_holding_what_the_one_before_held(states: dict[str, Path]) -> None:
    r = run(states, "a", "b", "ledger", "ok")
    assert [p.entry for p in r.points] == [-1, 0, r.entries - 1]  # the flush, the FUA
    assert r.counts == {CONTINUES: 3}, r.lines()
    ends = [p.durable.last_seq for p in r.points if p.durable]
    assert ends[0] == ends[1] < ends[2], ends
    assert not r.failures
    assert r.lines()[0].startswith("flush-point replay: 2 points replayed of 2 FLUSH/FUA")
    assert r.summary()["points_replayed"] == 2


def test_each_point_is_checked_on_the_replayed_image_left_as_it_was(
    states: dict[str, Path], tmp_path: Path
) -> None:
    """The fsck of a point (which replays the ext4 journal) is undone before the next entries
    are applied: the replayed image stays the device's, not the device's after a boot."""
    img = tmp_path / "b.img"
    shutil.copy(states["b"], img)
    before = hashlib.sha256(img.read_bytes()).hexdigest()
    assert extract(img, tmp_path / "undo", tmp_path / "out", Source()) == 0
    assert hashlib.sha256(img.read_bytes()).hexdigest() == before
    assert (tmp_path / "out/tablectl/journal.sqlite3").is_file()
    assert (tmp_path / "out/tablectl-mark/uth.mark").is_file()
    assert (tmp_path / "out/etc/tablectl/journal-key").is_file()


def test_a_journal_that_went_back_is_a_silent_rollback(states: dict[str, Path]) -> None:
    """The whole partition back to an older state (journal and marks together): the table
    would continue, without the rounds the earlier point held durably."""
    r = run(states, "b", "a", "ledger", "back")
    assert r.points[-1].started and r.points[-1].outcome == FAIL_ROLLBACK, r.lines()
    assert "ends at seq" in r.points[-1].why
    assert r.failures == [r.points[-1]]


def test_a_message_head_office_holds_otherwise_is_a_disagreement(states: dict[str, Path]) -> None:
    r = run(states, "a", "b", "altered", "altered")
    assert r.points[-1].outcome == FAIL_HEADOFFICE, r.lines()
    assert r.points[-1].why.startswith("message 8: head office holds")
    assert r.failures == [r.points[-1]]


def test_a_refusal_names_its_reason(states: dict[str, Path]) -> None:
    r = run(states, "a", "gone", "ledger", "gone")
    last = r.points[-1]
    assert not last.started and last.code == "E101", r.lines()
    assert last.outcome.startswith("refuses: E101 journal unusable: journal PATH is missing")
    assert "refusing to start a new journal" in last.reason
    assert not r.failures


def durable(last: int, hashes: dict[int, str]) -> Durable:
    return Durable(last_seq=last, pruned_through=0, hashes=hashes)


def test_a_first_start_makes_the_first_journal() -> None:
    first = Point(
        entry=-1,
        started=True,
        verify_ok=False,
        verify_errors=["no journal: x"],
        had_journal=False,
        durable=durable(0, {}),
    )
    later = Point(entry=5, started=True, verify_ok=True, durable=durable(2, {1: "h1", 2: "h2"}))
    assert classify([first, later], {}) == {NEW_JOURNAL: 1, CONTINUES: 1}


@pytest.mark.parametrize(
    ("point", "outcome"),
    [
        (Point(entry=1, started=False, reason="", code="E101"), FAIL_UNCLEAR),
        (Point(entry=1, started=False, reason="journal unusable: x", code=""), FAIL_UNCLEAR),
        (Point(entry=1, fsck=4), FAIL_FS),
        (
            Point(
                entry=1,
                started=True,
                verify_ok=False,
                verify_errors=["chain broken at 3"],
                durable=durable(3, {2: "h2", 3: "h3"}),
            ),
            FAIL_VERIFY,
        ),
        (
            Point(
                entry=1,
                started=True,
                verify_ok=False,
                verify_errors=["segment 1: missing"],
                archive_only=True,
                durable=durable(3, {2: "h2", 3: "h3"}),
            ),
            ARCHIVE_ALARM,
        ),
        (
            Point(entry=1, started=True, verify_ok=True, durable=durable(3, {2: "x", 3: "h3"})),
            FAIL_ROLLBACK,
        ),
        (  # the journal gone and a new one made, though the point before held records
            Point(
                entry=1,
                started=True,
                verify_ok=False,
                verify_errors=["no journal: x"],
                had_journal=False,
                durable=durable(0, {}),
            ),
            FAIL_ROLLBACK,
        ),
        (
            Point(entry=1, started=True, verify_ok=True, durable=durable(3, {2: "h2", 3: "h3"})),
            CONTINUES,
        ),
    ],
)
def test_each_outcome(point: Point, outcome: str) -> None:
    before = Point(entry=0, started=True, verify_ok=True, durable=durable(2, {2: "h2"}))
    counts = classify([before, point], {})
    assert point.outcome == outcome and counts[outcome] >= 1, point
