"""One message must not take a service down (issue 12): every parser of the wire contract
bounds its input (size, depth, integer digits, string length) and refuses with a SchemaError;
head office and the table's link count and log a refusal and keep serving; their long-lived
tasks are supervised. The broker binds client ids to certificate names, so a table's
certificate cannot take head office's client id. End to end with a real Mosquitto (TLS, the
repo's ACL): the table's chain head reaches head office, and a Royal Flush waits for an
operator before its award reaches the table."""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from typing import Any

import pytest

from controller.link.supervise import supervised
from controller.sim.uth import royal_flush_top
from shared.link import contract
from shared.link.transport import Backoff, connect
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
from tests.test_headoffice_ledger import body, inc

needs_broker = pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")

HUGE = b"9" * 5000  # more digits than Python's int() takes from a string (4300)
JUNK = {
    "a 5,000-digit integer": b'{"v":1,"table":"T1","upto":' + HUGE + b"}",
    "a 5,000-digit negative integer": b'{"v":1,"table":"T1","seq":-' + HUGE + b"}",
    "an integer beyond a BIGINT": b'{"v":1,"table":"T1","upto":99999999999999999999}',
    "nested 100,000 deep": b'{"v":1,"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "nested 20 deep": b'{"v":1,"x":' + b"[" * 20 + b"]" * 20 + b"}",
    "more bytes than the limit": b'{"v":1,"x":"' + b"a" * (contract.MAX_PAYLOAD + 1) + b'"}',
    "a 10,000-character string": b'{"v":1,"table":"' + b"T" * 10_000 + b'"}',
    "NaN": b'{"v":1,"table":"T1","upto":NaN}',
    "not UTF-8": b'{"v":1,"table":"\xff\xfe"}',
    "garbage": b"\x00\x01garbage{",
    "not an object": b"[1, 2, 3]",
}
PARSERS = {
    "outbox": lambda raw: contract.parse_outbox(raw, "T1"),
    "birth": lambda raw: contract.parse_birth(raw, "T1"),
    "status": lambda raw: contract.parse_status(raw, "T1"),
    "ack": lambda raw: contract.parse_ack(raw, "T1"),
    "pool": contract.parse_pool,
    "award": lambda raw: contract.parse_award(raw, "T1"),
}


@pytest.mark.parametrize("parser", sorted(PARSERS))
@pytest.mark.parametrize("junk", sorted(JUNK))
def test_every_parser_refuses_junk_with_a_schema_error(parser: str, junk: str) -> None:
    with pytest.raises(contract.SchemaError) as err:
        PARSERS[parser](JUNK[junk])
    assert len(str(err.value)) < 400  # a log line, not the payload


def test_the_bounds_leave_real_messages_alone() -> None:
    msg = body("T1", 7, *inc(3, 7))
    assert contract.parse_outbox(contract.dumps(msg), "T1") == msg
    assert contract.parse_ack(contract.dumps(contract.ack_message("T1", 10**15)), "T1") == 10**15
    hashed = contract.outbox_message("T1", 1, 1, "round_result", "u", {"round": 1}, "0f" * 32)
    assert contract.parse_outbox(contract.dumps(hashed))["journal_hash"] == "0f" * 32
    with pytest.raises(contract.SchemaError, match="journal_hash"):
        contract.parse_outbox(contract.dumps({**hashed, "journal_hash": "xyz"}))


def test_a_dying_task_is_logged_and_restarted(caplog: pytest.LogCaptureFixture) -> None:
    runs: list[int] = []

    async def task() -> None:
        runs.append(1)
        if len(runs) < 3:
            raise ValueError(f"boom {len(runs)}")
        await asyncio.sleep(3600)

    async def main() -> Counter[str]:
        counters: Counter[str] = Counter()
        t = asyncio.create_task(supervised("t", task, logging.getLogger("test.sup"), counters,
                                           backoff=Backoff(0.001, 0.01)))
        await wait_for(lambda: len(runs) == 3, 5, "third start")
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        return counters

    counters = asyncio.run(main())
    assert counters == Counter({"task_failures": 2, "t_restarts": 2})
    assert "task t failed; started again" in caplog.text and "boom 2" in caplog.text


# -- head office --------------------------------------------------------------------------------
@needs_broker
def test_head_office_counts_junk_and_keeps_serving(broker, ledger_url) -> None:
    async def main() -> None:
        async with head_office(ledger_url, broker) as (worker,):
            async with connect(broker.settings("T1")) as t1:
                await t1.subscribe([contract.ack_topic("T1")])
                for leaf in ("outbox", "birth", "status"):
                    for junk in JUNK.values():
                        await t1.publish(f"{contract.PREFIX}/table/T1/{leaf}", junk)
                await t1.publish(contract.outbox_topic("T1"),
                                 contract.dumps(body("T1", 1, *inc(1, 3))))
                await wait_for(lambda: worker.ledger.table_totals("T1")["last_seq"] == 1, 10,
                               "the valid message behind the junk")
            assert worker.counters["malformed"] == 3 * len(JUNK)
            assert worker.counters["connects"] == 1 and worker.counters["session_failures"] == 0
            assert worker.ledger.table_totals("T1")["wagered"] == 300

    run(main())


@needs_broker
def test_a_failing_ledger_call_restarts_the_session_not_the_process(
    broker, tmp_path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        async with head_office(tmp_path / "ho.db", broker) as (worker,):
            real = worker.ledger.apply_batch
            calls: list[int] = []

            def failing_once(items: Any) -> Any:
                calls.append(len(items))
                if len(calls) == 1:
                    raise RuntimeError("disk on fire")
                return real(items)

            worker.ledger.apply_batch = failing_once  # type: ignore[method-assign]
            async with connect(broker.settings("T1")) as t1:
                msg = contract.dumps(body("T1", 1, *inc(1)))
                await t1.publish(contract.outbox_topic("T1"), msg)
                await wait_for(lambda: worker.counters["connects"] == 2, 10, "a new session")
                await t1.publish(contract.outbox_topic("T1"), msg)  # the table's resend
                await wait_for(lambda: worker.ledger.table_totals("T1")["last_seq"] == 1, 10,
                               "applied after the restart")
            assert worker.counters["session_failures"] == 1
        assert "session failed; reconnecting" in caplog.text and "disk on fire" in caplog.text

    run(main())


@needs_broker
def test_an_unknown_table_is_refused_counted_and_alarmed_once(broker, ledger_url) -> None:
    async def main() -> None:
        async with head_office(ledger_url, broker) as (worker,):
            before = worker.ledger.pool(POOL)
            # A certificate the CA signed for a name that is no configured table. Its births
            # reach head office (shared by the workers); its outbox is read by no worker, as
            # no partition holds it (headoffice/routing.py): nothing of it is applied.
            async with connect(broker.settings("ROGUE")) as rogue:
                for seq in (1, 2):
                    await rogue.publish(contract.outbox_topic("ROGUE"),
                                        contract.dumps(body("ROGUE", seq, *inc(seq))))
                    await rogue.publish(contract.birth_topic("ROGUE"), contract.dumps(
                        contract.birth_message("ROGUE", "2026-01-01T00:00:00.000Z", {})))
                await wait_for(lambda: worker.counters["unknown_table"] == 2, 10, "refusals")
            assert worker.ledger.table_totals("ROGUE")["last_seq"] == 0
            assert worker.ledger.pool(POOL) == before
            texts = [a["text"] for a in worker.ledger.report()["alarms"]]
            assert sum("'ROGUE' refused: not an enrolled table" in t for t in texts) == 1

    run(main())


@needs_broker
def test_a_table_certificate_cannot_take_head_offices_client_id(broker, ledger_url) -> None:
    async def main() -> None:
        async with head_office(ledger_url, broker) as (worker,):
            ho_id = worker.cfg.broker.client_id  # type: ignore[union-attr]
            for _ in range(3):  # the MQTT takeover: CONNECT with the id of a connected client
                async with connect(broker.settings("T1", client_id=ho_id)) as thief:
                    await thief.publish(contract.outbox_topic("T1"),
                                        contract.dumps(body("T1", 1, *inc(1))))
                    await asyncio.sleep(0.3)
            await wait_for(lambda: worker.ledger.table_totals("T1")["last_seq"] == 1, 10,
                           "head office still reading")
            assert worker.counters["connects"] == 1  # never disconnected
            assert "closing old connection" not in broker.log()

    run(main())


# -- the table's link ---------------------------------------------------------------------------
@needs_broker
def test_the_table_link_refuses_junk_logs_and_plays_on(broker, tmp_path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        async with head_office(tmp_path / "ho.db", broker) as (worker,):
            table = await start(make_table("T1", tmp_path / "T1", broker))
            await wait_for(lambda: len(table.rounds) >= 2 and table.link.connected, 30,
                           "2 rounds, linked")
            connects = table.link.counters["connects"]
            async with connect(broker.settings("headoffice-8", session_expiry_s=0)) as ho:
                for junk in JUNK.values():
                    for topic in (contract.ack_topic("T1"), contract.award_topic("T1"),
                                  contract.pool_topic(POOL)):
                        await ho.publish(topic, junk)
            await wait_for(lambda: table.link.counters["refused"] >= 3 * len(JUNK), 10,
                           "refusals")
            await wait_for(lambda: len(table.rounds) >= 6, 30, "4 more rounds")
            await drain([table])  # acks still arrive: the link kept running
            assert table.link.connected and table.link.counters["connects"] == connects
            assert table.link.counters["session_failures"] == 0
            assert table.status()["jackpot"] == "online"
            await table.stop()
            assert_ledger_matches(worker.ledger, [table])
        assert "link: message refused: ack: 5028 bytes, more than 4096" in caplog.text
        assert "link: message refused: award: an integer of 5000 digits" in caplog.text

    run(main())


@needs_broker
def test_head_office_keeps_the_tables_chain_head(broker, tmp_path) -> None:
    async def main() -> None:
        async with head_office(tmp_path / "ho.db", broker) as (worker,):
            table = await start(make_table("T1", tmp_path / "T1", broker))
            await wait_for(lambda: len(table.rounds) >= 3, 30, "3 rounds")
            await drain([table])
            (row,) = [t for t in worker.ledger.report()["tables"] if t["id"] == "T1"]
            journal = table.service.journal
            assert journal is not None
            record = next(journal.iter_events(row["journal_seq"], row["journal_seq"]))
            assert row["chain_seq"] == row["last_seq"] > 0
            assert row["chain_hash"] == record.hash  # what an auditor compares
            await table.stop()

    run(main())


@needs_broker
def test_a_royal_waits_for_an_operator_then_its_award_reaches_the_table(
    broker, ledger_url, tmp_path
) -> None:
    async def main() -> None:
        async with head_office(ledger_url, broker) as (worker,):
            table = make_table("A", tmp_path / "A", broker, autoplay=False)
            table.shuffler.stack_next(royal_flush_top("h"))
            await start(table)
            await to_the_river(table)
            before = worker.ledger.pool(POOL)
            table.service.emit(event("dealer.dealer_hand"))
            await wait_for(lambda: bool(worker.ledger.held_hits(pending_only=True)), 10,
                           "the hit held")
            await asyncio.sleep(1.0)  # heartbeats pass: nothing is paid meanwhile
            assert table.status()["pool"]["pending"]  # PENDING at the table
            assert worker.ledger.pool(POOL).amount >= before.amount  # type: ignore[union-attr]
            assert worker.ledger.pool(POOL).hits == 0  # type: ignore[union-attr]
            (held,) = worker.ledger.held_hits()
            award = await asyncio.to_thread(
                _approve, ledger_url, held["hold_no"])
            await wait_for(lambda: not table.status()["pool"]["pending"], 10, "award applied")
            paid = sum(p["amount"] for p in award["payouts"])
            assert table.status()["pool"]["ledger"]["paid"] == paid > 0
            assert worker.counters["approved_awards_sent"] == 1
            await drain([table])
            await table.stop()
            assert_ledger_matches(worker.ledger, [table])

    run(main())


@needs_broker
def test_a_royal_waits_for_the_attendants_verification_at_the_table(
    broker, ledger_url, tmp_path
) -> None:
    """UTH rule 15: the large award waits. The attendant's `jackpot_verify` at the table (through
    the control socket's dealer command, which journals who) reaches head office and is
    recorded against the held hit; it pays nothing (issue 26: it is the table's word). People
    at head office pay it: the pool resets, the award reaches the table. A verification with
    no held hit is refused at the table; a second one is refused and alarmed at head office."""
    async def main() -> None:
        async with head_office(ledger_url, broker) as (worker,):
            table = make_table("A", tmp_path / "A", broker, autoplay=False)
            table.shuffler.stack_next(royal_flush_top("h"))
            await start(table)
            await to_the_river(table)
            table.service.emit(event("dealer.dealer_hand"))
            await wait_for(lambda: bool(worker.ledger.held_hits(pending_only=True)), 10,
                           "the hit held")
            (held,) = worker.ledger.held_hits()
            before = worker.ledger.pool(POOL)
            assert before is not None and before.hits == 0
            assert table.status()["pool"]["pending"] == [{"round": held["round"],
                                                          "boxes": [2]}]
            # No hit pending for round 99 at the table: the machine refuses, nothing is sent.
            answer = await _verify_as(table, "carol", round=99)
            assert "no jackpot hit pending" in json.dumps(answer["effects"])
            answer = await _verify_as(table, "carol", round=held["round"])
            assert "jackpot verified by carol" in json.dumps(answer["effects"])
            await wait_for(lambda: worker.counters["verifications"] == 1, 10,
                           "the verification recorded")
            await asyncio.sleep(1.0)  # heartbeats pass: the table's word pays nothing
            (still,) = worker.ledger.held_hits()
            assert still["status"] == "pending" and still["operator"] is None
            assert still["verified_by"].startswith("carol (uid 1001) at table A")
            assert worker.ledger.pool(POOL).hits == 0  # type: ignore[union-attr]
            assert table.status()["pool"]["pending"]  # still PENDING at the table
            assert worker.counters["approved_awards_sent"] == 0
            # Pressed again: recorded once, the second refused, alarmed and counted.
            answer = await _verify_as(table, "dave", round=held["round"])
            assert "jackpot verified by dave" in json.dumps(answer["effects"])
            await wait_for(lambda: worker.counters["verifications_refused"] == 1, 10,
                           "the second verification refused")
            alarms = worker.ledger.report()["alarms"]
            assert any("jackpot_verified from A" in a["text"]
                       and "already verified by carol" in a["text"] for a in alarms)
            # The people at head office release it.
            award = await asyncio.to_thread(_approve, ledger_url, held["hold_no"])
            await wait_for(lambda: not table.status()["pool"]["pending"], 10, "award applied")
            (decided,) = worker.ledger.held_hits()
            assert decided["status"] == "approved" and decided["operator"] == "alice and bob"
            pool = worker.ledger.pool(POOL)
            assert pool is not None and pool.hits == 1 and pool.imbalance() == 0
            paid = sum(p["amount"] for p in award["payouts"])
            assert table.status()["pool"]["ledger"]["paid"] == paid > 0
            await drain([table])
            await table.stop()
            assert_ledger_matches(worker.ledger, [table])

    run(main())


async def _verify_as(table: Any, user: str, **data: Any) -> dict[str, Any]:
    """The dealer command as the control socket runs it for `user` (SO_PEERCRED's peer)."""
    from controller.control import _PEER, Peer

    async def command() -> dict[str, Any]:
        _PEER.set(Peer(pid=1, uid=1001, gid=1001, user=user, groups=frozenset()))
        return await table.service.commands.dealer({"action": "jackpot_verify", "data": data})

    return await asyncio.create_task(command())  # its own context: the peer stays in it


def _approve(url: str, hold_no: int) -> dict[str, Any]:
    """What `tablectl-headoffice hit approve` does, on its own connection to the ledger, by two
    operators: the Royal pays $50,000.00, above the default dual-control threshold. The award
    message."""
    from headoffice.ledger import Ledger

    led = Ledger.open(url)
    ops = ["alice", "bob"]
    try:
        first = led.approve_hit(hold_no, operator="alice", authorised=ops, reason="camera 4")
        assert first["status"] == "pending" and first["award"] is None
        done = led.approve_hit(hold_no, operator="bob", authorised=ops, reason="count agrees")
        assert done["status"] == "approved"
        return done["award"]
    finally:
        led.close()


def test_json_of_an_award_round_trips() -> None:
    msg = contract.award_message("T1", POOL, 3, 9, [{"box": 2, "award": "flush",
                                                     "amount": 10_000}])
    assert contract.parse_award(json.dumps(msg).encode(), "T1") == {
        "round": 3, "payouts": [{"box": 2, "award": "flush", "amount": 10_000}]}
