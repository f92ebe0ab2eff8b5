"""Packed outbox messages (issue 31): several of a table's outbox rows in one MQTT message, once
head office's ack says it reads them. Each row keeps its (table, seq) identity: applied exactly
once whichever way it came (alone, in a pack, both, twice), stored as the single message it
would have been; an older head office (acks without `pack`) gets single messages only; the
ledger equals the tables' journals."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.link.relay import OutboxRelay
from shared.link import contract
from shared.link.transport import connect
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
from tests.test_headoffice_ledger import body, inc, result

live = pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")


def pack(table: str, rows: list[dict[str, Any]]) -> bytes:
    return contract.dumps(contract.outbox_pack(table, rows))


# -- the contract ------------------------------------------------------------------------------
def test_a_pack_parses_to_its_messages_in_order_and_a_single_message_to_itself() -> None:
    rows = [body("T1", n, *inc(n, n)) for n in (3, 1, 2)]
    # each with its text as the relay would have sent it alone
    singles = [(r, contract.dumps(r).decode()) for r in rows]
    assert contract.parse_outbox_messages(pack("T1", rows), "T1") == (singles, True)
    laid_out = json.dumps(rows[0], indent=1)  # a single message's text is kept as it came
    assert contract.parse_outbox_messages(laid_out, "T1") == ([(rows[0], laid_out)], False)


def test_a_pack_is_bounded_like_a_single_message_row_by_row() -> None:
    deep: Any = 1
    for _ in range(contract.MAX_DEPTH - 3):  # the row 2 levels down: 1 too deep in all
        deep = [deep]
    row = body("T1", 1, "round_result", {"round": 1, "status": "completed", "x": deep})
    with pytest.raises(contract.SchemaError, match="nested deeper than 16"):
        contract.parse_outbox_messages(pack("T1", [row]), "T1")
    contract.parse_outbox(contract.dumps(row), "T1")  # alone it is 2 levels shallower
    long = body("T1", 1, "round_result", {"round": 1, "status": "x" * (contract.MAX_STRING + 1)})
    with pytest.raises(contract.SchemaError, match="a string of 4097 characters"):
        contract.parse_outbox_messages(pack("T1", [long]), "T1")
    with pytest.raises(contract.SchemaError, match="a string of 4097 characters"):
        contract.parse_outbox_messages(contract.dumps({**contract.outbox_pack(
            "T1", [body("T1", 1, *inc(1))]), "note": "y" * (contract.MAX_STRING + 1)}), "T1")


@pytest.mark.parametrize(("raw", "says"), [
    (pack("T1", []), "0 messages"),
    (pack("T1", [body("T1", n, *inc(n)) for n in range(1, contract.PACK_MAX + 2)]),
     f"{contract.PACK_MAX + 1} messages"),
    (pack("T2", [body("T2", 1, *inc(1))]), "published on the topic of 'T1'"),
    (pack("T1", [body("T1", 1, *inc(1)), body("T2", 2, *inc(2))]),
     "table 'T2' published on the topic of 'T1'"),
    (pack("T1", [{**body("T1", 1, *inc(1)), "seq": 0}]), "'seq' must be an integer"),
    (pack("T1", [{**body("T1", 1, *inc(1)), "v": 2}]), "schema version 1"),
    (pack("T1", [7]), "7 is not an outbox message"),
    (contract.dumps({"v": 1, "table": "T1", "pack": {"seq": 1}}), "'pack' must be a list"),
])
def test_a_bad_pack_is_refused_naming_what_is_wrong(raw: bytes, says: str) -> None:
    with pytest.raises(contract.SchemaError, match=None) as err:
        contract.parse_outbox_messages(raw, "T1")
    assert says in str(err.value)


def test_an_ack_says_how_many_rows_head_office_reads_in_one_message() -> None:
    new = contract.dumps(contract.ack_message("T1", 5, 2, pack=contract.PACK_MAX))
    assert contract.parse_ack_fields(new, "T1") == (5, 2, contract.PACK_MAX)
    assert contract.parse_ack_round(new, "T1") == (5, 2)  # what an older table reads
    old = contract.dumps(contract.ack_message("T1", 5))
    assert contract.parse_ack_fields(old, "T1") == (5, None, 1)  # an older head office
    for bad in (0, contract.PACK_MAX + 1, "8"):
        with pytest.raises(contract.SchemaError, match="'pack'"):
            contract.parse_ack_fields(contract.dumps({"v": 1, "table": "T1", "upto": 5,
                                                      "pack": bad}), "T1")


# -- the relay ---------------------------------------------------------------------------------
class Outbox:
    """The journal as the relay sees it: rows 1..n pending until acknowledged."""

    def __init__(self, n: int) -> None:
        self.rows = [SimpleNamespace(id=i, seq=100 + i, type="jackpot_increment",
                                     utc="2026-01-01T00:00:00.000Z", payload=inc(i)[1])
                     for i in range(1, n + 1)]

    def pending_outbox(self, limit: int) -> list[SimpleNamespace]:
        return self.rows[:limit]

    def ack_outbox(self, upto: int) -> int:
        before = len(self.rows)
        self.rows = [r for r in self.rows if r.id > upto]
        return before - len(self.rows)

    def iter_events(self, start: int, end: int) -> Any:
        return iter(())


def sent_ids(sent: list[bytes]) -> list[list[int]]:
    """Each message published -> the seqs in it."""
    return [[m["seq"] for m, _ in contract.parse_outbox_messages(raw, "T1")[0]] for raw in sent]


def test_the_relay_packs_rows_due_together_only_after_head_office_said_it_reads_packs() -> None:
    now = [0.0]
    relay = OutboxRelay(Outbox(20), "T1", max_inflight=16, resend_s=5,  # type: ignore[arg-type]
                        clock=lambda: now[0])
    sent: list[bytes] = []

    async def publish(topic: str, raw: bytes) -> None:
        assert topic == contract.outbox_topic("T1")
        sent.append(raw)

    async def main() -> None:
        relay.new_connection()
        await relay.pump(publish)  # no ack yet on this connection: one row a message
        assert sent_ids(sent) == [[i] for i in range(1, 17)]
        sent.clear()
        relay.head_office_packs(contract.PACK_MAX)  # its ack says so: at most max_inflight
        assert relay.pack == 16
        relay.ack(4)
        await relay.pump(publish)
        assert sent_ids(sent) == [[17, 18, 19, 20]]
        # Each row in a pack is the message it would have been alone.
        assert json.loads(sent[0])["pack"][0] == json.loads(contract.dumps(contract.outbox_message(
            "T1", 17, 117, "jackpot_increment", "2026-01-01T00:00:00.000Z", inc(17)[1])))
        sent.clear()
        now[0] = 6.0  # no ack within resend_s: resent one by one (an older head office may
        await relay.pump(publish)  # have been put back; its ack turns packing off)
        assert sent_ids(sent) == [[i] for i in range(5, 21)]
        assert relay.stats.packs == 1 and relay.stats.sent == 20 and relay.stats.resent == 16
        relay.head_office_packs(1)
        assert relay.pack == 1
        relay.head_office_packs(3)
        relay.new_connection()  # a new connection: singles until its first ack
        assert relay.pack == 1

    asyncio.run(main())


# -- against a real Mosquitto and head office -------------------------------------------------
@live
def test_packs_singles_duplicates_and_reorderings_are_applied_once_stored_as_singles(
        broker, ledger_url: str) -> None:
    async def main() -> None:
        async with head_office(ledger_url, broker) as (worker,):
            msgs = [body("T1", 1, *inc(1, 3)), body("T1", 2, *result(1)),
                    body("T1", 3, *inc(2, 1)), body("T1", 4, *inc(2, 1, "jackpot_cancel")),
                    body("T1", 5, *result(2, "voided")), body("T1", 6, *inc(3, 5))]
            sends = [pack("T1", [msgs[1], msgs[0]]), contract.dumps(msgs[0]),
                     pack("T1", msgs[2:5]), pack("T1", msgs[3:6]), contract.dumps(msgs[5]),
                     pack("T1", msgs)]
            async with connect(broker.settings("T1")) as t1:
                await t1.subscribe([contract.ack_topic("T1")])
                acks: list[tuple[int, int | None, int]] = []

                async def read() -> None:
                    async for m in t1.messages():
                        acks.append(contract.parse_ack_fields(m.payload, "T1"))

                reader = asyncio.create_task(read())
                for raw in sends:
                    await t1.publish(contract.outbox_topic("T1"), raw)
                # 0 again, 4 and 5 again, 6 again, then all six: 1 + 2 + 1 + 6 duplicates
                await wait_for(lambda: worker.counters["duplicates"] == 10
                               and bool(acks) and acks[-1][0] == 6, 10, "duplicates, acks")
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
            assert acks and acks[-1][0] == 6 and all(a[2] == contract.PACK_MAX for a in acks)
            assert [a[0] for a in acks] == sorted(a[0] for a in acks)
            assert worker.counters["packs"] == 4
            rows = worker.ledger.db.execute(
                "SELECT seq, status, body FROM messages WHERE table_id = 'T1' ORDER BY seq")
            assert [(r["seq"], r["status"]) for r in rows] == [(i, "applied") for i in range(1, 7)]
            assert [r["body"] for r in rows] == [contract.dumps(m).decode() for m in msgs]
            assert worker.ledger.table_totals("T1")["wagered"] == 800
            pool = worker.ledger.pool("p1")
            assert pool is not None and pool.wagers_in == 800 and pool.imbalance() == 0

    run(main())


@live
@pytest.mark.parametrize("head_office_reads_packs", [True, False])
def test_a_backlog_goes_in_packs_to_a_head_office_that_reads_them_and_singly_to_an_older(
        broker, ledger_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        head_office_reads_packs: bool) -> None:
    if not head_office_reads_packs:  # an older head office: its acks say nothing of packs
        made = contract.ack_message
        monkeypatch.setattr(contract, "ack_message",
                            lambda table, upto, last_round=None, pack=None:
                            made(table, upto, last_round))

    async def main() -> None:
        proxy = await mqtt_broker.TcpProxy(broker.port).start()
        async with head_office(ledger_url, broker) as (worker,):
            cut = await start(make_table("CUT", tmp_path / "CUT", broker, port=proxy.port,
                                         seed=7))
            await wait_for(play_until([cut], 3), 60, "3 rounds")
            proxy.cut()

            def backlog() -> int:
                return cut.service.journal.summary()["outbox_pending"]  # type: ignore[union-attr]

            await wait_for(lambda: backlog() >= 60, 120, "60 outbox rows behind")
            proxy.restore()
            await drain([cut], 60)
            await cut.stop()
            relay = cut.link.relay
            assert relay is not None
            if head_office_reads_packs:
                assert relay.stats.packs >= 1 and worker.counters["packs"] >= 1
            else:
                assert relay.stats.packs == 0 and worker.counters["packs"] == 0
            # every (table, seq) once, none missing
            seqs = [r["seq"] for r in worker.ledger.db.execute(
                "SELECT seq FROM messages WHERE table_id = 'CUT' ORDER BY seq")]
            assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) >= 60
            assert_ledger_matches(worker.ledger, [cut])
        await proxy.close()

    run(main())


def test_the_asyncapi_document_describes_packs_as_the_contract_bounds_them() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML not installed (dev extra)")
    doc = yaml.safe_load((Path(__file__).resolve().parents[2] / "docs" / "asyncapi.yaml")
                         .read_text())
    schemas = doc["components"]["schemas"]
    assert schemas["OutboxPack"]["properties"]["pack"]["maxItems"] == contract.PACK_MAX
    assert schemas["OutboxPack"]["properties"]["pack"]["items"] == {
        "$ref": "#/components/schemas/Outbox"}
    assert schemas["Ack"]["properties"]["pack"]["maximum"] == contract.PACK_MAX
    assert "outboxPack" in doc["channels"]["outbox"]["messages"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-2, 2**63), json_values,
                          st.dictionaries(st.text(max_size=6), json_values, max_size=2)),
                max_size=5))
def test_any_pack_is_refused_or_read_as_rows_each_its_own_single_message(
        rows: list[tuple[int, Any, dict[str, Any]]]) -> None:
    """Whatever a pack holds: SchemaError, or rows each of which, parsed alone from the text
    head office stores for it, is that row (so a row is judged the same packed or not)."""
    raw = pack("T1", [{**extra, **body("T1", 1, "round_result", {"round": 1}), "seq": seq,
                       "payload": payload} for seq, payload, extra in rows])
    try:
        got, packed = contract.parse_outbox_messages(raw, "T1")
    except contract.SchemaError:
        return
    assert packed and len(got) == len(rows)
    for (row, text), (seq, _, _) in zip(got, rows, strict=True):
        assert row["seq"] == seq and contract.parse_outbox(text, "T1") == row
