"""A shift closed with incomplete meters reaches head office marked so, over a real Mosquitto,
on SQLite and PostgreSQL: the table's meters were replayed from a journal whose first records
retention had pruned (controller/daemon/accounting.py `load_meters`), so the `shift_meters`
message says what they lack (`incomplete`, docs/mqtt.md), head office stores it with the
message and `tablectl-headoffice meters` shows it; the next shift is whole and says only that
the lifetime figures lack those rounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.daemon.accounting import _records
from controller.meters import CLOSE_SHIFT, replay
from controller.rounds.base import Event
from headoffice import cli
from headoffice import meters as ho_meters
from tests import mqtt_broker
from tests.support.link import drain, head_office, make_table, play_until, run, start, wait_for

pytestmark = pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")


def test_an_incomplete_shift_reaches_head_office_marked(broker, ledger_url: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    async def main() -> None:
        async with head_office(ledger_url, broker) as (worker,):
            table = await start(make_table("T1", tmp_path / "T1", broker))
            await wait_for(play_until([table], 6), 60, "6 rounds")
            await drain([table])
            journal = table.service.journal
            assert journal is not None
            # The meters a start without meters.json makes of this journal had retention
            # pruned its records up to the one that closed the table's third round:
            # load_meters' own replay, from the first record kept.
            third = next(s.seq for s in journal.iter_events()
                          if any(r.number == 3 for r in s.rounds))
            table.service.meters = replay(_records(journal, third + 1), third)
            whole = replay(_records(journal))
            kept = table.service.meters.shift
            assert kept.first_round is not None and kept.first_round > 3
            assert kept.rounds_played + kept.rounds_voided < (
                whole.shift.rounds_played + whole.shift.rounds_voided)
            for _ in range(2):  # the incomplete shift, then a whole one (no round in it)
                await table.service.idle()
                assert await table.service.process(Event(CLOSE_SHIFT, {})) is not None
            await wait_for(lambda: len(ho_meters.shift_meters(worker.ledger.db, "T1")) == 2,
                           30, "both shift closes at head office")
            second, first = ho_meters.shift_meters(worker.ledger.db, "T1")
            assert first["incomplete"] == {"missing_through": third, "shift": True,
                                           "first_round_counted": kept.first_round}
            assert first["figures"]["first_round"] == kept.first_round
            assert first["figures"]["rounds_played"] == kept.rounds_played
            assert second["incomplete"] == {"missing_through": third, "shift": False,
                                            "first_round_counted": kept.first_round}
            await table.stop()

    run(main())
    assert cli.main(["meters", "--db", ledger_url, "--table", "T1"]) == 0
    second, first = capsys.readouterr().out.split("table T1 shift ")[1:]
    assert "INCOMPLETE: rounds before" in first and "not counted" in first
    assert "this shift's figures are whole" in second
    assert "lifetime figures INCOMPLETE" in second
    assert cli.main(["meters", "--db", ledger_url, "--json"]) == 0
    shifts = json.loads(capsys.readouterr().out)
    assert [s["incomplete"]["shift"] for s in shifts] == [False, True]
