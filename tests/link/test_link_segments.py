"""Archived journal segments held by head office, over a real Mosquitto (issue 16): the table
sends each archived segment's head and digest until head office answers; head office checks
it against the table's chain, holds it and acknowledges; only then may retention prune it.
A forged or mismatched acknowledgement is refused and counted; with head office down nothing
is pruned."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from controller.config.journal import JournalConfig
from controller.journal.background import verify_in_background
from headoffice.ledger import Ledger
from headoffice.segments import held
from shared.link import contract
from shared.link.transport import connect
from tests import mqtt_broker
from tests.mqtt_broker import Broker
from tests.support.link import FAST, SimTable, head_office, make_table, run, start, wait_for

pytestmark = pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")

OPTIONS = dataclasses.replace(FAST, segments_every_s=0.3)


def small_segments(table: SimTable, rounds: int = 2) -> SimTable:
    """A segment closed every `rounds` rounds (the configuration's floor is 100: a test's
    table would take minutes to close one)."""
    svc = table.service
    svc.cfg = dataclasses.replace(svc.cfg, journal=JournalConfig(segment_rounds=rounds))
    return table


def journal(table: SimTable) -> Any:
    assert table.service.journal is not None
    return table.service.journal


async def archived(table: SimTable, segments: int) -> None:
    async def enough() -> bool:
        await asyncio.to_thread(journal(table).archive)
        return sum(st.archive is not None for st in journal(table).retention.states()) >= segments
    await wait_for(enough, 60, f"{segments} segments archived", every=0.2)


def acked(table: SimTable) -> list[int]:
    return [st.segment.number for st in journal(table).retention.states() if st.ack_ok]


def test_head_office_down_nothing_pruned_then_held_and_prunable(
        broker: Broker, ledger_url: str, tmp_path: Path) -> None:
    async def main() -> None:
        table = await start(small_segments(make_table("T1", tmp_path / "T1", broker,
                                                      options=OPTIONS)))
        await archived(table, 3)
        # No head office: the segments are sent again and again, nothing is acknowledged.
        await wait_for(lambda: table.link.counters["segments_sent"] >= 6, 20, "resends")
        assert acked(table) == []
        plans = journal(table).prune(0, dry_run=True)
        assert plans and not any(p.prune for p in plans)
        assert {p.why for p in plans} <= {"not acknowledged by head office", "not archived"}
        async with head_office(ledger_url, broker) as (worker,):
            await wait_for(lambda: len(acked(table)) >= 3, 30, "segments held")
            rows = held(worker.ledger, "T1")
            assert [r["status"] for r in rows[:3]] == ["held"] * 3
            assert all(r["checked"] != "first" for r in rows[1:3])  # chained (or exact too)
            states = {st.segment.number: st for st in journal(table).retention.states()}
            for r in rows[:3]:
                st = states[r["number"]]
                assert (r["head"], r["digest"], r["first_seq"], r["last_seq"]) == (
                    st.segment.head, st.digest, st.segment.first, st.segment.last)
            assert worker.counters["segments_held"] >= 3
        await table.stop()
        # Acknowledged: retention may prune them now (the daemon's upkeep does it hourly).
        with_ack = journal_reopened(table)
        assert [p.number for p in with_ack if p.prune][:3] == [1, 2, 3]

    run(main())


def journal_reopened(table: SimTable) -> list[Any]:
    from controller.journal import Journal

    with Journal.open(table.cfg.service.state_dir, table_id=table.id, game="uth",
                      create=False) as j:
        return j.prune(0, dry_run=True)


def test_a_forged_ack_is_refused_and_counted(broker: Broker, ledger_url: str,
                                             tmp_path: Path) -> None:
    async def main() -> None:
        table = await start(small_segments(make_table("T1", tmp_path / "T1", broker,
                                                      options=OPTIONS)))
        await archived(table, 1)
        st = journal(table).retention.states()[0]
        # Someone who may write head office's topics answers with another digest, then
        # with the right digest but another head: neither is what the table archived.
        async with connect(broker.settings("headoffice-8", "forger", session_expiry_s=0)) as ho:
            for head, digest in ((st.segment.head, "0" * 64), ("1" * 64, str(st.digest))):
                body = contract.segment_ack_message("T1", 1, head, digest, "held")
                await ho.publish(contract.segment_ack_topic("T1"), contract.dumps(body))
            await wait_for(lambda: table.link.counters["segment_acks_refused"] == 2, 10,
                           "forged acks refused")
        assert table.link.counters["refused"] >= 2
        assert acked(table) == []
        assert journal(table).prune(0, dry_run=True)[0].why == "not acknowledged by head office"
        await table.stop()

    run(main())


def segment(number: int, first: int, last: int, prev: str, head: str) -> dict[str, Any]:
    return contract.segment_message("T2", number, first, last, prev, head, f"{number:064x}",
                                    1000, (number, number), "2026-11-26T10:00:00.000Z")


def test_head_office_refuses_a_broken_chain_alarms_and_answers_refused(
        broker: Broker, ledger_url: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with head_office(ledger_url, broker) as (worker,), connect(
                broker.settings("T2", session_expiry_s=0)) as t2:
            answers: list[dict[str, Any]] = []
            await t2.subscribe([contract.segment_ack_topic("T2")])

            async def read() -> None:
                async for m in t2.messages():
                    answers.append(json.loads(m.payload))
            reader = asyncio.create_task(read())
            a, b, c = "a" * 64, "b" * 64, "c" * 64
            for n, body in enumerate((segment(1, 1, 20, a, b),
                                      segment(2, 21, 40, c, c),  # prev: not segment 1's head
                                      segment(1, 1, 20, a, c))):  # segment 1, another head
                await t2.publish(contract.segment_topic("T2"), contract.dumps(body))
                await wait_for(lambda n=n: len(answers) > n, 10, "an answer")
            reader.cancel()
            assert [(x["segment"], x["status"]) for x in answers] == [
                (1, "held"), (2, "refused"), (1, "refused")]
            assert "broken chain" in answers[1]["reason"]
            assert "differs from the one held (head)" in answers[2]["reason"]
            assert worker.counters["segments_refused"] == 2
            ledger = Ledger.open(ledger_url)
            try:
                # One chain-mismatch alarm for the table, seen twice: the first refusal's
                # text and the last's (headoffice/ledger/alarms.py).
                (alarm,) = ledger.db.execute(
                    "SELECT kind, text, last_text, repeats FROM alarms WHERE table_id = 'T2'")
                assert (alarm["kind"], alarm["repeats"]) == ("chain_mismatch", 2)
                assert "journal segment refused" in alarm["text"]
                assert "journal segment refused" in alarm["last_text"]
                assert [(r["number"], r["status"], r["head"]) for r in held(ledger, "T2")] == [
                    (1, "held", b), (2, "refused", c)]
            finally:
                ledger.close()

    run(main())


def test_round_show_of_a_pruned_round_reads_its_archive(broker: Broker, ledger_url: str,
                                                         tmp_path: Path) -> None:
    """`tablectl round show N` (the control socket's round_show) of a round retention pruned
    once head office held its segment: the same events and record as before the prune, read
    back from the archive; with the archive gone, where it went."""
    from controller.journal.errors import RoundPruned

    async def main() -> None:
        table = await start(small_segments(make_table("T1", tmp_path / "T1", broker,
                                                      options=OPTIONS)))
        show = table.service.commands.round
        async with head_office(ledger_url, broker):
            await archived(table, 2)
            await wait_for(lambda: len(acked(table)) >= 2, 30, "segments held")
        before = await show({"number": 1})
        assert before["events"] and before["record"]["number"] == 1
        assert "archive" not in before
        plans = await asyncio.to_thread(journal(table).prune, 0)
        assert [p.number for p in plans if p.prune][:1] == [1]
        after = await show({"number": 1})
        assert (after["events"], after["record"]) == (before["events"], before["record"])
        assert after["archive"]["segment"] == 1
        assert Path(after["archive"]["path"]).name == "segment-000001.sqlite3.z"
        Path(after["archive"]["path"]).unlink()  # by hand: not by retention
        with pytest.raises(RoundPruned, match="is missing and was not deleted by retention"):
            await show({"number": 1})
        # The background pass finds it: an alarm in status, and the table plays on.
        failures: list[str] = []
        assert await verify_in_background(journal(table), failures.append,
                                          logging.getLogger("test"), delay=0)
        status = await table.service.commands.status({})
        assert (failures, status["out_of_service"]) == ([], None)
        assert len(status["archive_faults"]) == 1
        assert status["archive_faults"][0].startswith("segment 1 (rounds 1..")
        assert status["archive_faults"][0].endswith("segment-000001.sqlite3.z is missing (not "
                                                    "deleted by retention)")
        await table.stop()

    run(main())
