"""The MQTT contract against a real Mosquitto with TLS and the repo's ACL: a table cannot
impersonate another nor publish a pool value; duplicated and reordered deliveries are applied
once, in order; malformed messages are refused with a reason and the valid ones behind them are
not lost (both directions); two tables hitting a Royal Flush 10 ms apart are served in order,
each paid, the books balanced."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from controller.sim.uth import royal_flush_top
from shared.link import contract
from shared.link.transport import Connection, LinkError, connect
from tests import mqtt_broker
from tests.support.link import (
    POOL,
    assert_ledger_matches,
    drain,
    event,
    head_office,
    make_table,
    run,
    start,
    to_the_river,
    wait_for,
)
from tests.test_headoffice_ledger import body, inc, result

pytestmark = pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")


async def collect(conn: Connection, into: list[tuple[str, bytes]]) -> None:
    with contextlib.suppress(LinkError):
        async for m in conn.messages():
            into.append((m.topic, m.payload))


def test_a_table_cannot_impersonate_another_nor_publish_a_pool_value(broker, tmp_path) -> None:
    async def main() -> None:
        async with head_office(tmp_path / "ho.db", broker, heartbeat_s=0.1) as (worker,):
            seen: list[tuple[str, bytes]] = []
            async with connect(broker.settings("T1")) as t1, connect(
                broker.settings("T2")
            ) as t2, connect(broker.settings("T3")) as t3:
                await t3.subscribe([contract.pool_topic(POOL)])
                with contextlib.suppress(LinkError):  # refused, or accepted and never delivered
                    await t2.subscribe([contract.ack_topic("T1")])
                spy: list[tuple[str, bytes]] = []
                readers = [asyncio.create_task(collect(t3, seen)),
                           asyncio.create_task(collect(t2, spy))]
                forged = body("T1", 1, *inc(1, 7))
                # T2 publishes on T1's topic, and as T1 on its own topic; T1 forges pool values.
                await t2.publish(contract.outbox_topic("T1"), contract.dumps(forged))
                await t2.publish(contract.outbox_topic("T2"), contract.dumps(forged))
                fake = contract.pool_message(POOL, 1, 10**9, "2026-01-01T00:00:00Z")
                await t1.publish(contract.pool_topic(POOL), contract.dumps(fake), retain=True)
                await t1.publish(contract.award_topic("T1"), contract.dumps(
                    contract.award_message("T1", POOL, 1, 1, [{"box": 1, "award": "royal_flush",
                                                               "amount": 10**8}])))
                # A genuine message from T1 still goes through, and its ack reaches only T1.
                await t1.subscribe([contract.ack_topic("T1")])
                acks: list[tuple[str, bytes]] = []
                readers.append(asyncio.create_task(collect(t1, acks)))
                await t1.publish(contract.outbox_topic("T1"),
                                 contract.dumps(body("T1", 1, *inc(1, 2))))
                await wait_for(lambda: acks, 5, "T1's ack")
                await asyncio.sleep(0.5)
                for r in readers:
                    r.cancel()
            versions = [contract.parse_pool(p) for _, p in seen]
            assert versions and all(v["amount"] != 1 for v in versions)
            assert not spy  # T2 never saw T1's ack
            assert contract.parse_ack(acks[-1][1], "T1") == 1
            assert worker.ledger.table_totals("T1") == {"wagered": 200, "paid": 0, "last_seq": 1}
            assert worker.ledger.table_totals("T2")["last_seq"] == 0  # T2's forgery refused
            assert worker.counters["malformed"] == 1  # table T1 on T2's topic
            assert worker.ledger.pool(POOL).wagers_in == 200  # type: ignore[union-attr]

    run(main())


def test_duplicated_and_reordered_deliveries_are_applied_once_in_order(broker,
                                                                      ledger_url) -> None:
    async def main() -> None:
        async with head_office(ledger_url, broker) as (worker,):
            msgs = [body("T1", 1, *inc(1, 3)), body("T1", 2, *result(1)),
                    body("T1", 3, *inc(2, 1)), body("T1", 4, *inc(2, 1, "jackpot_cancel")),
                    body("T1", 5, *result(2, "voided")), body("T1", 6, *inc(3, 5))]
            order = [2, 1, 1, 3, 5, 4, 2, 6, 6, 1, 5]
            acks: list[int] = []
            async with connect(broker.settings("T1")) as t1:
                await t1.subscribe([contract.ack_topic("T1")])
                got: list[tuple[str, bytes]] = []
                reader = asyncio.create_task(collect(t1, got))
                for n in order:
                    await t1.publish(contract.outbox_topic("T1"), contract.dumps(msgs[n - 1]))
                await wait_for(lambda: any(contract.parse_ack(p, "T1") == 6 for _, p in got), 5,
                               "ack of 6")
                # 1 (second copy), 2 (after it was applied), 6, 1, 5: five duplicates.
                await wait_for(lambda: worker.counters["duplicates"] == 5, 5, "the duplicates")
                reader.cancel()
                acks = [contract.parse_ack(p, "T1") for _, p in got]
            assert acks == sorted(acks)  # cumulative acks never go back
            rows = worker.ledger.db.execute("SELECT seq, status FROM messages ORDER BY seq")
            assert [(r["seq"], r["status"]) for r in rows] == [(i, "applied") for i in range(1, 7)]
            assert worker.ledger.table_totals("T1")["wagered"] == 800
            pool = worker.ledger.pool(POOL)
            assert pool is not None and pool.wagers_in == 800 and pool.imbalance() == 0
            assert worker.counters["duplicates"] == 5

    run(main())


def test_malformed_messages_to_head_office_are_refused_and_the_rest_applied(
    broker, tmp_path
) -> None:
    async def main() -> None:
        async with head_office(tmp_path / "ho.db", broker) as (worker,):
            async with connect(broker.settings("T1")) as t1:
                topic = contract.outbox_topic("T1")
                await t1.publish(topic, b"\xff\xfe not json")
                await t1.publish(topic, b'{"v": 2, "table": "T1", "seq": 1}')
                await t1.publish(topic, b"[1, 2, 3]")
                await t1.publish(topic, contract.dumps({**body("T1", 1, *inc(1)), "seq": "one"}))
                t, p = inc(1, 2)
                await t1.publish(topic, contract.dumps(body("T1", 1, t, {**p, "amount": 5})))
                await t1.publish(topic, contract.dumps(body("T1", 2, *inc(2, 4))))
                await t1.publish(contract.birth_topic("T1"), b'{"v": 1}')
                await wait_for(lambda: worker.ledger.table_totals("T1")["last_seq"] == 2, 5,
                               "the valid message")
            assert worker.counters["malformed"] == 5
            rows = worker.ledger.db.execute("SELECT seq, status, reason FROM messages ORDER BY seq")
            assert [r["status"] for r in rows] == ["refused", "applied"]
            assert "amount 5" in rows[0]["reason"]
            assert worker.ledger.table_totals("T1")["wagered"] == 400

    run(main())


def test_malformed_messages_to_a_table_are_refused_and_it_plays_on(broker, tmp_path) -> None:
    async def main() -> None:
        async with head_office(tmp_path / "ho.db", broker) as (worker,):
            table = await start(make_table("T1", tmp_path / "T1", broker))
            await wait_for(lambda: len(table.rounds) >= 3, 30, "3 rounds")
            async with connect(broker.settings("headoffice-8", "rogue-ho",
                                               session_expiry_s=0)) as ho:
                for junk in (b"{", b'{"v":1,"pool":"p1","amount":-5,"version":3}',
                             b'{"v":1,"pool":"p1","amount":1.5,"version":3}',
                             b'{"v":1,"pool":"p2","amount":100,"version":3}'):
                    await ho.publish(contract.pool_topic(POOL), junk)
                await ho.publish(contract.award_topic("T1"), b'{"v":1,"table":"T1","round":0}')
                # (An ack beyond the journal is no junk: test_an_ack_beyond_the_journal_...)
                await ho.publish(contract.ack_topic("T1"), b'{"v":1,"table":"T1","upto":-1}')
            await wait_for(lambda: table.link.counters["refused"] >= 6, 5, "refusals")
            await wait_for(lambda: len(table.rounds) >= 8, 30, "5 more rounds")
            await drain([table])
            assert table.status()["jackpot"] == "online"
            await table.stop()
            assert_ledger_matches(worker.ledger, [table])

    run(main())


def test_an_ack_beyond_the_journal_takes_the_table_out_of_service(broker, tmp_path) -> None:
    """Head office applied a message the journal does not have: the journal lost records (a
    lost WAL, an older copy put back). The table stops playing and says so with both numbers
    (issue 12 item 3)."""
    async def main() -> None:
        async with head_office(tmp_path / "ho.db", broker):
            table = await start(make_table("T1", tmp_path / "T1", broker))
            await wait_for(lambda: len(table.rounds) >= 3, 30, "3 rounds")
            async with connect(broker.settings("headoffice-8", "rogue-ho",
                                               session_expiry_s=0)) as ho:
                await ho.publish(contract.ack_topic("T1"),
                                 contract.dumps(contract.ack_message("T1", 10**6)))
            await wait_for(lambda: table.service.out_of_service is not None, 10,
                           "out of service")
            reason = table.service.out_of_service or ""
            assert table.link.relay.stats.bad_acks == 1  # type: ignore[union-attr]
            last = int(reason.split("the journal's last is message ")[1].split()[0])
            assert reason.startswith("journal lost data: head office acknowledged outbox "
                                     "message 1000000, the journal's last is message ")
            assert 0 < last < 10**6
            played = len(table.rounds)
            await asyncio.sleep(1.0)
            assert len(table.rounds) == played  # no round after it
            await table.stop()

    run(main())


def test_two_tables_hit_a_royal_flush_10ms_apart(broker, ledger_url, tmp_path) -> None:
    async def main() -> None:
        # Paid without waiting for verification (verify_from none): this is about the order.
        async with head_office(ledger_url, broker, verify_from=None,
                               dual_control_from=None) as (worker,):
            tables = []
            for name, suit in (("A", "h"), ("B", "s")):
                t = make_table(name, tmp_path / name, broker, autoplay=False)
                t.shuffler.stack_next(royal_flush_top(suit))
                tables.append(await start(t))
            a, b = tables
            for t in tables:
                await to_the_river(t)
            await wait_for(lambda: all(not t.service.journal.pending_outbox(limit=1)  # type: ignore[union-attr]
                                       for t in tables), 5, "increments applied")
            before = worker.ledger.pool(POOL)
            assert before is not None and before.wagers_in == 400
            a.service.emit(event("dealer.dealer_hand"))
            await asyncio.sleep(0.010)
            b.service.emit(event("dealer.dealer_hand"))
            # Both hands journaled first: drain() alone could look before B's event was
            # processed (no outbox, no hit pending yet) and return with B's hit never sent.
            for t in tables:
                await t.service.idle()
            await drain(tables, 20)  # every hit answered, PENDING resolved
            hits = worker.ledger.db.execute(
                "SELECT hit_no, table_id, paid, pool_before, pool_after, award FROM hits"
                " ORDER BY hit_no")
            # Serialised in arrival order at head office (usually A, 10 ms earlier; on a busy
            # machine the wire may reorder them): the first takes the meter as it stood, the
            # second the meter the first left.
            assert sorted(h["table_id"] for h in hits) == ["A", "B"]
            first, second = hits
            assert first["pool_before"] == before.amount
            assert second["pool_before"] == first["pool_after"]
            import json

            by_id = {t.id: t for t in tables}
            for h in hits:
                t = by_id[h["table_id"]]
                payouts: list[dict[str, Any]] = json.loads(h["award"])["payouts"]
                royal = [p for p in payouts if p["award"] == "royal_flush"]
                assert [p["box"] for p in royal] == [2]
                assert t.status()["pool"]["ledger"]["paid"] == h["paid"] > 0
            pool = worker.ledger.pool(POOL)
            assert pool is not None and pool.hits == 2 and pool.imbalance() == 0
            for t in tables:
                await t.stop()
            assert_ledger_matches(worker.ledger, tables)

    run(main())


def test_pool_values_a_meter_sees_only_go_forward_and_end_at_the_ledger(broker) -> None:
    # Head office publishes pool values from one task, newest only, without holding up the
    # ledger (headoffice/worker.py): under a burst of increments the meter may skip versions,
    # but never sees an older one after a newer one, and ends on what the ledger holds.
    async def main() -> None:
        async with head_office(broker.root / "ho.db", broker, heartbeat_s=0.2) as (worker,):
            seen: list[tuple[int, int]] = []
            async with connect(broker.settings("T2")) as meter, \
                    connect(broker.settings("T1")) as t1:
                await meter.subscribe([contract.pool_topic(POOL)])
                await t1.subscribe([contract.ack_topic("T1")])

                async def watch() -> None:
                    with contextlib.suppress(LinkError):
                        async for m in meter.messages():
                            value = contract.parse_pool(m.payload)
                            seen.append((value["version"], value["amount"]))

                acks: list[tuple[str, bytes]] = []
                readers = [asyncio.create_task(watch()), asyncio.create_task(collect(t1, acks))]
                window = asyncio.Semaphore(32)

                async def send(seq: int) -> None:
                    async with window:
                        await t1.publish(contract.outbox_topic("T1"),
                                         contract.dumps(body("T1", seq, *inc(seq, 2))))

                await asyncio.gather(*(send(s) for s in range(1, 301)))
                await wait_for(lambda: any(contract.parse_ack(p, "T1") == 300
                                           for _, p in acks), 20, "ack of 300")
                pool = worker.ledger.pool(POOL)
                assert pool is not None
                await wait_for(lambda: bool(seen) and seen[-1][0] == pool.version, 5,
                               "the meter on the ledger's version")
                for r in readers:
                    r.cancel()
            versions = [v for v, _ in seen]
            assert versions == sorted(versions)
            assert len({v for v, _ in seen}) == len(set(seen))  # one amount per version
            assert seen[-1] == (pool.version, pool.amount)
            assert pool.wagers_in == 300 * 200

    run(main())
