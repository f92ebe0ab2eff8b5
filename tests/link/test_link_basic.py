"""A linked UTH table against a real Mosquitto (TLS, ACL, persistence) and head office: every
outbox message reaches the ledger once, the meter shows head office's pool, and the ledger
equals the table's journal to the cent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import mqtt_broker
from tests.support.link import (
    POOL,
    assert_ledger_matches,
    drain,
    head_office,
    make_table,
    play_until,
    run,
    start,
    wait_for,
)

pytestmark = pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")


def test_one_table_rounds_reach_the_ledger_exactly_once(broker, ledger_url: str,
                                                        tmp_path: Path) -> None:
    async def main() -> None:
        async with head_office(ledger_url, broker) as (worker,):
            table = await start(make_table("T1", tmp_path / "T1", broker))
            await wait_for(play_until([table], 25), 60, "25 rounds")
            await drain([table])
            st = table.status()
            assert st["jackpot"] == "online"
            pool = worker.ledger.pool(POOL)
            assert pool is not None

            def pool_amount() -> int:
                p = worker.ledger.pool(POOL)
                return -1 if p is None else p.amount
            # The meter shows head office's value.
            await wait_for(lambda: table.status()["pool"]["amount"] == pool_amount(), 5,
                           "meter shows the pool")
            assert table.link.status()["connected"]
            await table.stop()
            totals = assert_ledger_matches(worker.ledger, [table])
            assert totals["in"] > 0

    run(main())
