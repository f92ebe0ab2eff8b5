"""How often a linked table journals head office's pool values (issue 16, the SD card; UTH
2.4.3, 11.11). Head office republishes the pool every second and publishes a new value after
every batch of any table on the pool; the link journaled each new one and the same one every
~2 s, each an fsync'd commit: an idle table wrote ~4 KiB every 2 s. Now (LinkOptions): a lower
value, an award or a new wager at once; a higher one at most every pool_show_every_s, the
newest then; the same one at most every pool_refresh_s, the machine holding it for
`fresh_ms`; head office quiet for the timeout still takes the jackpot offline, and its next
value is journaled at once. A real broker; head office's publishes made by the test."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from shared.link import contract
from shared.link.transport import connect
from tests import mqtt_broker
from tests.support.link import FAST, POOL, make_table, run, start, wait_for

UTC = "2026-11-27T00:00:00Z"
OPTIONS = replace(FAST, tick_every_s=0.1, pool_show_every_s=3.0, pool_refresh_s=1.5)


@pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")
def test_the_link_journals_pool_values_only_as_often_as_the_meter_needs(broker, tmp_path) -> None:  # type: ignore[no-untyped-def]
    async def main() -> None:
        t = make_table("T1", tmp_path / "T1", broker, autoplay=False, options=OPTIONS,
                       pool_timeout_s=2.0)
        await start(t)
        journal = t.service.journal
        assert journal is not None

        def journaled() -> list[dict[str, Any]]:
            return [r.data for r in journal.iter_events() if r.kind == "ho.pool"]

        async with connect(broker.settings("headoffice-1")) as ho:
            async def publish(amount: int, version: int, **kw: int) -> None:
                # Retained, as head office publishes them: a table subscribing later gets it.
                await ho.publish(contract.pool_topic(POOL), contract.dumps(
                    contract.pool_message(POOL, amount, version, UTC, **kw)), retain=True)

            await wait_for(lambda: t.link.connected, 10, "the table's link up")
            await publish(500_000, 1)
            await wait_for(lambda: len(journaled()) == 1, 10, "the first value")
            assert journaled()[0]["fresh_ms"] == 3_500  # pool_refresh_s + pool_timeout_s
            # Head office's heartbeat: the same value every 0.1 s for 3 s; journaled about
            # every 1.5 s (not 30 times), and the jackpot stays online throughout. The bound
            # is on the time the heartbeats really took (a loaded machine stretches the loop),
            # so the test asserts the rate, not the machine's speed.
            loop = asyncio.get_running_loop()
            began = loop.time()
            for _ in range(30):
                await publish(500_000, 1)
                await asyncio.sleep(0.1)
                assert t.status()["jackpot"] == "online"
            took = loop.time() - began
            assert 2 <= len(journaled()) <= 2 + int(took / OPTIONS.pool_refresh_s)
            # Other tables' contributions: 20 higher values in ~1 s. Held back, then the
            # newest one (at most one a turn of 3 s).
            before = len(journaled())
            for i in range(20):
                await publish(500_100 + 100 * i, 2 + i)
                await asyncio.sleep(0.05)
            await wait_for(lambda: journaled()[-1]["version"] == 21, 10, "the newest value")
            climbed = journaled()[before:]
            assert len(climbed) <= 2 and climbed[-1]["amount"] == 502_000
            meter = t.service.devices["meter"]
            await wait_for(lambda: meter.pool_shown == 502_000, 5, "the meter on the newest")
            # Another table's hit: the lower value (an award) at once; a higher value held
            # just before it is never shown (the meter never goes above the pool).
            await publish(502_100, 22)
            await publish(300_000, 23, awards=1)
            await wait_for(lambda: journaled()[-1]["version"] == 23, 10, "the lower value")
            assert 22 not in [p["version"] for p in journaled()]
            await wait_for(lambda: meter.pool_shown == 300_000, 5, "the meter lowered")
            # Head office quiet past the timeout: offline (11.11); its next value, the same as
            # before, is journaled at once and the jackpot is back.
            await wait_for(lambda: t.status()["jackpot"] == "offline", 10, "offline when quiet")
            quiet = [r.data for r in journal.iter_events() if r.kind == "tick"]
            assert quiet and quiet[-1]["pool_quiet_ms"] >= 1_000
            n = len(journaled())
            await publish(300_000, 23, awards=1)
            await wait_for(lambda: len(journaled()) == n + 1, 10, "the value after the quiet")
            await wait_for(lambda: t.status()["jackpot"] == "online", 5, "online again")
        await t.stop()

    run(main())
