"""The trial boot of an A/B update (controller/trialboot.py): the daemon does not upgrade its
journal to schema 4 while the old software may boot again (docs/journal.md, "Schema 4"). The
firmware's flag is read as tablectl-slot reads it: /proc/device-tree/chosen/bootloader/tryboot,
a big-endian 32-bit integer."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from controller.daemon.build import simulation_config
from controller.daemon.opening import open_journal
from controller.journal import Journal
from controller.trialboot import in_trial_boot
from tests.support.journal import fill


def bootloader(tmp_path: Path, value: bytes | None) -> Path:
    d = tmp_path / "chosen" / "bootloader"
    d.mkdir(parents=True)
    if value is not None:
        (d / "tryboot").write_bytes(value)
    return d


@pytest.mark.parametrize(("value", "expected"), [
    ((1).to_bytes(4, "big"), True), ((0).to_bytes(4, "big"), False), (None, False),
    (b"\x01", None), (b"", None)])
def test_the_firmwares_tryboot_flag(tmp_path: Path, value: bytes | None,
                                    expected: bool | None) -> None:
    assert in_trial_boot(bootloader(tmp_path, value)) is expected


def test_no_device_tree_is_not_a_trial_boot(tmp_path: Path) -> None:
    assert in_trial_boot(tmp_path / "nowhere") is False


def schema(state: Path) -> str:
    with sqlite3.connect(state / "journal.sqlite3") as c:
        return str(c.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0])


@pytest.mark.parametrize(("value", "upgraded", "level"), [
    ((1).to_bytes(4, "big"), False, logging.INFO),   # a trial boot: kept at schema 3
    (b"junk!", False, logging.WARNING),             # malformed: taken as a trial, said so
    ((0).to_bytes(4, "big"), True, None)])          # committed: upgraded
def test_the_daemon_upgrades_its_journal_only_outside_a_trial_boot(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, value: bytes, upgraded: bool,
        level: int | None) -> None:
    cfg = simulation_config("paigow", "nsw", tmp_path / "state", tmp_path / "run")
    with Journal.open(cfg.service.state_dir, table_id=cfg.table_id, game=cfg.game,
                      upgrade=False) as j:  # the journal the software before wrote
        fill(j, rounds=1)
    caplog.set_level(logging.INFO)
    j = open_journal(cfg, logging.getLogger("test.trialboot"), bootloader=bootloader(
        tmp_path, value))
    try:
        assert j.hashless is upgraded
        fill(j, rounds=1)
    finally:
        j.close()
    assert schema(cfg.service.state_dir) == ("4" if upgraded else "3")
    kept = [r for r in caplog.records if "journal kept at schema 3" in r.getMessage()]
    assert [r.levelno for r in kept] == ([] if level is None else [level])
