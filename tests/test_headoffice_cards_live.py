"""Player Cards through a real Mosquitto and head-office worker (issue 29): two tables race
reservations of one card and never together exceed its Loss Limit (UTH 13.3); an unknown card
is answered invalid (13.1); a request in another table's name is refused; settlement through
the outbox is applied once and releases the reservation. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from headoffice.ledger import Ledger, cards
from shared.link import contract, patron
from shared.link.transport import Connection, connect
from tests import mqtt_broker
from tests.support.link import head_office, run, wait_for

UTC = "2026-11-28T10:00:00.000Z"
ASKED = 1500  # each round's reservation; 6 fit in the $100 limit


async def answers_of(conn: Connection, got: list[dict[str, Any]], table: str) -> None:
    async for message in conn.messages():
        got.append(patron.parse_card_answer(message.payload, table))


@pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")
def test_two_tables_race_one_card(broker: mqtt_broker.Broker, ledger_url: str,
                                  tmp_path: Path) -> None:
    led = Ledger.open(ledger_url)

    async def main() -> None:
        # Two workers: the shared subscription hands the requests to both, each deciding on
        # its own database connection, so the tables' requests race in the database itself.
        async with head_office(ledger_url, broker, workers=2) as workers:
            cards.add_card(led.db, "card-0001", limit=10000, kind="day", length=1, start=None,
                           operator="alice", allowed=["alice"], reason="live test")
            got: dict[str, list[dict[str, Any]]] = {"T1": [], "T2": []}
            async with connect(broker.settings("T1", "table-T1")) as t1, \
                    connect(broker.settings("T2", "table-T2")) as t2:
                conns = {"T1": t1, "T2": t2}
                readers = []
                for name, conn in conns.items():
                    await conn.subscribe([patron.answer_topic(name), contract.ack_topic(name)])
                readers = [asyncio.create_task(answers_of(
                    c, got[n], n)) for n, c in conns.items()]
                try:
                    await race(conns, got, workers)
                    await refusals(conns, got, workers)
                    await settle(t1, led)
                finally:
                    for r in readers:
                        r.cancel()
                    await asyncio.gather(*readers, return_exceptions=True)

    async def race(conns: dict[str, Connection], got: dict[str, list[dict[str, Any]]],
                   workers: Any) -> None:
        sends = []
        for r in range(1, 6):  # interleaved: T1 round r, T2 round r, ...
            for name, conn in conns.items():
                req = patron.card_request(name, f"{name}/{r}", "card_reserve", "card-0001",
                                          round=r, amount=ASKED, utc=UTC)
                sends.append(conn.publish(patron.request_topic(name), contract.dumps(req)))
        await asyncio.gather(*sends)
        await wait_for(lambda: len(got["T1"]) + len(got["T2"]) == 10, 30, "10 answers")
        assert all(w.counters["patron_answers"] for w in workers), "both workers answered"
        every = got["T1"] + got["T2"]
        assert all(a["table"] == name for name in got for a in got[name])
        granted = [a for a in every if a["granted"]]
        assert sum(a["granted"] for a in granted) == 6 * ASKED <= 10000
        refused = [a for a in every if not a["granted"]]
        assert len(refused) == 4
        assert {a["reason"] for a in refused} == {"over the Loss Limit: $10.00 remains (UTH 13.3)"}
        assert cards.show(led.db, "card-0001")["reserved"] == 6 * ASKED

    async def refusals(conns: dict[str, Connection], got: dict[str, list[dict[str, Any]]],
                       workers: Any) -> None:
        t1 = conns["T1"]
        before = len(got["T1"])
        # An unknown card: answered, invalid, with the reason (UTH 13.1).
        req = patron.card_request("T1", "T1/90", "card_check", "nobody-1", utc=UTC)
        await t1.publish(patron.request_topic("T1"), contract.dumps(req))
        await wait_for(lambda: len(got["T1"]) == before + 1, 30, "the unknown card's answer")
        ans = got["T1"][-1]
        assert (ans["valid"], ans["req"]) == (False, "T1/90") and "unknown card" in ans["reason"]
        # A request in T2's name on T1's topic: refused, never answered to either.
        def malformed() -> int:
            return sum(w.counters["malformed"] for w in workers)

        before_bad = malformed()
        fake = patron.card_request("T2", "T2/91", "card_reserve", "card-0001", round=9,
                                   amount=100, utc=UTC)
        await t1.publish(patron.request_topic("T1"), contract.dumps(fake))
        await wait_for(lambda: malformed() == before_bad + 1, 30, "refused")
        assert not any(a["req"] == "T2/91" for a in got["T1"] + got["T2"])

    async def settle(t1: Connection, led: Ledger) -> None:
        granted_round = next(r["round"] for r in cards.show(led.db, "card-0001")["held"]
                             if r["table_id"] == "T1")
        body = contract.outbox_message("T1", 1, 1, "card_settled", UTC, {
            "round": granted_round, "card": "card-0001", "reserved": ASKED, "wagered": ASKED,
            "net": -ASKED, "returned": 0, "void": False})
        for _ in range(2):  # sent twice (a resend): counted once
            await t1.publish(contract.outbox_topic("T1"), contract.dumps(body))

        def done() -> bool:
            view = cards.show(led.db, "card-0001")
            return view["net_loss"] == ASKED and view["reserved"] == 5 * ASKED

        await wait_for(done, 30, "the settlement applied")
        await asyncio.sleep(0.5)
        view = cards.show(led.db, "card-0001")
        assert (view["net_loss"], view["reserved"], view["remaining"]) == (
            ASKED, 5 * ASKED, 10000 - 6 * ASKED)

    try:
        run(main(), timeout=120)
    finally:
        led.close()
