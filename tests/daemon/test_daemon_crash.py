"""Crash safety with real processes: SIGKILL the simulated daemon at random moments, restart it,
and check that nothing was lost or applied twice (issue 4, "Crash safety").

bench/bench_crash.py runs the same loop with many more kills.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.daemon.build import simulation_config
from controller.journal import Journal
from tests.support.daemon import crash_loop
from tests.support.journal_check import check_journal, status_from_journal

KILLS = 30


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_nothing(tmp_path: Path) -> None:
    args = ["--game", "paigow", "--rules", "nz"]
    crash_loop(tmp_path, args, KILLS, seed=4)
    check_journal(tmp_path, "SIM-PAIGOW-NZ", "paigow")


def replayed_status(state_dir: Path, game: str, rules: str, table_id: str) -> dict:
    """The machine's status rebuilt from the journal alone, as the daemon would at start."""
    cfg = simulation_config(game, rules, state_dir, state_dir / "run")
    assert cfg.table_id == table_id
    return status_from_journal(cfg)


@pytest.mark.slow
def test_uth_sigkill_keeps_the_jackpot_ledger_exact(tmp_path: Path) -> None:
    table = "SIM-UTH-NSW"
    crash_loop(tmp_path, ["--game", "uth"], KILLS, seed=11)
    check_journal(tmp_path, table, "uth")
    increments: dict[int, int] = {}
    cancelled = 0
    locked_in_completed = 0
    with Journal.open(tmp_path, table_id=table, game="uth") as journal:
        for m in journal.pending_outbox(1_000_000):
            if m.type == "jackpot_increment":
                assert m.payload["round"] not in increments  # one increment per locked round
                increments[m.payload["round"]] = m.payload["amount"]
            elif m.type == "jackpot_cancel":
                cancelled += m.payload["amount"]
        for number in range(1, journal.last_round_number + 1):
            record = journal.round_record(number)
            assert record is not None
            if record.status == "completed":
                locked_in_completed += (record.summary.get("jackpot") or {}).get("amount", 0)
    ledger = replayed_status(tmp_path, "uth", "nsw", table)["pool"]["ledger"]
    # What head office was told (increments less cancellations on void rounds, 15.3.1) equals
    # the jackpot wagers locked in the rounds that completed, and the table's own ledger.
    assert sum(increments.values()) - cancelled == locked_in_completed == ledger["wagered"]
    assert locked_in_completed > 0
