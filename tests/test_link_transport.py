"""Our MQTT transport against a real Mosquitto (TLS, ACL, persistence): a backlog the broker
kept while we were away comes back whole and in order through `Connection.messages()`, which
reads many packets per wake-up and takes queued messages without waiting for each
(shared/link/transport.py); a broker that dies mid-read ends the iteration with LinkError."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from shared.link import contract, transport
from shared.link.transport import LinkError, connect
from tests import mqtt_broker
from tests.support.link import run

pytestmark = pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")

BACKLOG = 3000


async def _publish_backlog(broker: mqtt_broker.Broker, n: int) -> None:
    window = asyncio.Semaphore(64)
    async with connect(broker.settings("T1", session_expiry_s=0)) as t1:

        async def one(i: int) -> None:
            async with window:
                await t1.publish(contract.outbox_topic("T1"), json.dumps({"n": i}).encode())

        # Tasks start in order and the client sends in order: the broker receives 1..n.
        await asyncio.gather(*(one(i) for i in range(1, n + 1)))


def test_a_backlog_comes_back_whole_and_in_order(broker) -> None:
    async def main() -> None:
        reader = broker.settings("headoffice-7", "backlog-reader", session_expiry_s=600)
        async with connect(reader) as conn:
            await conn.subscribe([contract.outbox_topic("T1")])
        await _publish_backlog(broker, BACKLOG)  # queued by the broker for our session
        got: list[int] = []
        async with connect(reader) as conn:
            async for m in conn.messages():
                assert m.topic == contract.outbox_topic("T1")
                got.append(json.loads(m.payload)["n"])
                if len(got) == BACKLOG:
                    break
            # Nothing more: no message was delivered twice.
            with contextlib.suppress(TimeoutError):
                extra = await asyncio.wait_for(anext(aiter(conn.messages())), 0.5)
                got.append(json.loads(extra.payload)["n"])
        assert got == list(range(1, BACKLOG + 1))

    run(main(), timeout=120)


def test_a_broker_killed_mid_read_ends_the_iteration_with_link_error(broker) -> None:
    async def main() -> None:
        reader = broker.settings("headoffice-7", "killed-reader", session_expiry_s=600)
        async with connect(reader) as conn:
            await conn.subscribe([contract.outbox_topic("T1")])
        await _publish_backlog(broker, 500)
        got = 0
        with pytest.raises(LinkError):
            async with connect(reader) as conn:
                async for _ in conn.messages():
                    got += 1
                    if got == 100:
                        broker.kill()
        assert got >= 100

    run(main(), timeout=120)


def test_the_many_packets_reader_is_in_use() -> None:
    # It overrides an aiomqtt 2.x internal; were it gone in the installed aiomqtt, the link
    # would still work, at a quarter more CPU per message, and this says so.
    assert transport._READER_OVERRIDE




def test_messages_queued_without_waiting_arrive_whole_and_in_order(broker) -> None:
    """`publish_nowait` (head office's acks): a thousand queued in one go, none waited for,
    reach the table in the order queued; on a connection that is gone it raises LinkError."""
    n = 1000

    def ack(upto: int) -> bytes:
        return contract.dumps(contract.ack_message("T1", upto))

    async def main() -> None:
        async with connect(broker.settings("T1", session_expiry_s=0)) as table:
            await table.subscribe([contract.ack_topic("T1")], qos=0)
            async with connect(broker.settings("headoffice-7", session_expiry_s=0)) as ho:
                for upto in range(1, n + 1):
                    ho.publish_nowait(contract.ack_topic("T1"), ack(upto))
                got: list[int] = []
                async for m in table.messages():
                    got.append(contract.parse_ack(m.payload, "T1"))
                    if len(got) == n:
                        break
            assert got == list(range(1, n + 1))
            with pytest.raises(LinkError):
                ho.publish_nowait(contract.ack_topic("T1"), ack(n + 1))

    run(main(), timeout=120)
