"""Issue 13, the link's side: every meter shows the current pool (UTH 2.3, 2.4.3, 15.1.3) and
linked tables use the same qualifying wager (UTH 15.2.5.3).

The contract first (no broker): a pool value carries two optional, bounded fields, `awards` and
`wager`, and an old value without them gives the same `ho.pool` event as before. Then end to
end against a real Mosquitto (tests/support/link.py): another table's hit lowers a linked
table's meter at once, and a table whose jackpot wager is not the pool's has its jackpot off
while head office refuses its increment and leaves the pool as it was."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from controller.sim.uth import royal_flush_top
from shared.link import contract
from shared.link.transport import LinkError, connect
from tests import mqtt_broker
from tests.support.link import (
    POOL,
    assert_ledger_matches,
    drain,
    emit_and_wait,
    head_office,
    make_table,
    run,
    start,
    to_the_river,
    wait_for,
)
from tests.test_headoffice_ledger import body, inc

UTC = "2026-01-01T00:00:00Z"
needs_broker = pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")


# -- the contract ------------------------------------------------------------------------------
def test_an_old_pool_value_parses_to_the_same_event() -> None:
    old = json.dumps({"v": 1, "pool": "p1", "amount": 512_345, "version": 7, "utc": UTC})
    assert contract.parse_pool(old) == {"pool": "p1", "amount": 512_345, "version": 7}
    # Built without the new fields, a value is byte-identical to before.
    assert contract.dumps(contract.pool_message("p1", 512_345, 7, UTC)) == (
        b'{"amount":512345,"pool":"p1","utc":"2026-01-01T00:00:00Z","v":1,"version":7}')


def test_a_new_pool_value_carries_awards_and_wager() -> None:
    raw = contract.dumps(contract.pool_message("p1", 500_000, 9, UTC, awards=3, wager=500))
    assert contract.parse_pool(raw) == {"pool": "p1", "amount": 500_000, "version": 9,
                                        "awards": 3, "wager": 500}
    # Either alone; a JSON null counts as absent.
    assert contract.parse_pool(contract.dumps(
        contract.pool_message("p1", 1, 2, UTC, awards=0)))["awards"] == 0
    nulls = {"v": 1, "pool": "p1", "amount": 1, "version": 2, "awards": None, "wager": None}
    assert contract.parse_pool(json.dumps(nulls)) == {"pool": "p1", "amount": 1, "version": 2}


@pytest.mark.parametrize(("field", "value"), [
    ("awards", -1), ("awards", contract.MAX_AWARDS + 1), ("awards", 10**18), ("awards", True),
    ("awards", "3"), ("awards", 1.5),
    ("wager", 0), ("wager", -100), ("wager", contract.MAX_CENTS + 1), ("wager", False),
    ("wager", "500"), ("wager", [500]),
])
def test_out_of_bounds_awards_or_wager_is_refused(field: str, value: object) -> None:
    raw = json.dumps({"v": 1, "pool": "p1", "amount": 1, "version": 2, field: value})
    # Named by field, or by the digit bound every integer on the wire has (contract.MAX_DIGITS).
    with pytest.raises(contract.SchemaError, match=f"{field}|at most 18"):
        contract.parse_pool(raw)


def test_the_bounds_themselves_are_accepted() -> None:
    raw = json.dumps({"v": 1, "pool": "p1", "amount": 1, "version": 2,
                      "awards": contract.MAX_AWARDS, "wager": contract.MAX_CENTS})
    assert contract.parse_pool(raw)["awards"] == contract.MAX_AWARDS


# -- end to end --------------------------------------------------------------------------------
@needs_broker
def test_a_linked_meter_comes_down_to_the_pool_after_another_tables_hit(
        broker, ledger_url, tmp_path) -> None:
    # UTH 2.3, 2.4.3, 15.1.3: the hit at A lowers the pool; B's meter shows the lower value as soon
    # as head office publishes it, never the old, higher figure.
    async def main() -> None:
        async with head_office(ledger_url, broker, verify_from=None, dual_control_from=None,
                               pool_wager=100) as (worker,):
            a = make_table("A", tmp_path / "A", broker, autoplay=False)
            a.shuffler.stack_next(royal_flush_top("h"))
            b = make_table("B", tmp_path / "B", broker, autoplay=False)
            tables = [await start(a), await start(b)]
            await to_the_river(a)
            await wait_for(lambda: not a.service.journal.pending_outbox(limit=1),  # type: ignore[union-attr]
                           5, "A's increment applied")
            before = worker.ledger.pool(POOL)
            assert before is not None and before.hits == 0
            meter_b = b.service.devices["meter"]
            await wait_for(lambda: meter_b.pool_shown == before.amount, 5,
                           "B's meter on the pool before the hit")
            await emit_and_wait(a, "dealer.dealer_hand")
            assert a.status()["pool"]["pending"]  # the hit went to head office
            await drain(tables, 20)
            after = worker.ledger.pool(POOL)
            assert after is not None and after.hits == 1 and after.amount < before.amount
            await wait_for(lambda: meter_b.pool_shown == after.amount, 5,
                           "B's meter lowered to the pool")
            # Lowered as an award (the value said so), not refused and kept high.
            assert meter_b.counters["decrease_refused"] == 0
            assert b.service.state.jackpot["awards"] == 1  # type: ignore[union-attr]
            assert b.status()["jackpot"] == "online"
            # What B journaled: the value with the pool's awards and wager.
            pools = [r.data for r in b.service.journal.iter_events() if r.kind == "ho.pool"]  # type: ignore[union-attr]
            # fresh_ms: the link's horizon for the value (LinkOptions.pool_refresh_s + timeout).
            assert pools[-1] == {"pool": POOL, "amount": after.amount,
                                 "version": after.version, "awards": 1, "wager": 100,
                                 "fresh_ms": 62_000}
            assert all(p["amount"] <= before.amount for p in pools)
            for t in tables:
                await t.stop()
            assert_ledger_matches(worker.ledger, tables)

    run(main())


@needs_broker
def test_a_table_with_another_wager_is_off_and_its_increment_refused(
        broker, ledger_url, tmp_path) -> None:
    # UTH 15.2.5.3: the pool qualifies with 200 c, table T3 with 100 c.
    async def main() -> None:
        async with head_office(ledger_url, broker, pool_wager=200) as (worker,):
            t3 = await start(make_table("T3", tmp_path / "T3", broker, autoplay=False))
            await wait_for(lambda: "wager_mismatch" in t3.service.state.jackpot, 10,  # type: ignore[union-attr]
                           "T3 told the pool's wager")
            assert t3.service.state.jackpot["wager_mismatch"] == 200  # type: ignore[union-attr]
            await asyncio.sleep(0.5)  # fresh pool values keep coming: it stays off
            assert t3.status()["jackpot"] == "offline"
            assert t3.service.devices["meter"].view.mode == "offline"
            before = worker.ledger.pool(POOL)
            assert before is not None
            # Head office's own check, whatever a table sends: T1 at 100 c is refused,
            # acknowledged, alarmed and counted; the pool is unchanged. At 200 c it is applied.
            acks: list[int] = []
            async with connect(broker.settings("T1")) as t1:
                await t1.subscribe([contract.ack_topic("T1")])

                async def collect() -> None:
                    with contextlib.suppress(LinkError):
                        async for m in t1.messages():
                            acks.append(contract.parse_ack(m.payload, "T1"))

                reader = asyncio.create_task(collect())
                await t1.publish(contract.outbox_topic("T1"),
                                 contract.dumps(body("T1", 1, *inc(1, 2))))
                await wait_for(lambda: 1 in acks, 10, "the refused increment acknowledged")
                after = worker.ledger.pool(POOL)
                assert after == before
                row = worker.ledger.db.one("SELECT status, reason FROM messages"
                                           " WHERE table_id = 'T1' AND seq = 1")
                assert row is not None and row["status"] == "refused"
                assert "15.2.5.3" in row["reason"]
                alarms = worker.ledger.report()["alarms"]
                assert any("15.2.5.3" in a["text"] and a["table_id"] == "T1" for a in alarms)
                assert worker.counters["wager_refused"] == 1
                t, p = inc(2, 2)
                good = {**p, "wager": 200, "amount": 400}
                await t1.publish(contract.outbox_topic("T1"),
                                 contract.dumps(body("T1", 2, t, good)))
                await wait_for(lambda: 2 in acks, 10, "the increment at 200 c acknowledged")
                reader.cancel()
            pool = worker.ledger.pool(POOL)
            assert pool is not None and pool.wagers_in == before.wagers_in + 400
            assert pool.imbalance() == 0
            await t3.stop()

    run(main())


@needs_broker
def test_an_existing_pool_keeps_the_ledgers_wager_and_the_worker_says_so(
        broker, ledger_url, caplog) -> None:
    # The configuration never silently overrides the ledger (docs/headoffice.md "Parameters"):
    # a pool made without a wager keeps none until `pool set --wager`, and the worker warns.
    from fractions import Fraction

    from headoffice.ledger import Ledger
    from headoffice.pools import Params
    from tests.support.link import SEED

    led = Ledger.open(ledger_url)
    led.ensure_pool(POOL, Params(seed=SEED, increment=Fraction(1, 4), hidden=Fraction(1, 20)))
    led.close()

    async def main() -> None:
        async with head_office(ledger_url, broker, pool_wager=200) as (worker,):
            seen: list[dict[str, object]] = []
            async with connect(broker.settings("T2")) as meter:
                await meter.subscribe([contract.pool_topic(POOL)])

                async def watch() -> None:
                    with contextlib.suppress(LinkError):
                        async for m in meter.messages():
                            seen.append(contract.parse_pool(m.payload))

                reader = asyncio.create_task(watch())
                await wait_for(lambda: bool(seen), 10, "a pool value")
                reader.cancel()
            assert "wager" not in seen[-1] and seen[-1]["awards"] == 0
            assert worker.ledger.pool(POOL).params.wager is None  # type: ignore[union-attr]

    with caplog.at_level("WARNING", logger="tablectl.headoffice"):
        run(main())
    assert any("keeps its ledger's parameters" in r.getMessage() for r in caplog.records)
