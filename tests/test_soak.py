"""The money-safety soak, short form (issue 12): three linked UTH tables and a Pai Gow table as
`tablectld` processes, each SIGKILLed at random moments, with the broker and head office killed
and restarted in between; at the end every journal verifies and head office's ledger equals the
journals to the cent. bench/soak.py runs the long form (>= 300 SIGKILLs per game)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.journal import Journal
from shared.link import contract
from tests import mqtt_broker
from tests.soak_harness import SoakPlan, run_soak
from tests.support.daemon import start_daemon

pytestmark = [
    pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed"),
    pytest.mark.slow,
]


def test_sigkills_and_outages_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    figures = run_soak(tmp_path, SoakPlan(kills=8, outages=1, seed=3))
    print("\n".join(figures.lines()))
    assert figures.kills == {"uth": 9, "paigow": 8}  # 3 per UTH table
    assert figures.broker_kills == figures.headoffice_kills == 1
    # The checks that matter ran inside run_soak (journals, ledger to the cent); these say the
    # soak exercised money: jackpot wagers went into the pool and every table played rounds.
    assert figures.wagered > 0
    assert all(completed > 0 for completed, _voided in figures.rounds.values())
    # Head office applied every message, Pai Gow's round results as well as UTH's.
    assert figures.refused == {}


def test_head_office_accepts_a_pai_gow_round_result(tmp_path: Path) -> None:
    daemon = start_daemon(tmp_path, "--game", "paigow", "--rules", "nz", "--autoplay", "1",
                          "--quiet")
    _out, err = daemon.communicate(timeout=120)
    assert daemon.returncode == 0, err
    with Journal.open(tmp_path, table_id="SIM-PAIGOW-NZ", game="paigow") as journal:
        results = [m for m in journal.pending_outbox(100) if m.type == "round_result"]
    assert results
    checked = contract.check_outbox_payload("round_result", results[0].payload)
    assert checked["round"] == results[0].payload["number"] == 1
