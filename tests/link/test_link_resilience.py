"""The link through trouble, against a real Mosquitto: the broker killed (SIGKILL) and
restarted mid-stream, a table cut off for many rounds then back, head office scaled out to two
workers (one of them killed). At the end of each, head office's ledger equals the sum of the
tables' journals, to the cent, and every message was applied exactly once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests import mqtt_broker
from tests.support.link import (
    assert_ledger_matches,
    drain,
    head_office,
    make_table,
    play_until,
    run,
    start,
    wait_for,
)
from tests.test_headoffice_scale import routed

pytestmark = [
    pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed"),
    pytest.mark.slow,
]


def test_broker_killed_and_restarted_mid_stream(broker, ledger_url: str, tmp_path: Path) -> None:
    async def main() -> None:
        async with head_office(ledger_url, broker) as (worker,):
            tables = [await start(make_table(f"T{i}", tmp_path / f"T{i}", broker, seed=i))
                      for i in (1, 2)]
            await wait_for(play_until(tables, 8), 60, "8 rounds each")
            sent_before = [t.link.relay.stats.sent for t in tables]  # type: ignore[union-attr]
            broker.kill()
            offline: set[str] = set()

            def watch() -> bool:
                for t in tables:
                    offline.add(t.status()["jackpot"])
                return "offline" in offline and all(len(t.rounds) >= 16 for t in tables)

            # The tables play on without the broker; the jackpot goes OFFLINE (UTH 11.11).
            await wait_for(watch, 60, "8 more rounds without a broker")
            assert "offline" in offline
            assert all(not t.link.connected for t in tables)
            await asyncio.to_thread(broker.start)
            await wait_for(play_until(tables, 26), 90, "10 more rounds after the restart")
            await drain(tables, 60)
            await wait_for(lambda: all(t.status()["jackpot"] == "online" for t in tables), 10,
                           "jackpot online again")
            for t, before in zip(tables, sent_before, strict=True):
                assert t.link.counters["disconnects"] >= 1 and t.link.counters["connects"] >= 2
                assert t.link.relay.stats.sent > before  # type: ignore[union-attr]
            for t in tables:
                await t.stop()
            assert_ledger_matches(worker.ledger, tables)

    run(main())


def test_table_offline_for_many_rounds_then_back(broker, ledger_url: str,
                                                 tmp_path: Path) -> None:
    async def main() -> None:
        proxy = await mqtt_broker.TcpProxy(broker.port).start()
        async with head_office(ledger_url, broker) as (worker,):
            cut = await start(make_table("CUT", tmp_path / "CUT", broker, port=proxy.port,
                                         seed=7))
            other = await start(make_table("OK", tmp_path / "OK", broker, seed=8))
            await wait_for(play_until([cut, other], 5), 60, "5 rounds")
            proxy.cut()
            seen: set[str] = set()

            def far_behind() -> bool:
                seen.add(cut.status()["jackpot"])
                return "offline" in seen and len(cut.rounds) >= 45

            await wait_for(far_behind, 120, "40 rounds cut off")
            assert "offline" in seen  # no pool value: jackpot wagers refused (UTH 11.11)
            backlog = cut.service.journal.summary()["outbox_pending"]  # type: ignore[union-attr]
            assert backlog >= 40, backlog
            assert worker.ledger.table_totals("CUT")["last_seq"] < backlog
            proxy.restore()
            await drain([cut, other], 60)
            await cut.stop()
            await other.stop()
            assert_ledger_matches(worker.ledger, [cut, other])
        await proxy.close()

    run(main())


def test_two_workers_share_the_load_without_double_applying(broker, ledger_url: str,
                                                            tmp_path: Path) -> None:
    async def main() -> None:
        async with head_office(ledger_url, broker, workers=2) as workers:
            # The workers share the partitions (headoffice/routing.py): S0 and S1 fall in one
            # half, S2 in the other.
            await wait_for(lambda: routed(workers), 20, "partitions shared")
            tables = [await start(make_table(f"S{i}", tmp_path / f"S{i}", broker, seed=20 + i))
                      for i in range(3)]
            await wait_for(play_until(tables, 10), 90, "10 rounds each")
            # Both workers took a share of the messages (each reads its partitions' tables).
            assert all(w.counters["applied"] > 0 for w in workers), [w.counters for w in workers]
            await wait_for(play_until(tables, 20), 90, "20 rounds each")
            await drain(tables, 60)
            for t in tables:
                await t.stop()
            assert_ledger_matches(workers[0].ledger, tables)

    run(main())
