"""The table's side of the Player Card link (issue 29) on a real Mosquitto: a linked UTH table
with `[cards] required` asks head office about each wager's card (`card_reserve` on
`tablectl/v1/table/{table}/patron`) and a small fake head office in the test answers on
`tablectl/v1/ho/table/{table}/patron`; the table takes or refuses the wager on the answer
(UTH 13.1, 13.3), and with no answer within `[cards] answer_s` refuses it (strict reading).
End to end (the last test): two linked tables and a real head-office worker (SQLite and
PostgreSQL) racing one card never exceed its Loss Limit."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest

from controller.config import validate_text
from controller.config.machine import build_machine
from controller.daemon.service import TableService
from controller.link.extension import LinkExtension
from controller.link.patron_device import PatronDevice
from controller.random_source import RandomSource
from controller.rounds.base import Event
from devices.sim import build_simulators
from headoffice.ledger import Ledger, cards
from shared.link import patron
from shared.link.transport import connect
from tests import mqtt_broker
from tests.support.link import FAST, head_office, run, table_toml, wait_for

pytestmark = pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")

TABLE = "T1"


async def fake_head_office(broker: mqtt_broker.Broker, remaining: dict[str, int],
                           asked: list[dict[str, Any]], ready: asyncio.Event) -> None:
    """Answers each request: a known card is valid with `remaining` cents; a reservation is
    granted when it fits."""
    async with connect(broker.settings("headoffice-7", "fake-patron")) as conn:
        await conn.subscribe([patron.request_topic(TABLE)])
        ready.set()
        async for m in conn.messages():
            req = patron.parse_card_request(m.payload, TABLE)
            asked.append(req)
            left = remaining.get(req["card"])
            granted = None
            if req["type"] == "card_reserve":
                granted = req["amount"] if left is not None and req["amount"] <= left else 0
            answer = patron.card_answer(
                TABLE, req["req"], req["card"], valid=left is not None,
                reason=None if left is not None else "unknown card", limit=left, remaining=left,
                granted=granted)
            await conn.publish(patron.answer_topic(TABLE), json.dumps(answer).encode())


def carded_table(root: Path, broker: mqtt_broker.Broker, table: str = TABLE) -> TableService:
    toml = table_toml(table, root, broker, cards="required = true\nanswer_s = 1.0")
    cfg = validate_text(toml, f"{table}.toml")
    assert cfg.uth is not None and cfg.uth.cards.required and not cfg.uth.cards.local
    rng = random.Random(3)
    devices = build_simulators(cfg, rng)
    devices["rng"] = RandomSource(rng=rng)
    devices["patron"] = PatronDevice(table, cfg.uth.cards.answer_ms / 1000)
    link = LinkExtension(cfg, options=FAST)
    import logging
    return TableService(cfg, build_machine(cfg), devices, logging.getLogger("t.patron"),
                        extensions=[link])


def test_wagers_are_taken_or_refused_on_head_offices_answer(tmp_path: Path, broker) -> None:
    async def main() -> None:
        asked: list[dict[str, Any]] = []
        ready = asyncio.Event()
        ho = asyncio.create_task(fake_head_office(broker, {"CARD-0001": 100_000,
                                                           "CARD-0002": 3000}, asked, ready))
        await ready.wait()
        service = carded_table(tmp_path, broker)
        task = asyncio.create_task(service.run())
        try:
            await wait_for(lambda: service.ready and service.ignored.held is None, 30, "start")
            await wait_for(lambda: service.devices["patron"].publish is not None, 10, "link")
            wagers = lambda: service.machine.status(service.state)["boxes"]  # noqa: E731
            service.emit(Event("dealer.wager", {"box": 1, "ante": 1000, "card": "CARD-0001"}))
            service.emit(Event("dealer.wager", {"box": 2, "ante": 1000, "card": "CARD-0002"}))
            service.emit(Event("dealer.wager", {"box": 3, "ante": 1000, "card": "NOBODY-1"}))
            service.emit(Event("dealer.wager", {"box": 4, "ante": 1000}))  # 13.1: no card
            await wait_for(lambda: len(asked) == 3 and all(
                r["status"] not in ("checking", "reserving")
                for r in service.state.patrons.values()), 10, "answers")
            await service.idle()
            assert [b["box"] for b in wagers()] == [1]  # 2: over its limit (13.3); 3: unknown
            assert {r["type"] for r in asked} == {"card_reserve"}
            assert all(r["req"].startswith("T1/") for r in asked)
            assert service.state.patrons["1"]["granted"] == 6000  # ante+blind+4x ante
            assert "Loss Limit" in service.state.patrons["2"]["reason"]
        finally:
            service.stop()
            await asyncio.wait_for(task, 20)
            ho.cancel()

    run(main(), timeout=120)


def test_strict_reading_head_office_silent_refuses_the_wager(tmp_path: Path, broker) -> None:
    async def main() -> None:
        service = carded_table(tmp_path, broker)  # no fake head office: nobody answers
        task = asyncio.create_task(service.run())
        try:
            await wait_for(lambda: service.ready and service.ignored.held is None, 30, "start")
            service.emit(Event("dealer.wager", {"box": 1, "ante": 1000, "card": "CARD-0001"}))
            await wait_for(lambda: service.state.patrons.get("1", {}).get("status") == "refused",
                           10, "the answer_s timeout")
            await service.idle()
            assert service.state.wagers == {}
            assert service.state.patrons["1"]["reason"] == (
                "head office cannot confirm the card (UTH 13.1)")
        finally:
            service.stop()
            await asyncio.wait_for(task, 20)

    run(main(), timeout=120)


def refusals(watcher: asyncio.Queue[dict[str, Any] | None]) -> list[str]:
    """The texts of every refusal the table has said so far (the keypad's, head office's)."""
    out = []
    while not watcher.empty():
        item = watcher.get_nowait()
        for e in (item or {}).get("effects", []):
            if e["kind"] == "log" and e["data"].get("refused"):
                out.append(e["data"]["text"])
    return out


LIMIT = 10_000  # card-0001's Loss Limit, $100 a day
RISK = 3000  # a $5 Ante: ante + blind + the largest Play (4 x ante), what each wager reserves


def test_end_to_end_two_tables_race_one_card_and_the_limit_holds(
        tmp_path: Path, broker: mqtt_broker.Broker, ledger_url: str) -> None:
    """Two linked tables and a real head-office worker (ledger on SQLite and PostgreSQL): six
    wagers of $30 at risk on one card with a $100 Loss Limit, interleaved across the tables,
    race for it: exactly three are taken and head office holds no more than the limit (UTH
    13.3); a wager without a card is refused (11.16.1, 13.1); one over what remains is refused
    at the keypad with the reason (13.3); head office gone, the strict reading refuses (13.1).
    """
    led = Ledger.open(ledger_url)

    async def main() -> None:
        async with head_office(ledger_url, broker) as workers:
            cards.add_card(led.db, "card-0001", limit=LIMIT, kind="day", length=1, start=None,
                           operator="alice", allowed=["alice"], reason="e2e")
            tables = {n: carded_table(tmp_path / n, broker, n) for n in ("T1", "T2")}
            watchers = {n: t.subscribe() for n, t in tables.items()}
            tasks = [asyncio.create_task(t.run()) for t in tables.values()]
            said: dict[str, list[str]] = {"T1": [], "T2": []}

            def heard() -> dict[str, list[str]]:
                for n, w in watchers.items():
                    said[n] += refusals(w)
                return said

            try:
                for t in tables.values():
                    await wait_for(lambda t=t: t.ready and t.ignored.held is None, 30, "start")
                    await wait_for(lambda t=t: t.devices["patron"].publish is not None, 10,
                                   "link")
                await race(tables, workers)
                t1, t2 = tables["T1"], tables["T2"]
                # 11.16.1, 13.1: no card, no wager (nothing asked of head office)
                t2.emit(Event("dealer.wager", {"box": 4, "ante": 500}))
                # 13.3 at the keypad: head office says $10 remains; a $30 risk is refused
                t1.emit(Event("dealer.player_card", {"box": 5, "card": "card-0001"}))
                await wait_for(lambda: t1.state.patrons.get("5", {}).get("status") == "valid",
                               20, "the card's check")
                assert t1.state.patrons["5"]["remaining"] == LIMIT - 3 * RISK
                t1.emit(Event("dealer.wager", {"box": 5, "ante": 500}))
                for t in tables.values():
                    await t.idle()
                assert "4" not in t2.state.wagers and "5" not in t1.state.wagers
                assert any("box 4 has no valid Player Card" in x and "11.16.1" in x
                           for x in heard()["T2"]), said["T2"]
                assert any("over the Loss Limit: $10.00 remains, this wager risks $30.00"
                           " (UTH 13.3)" in x for x in heard()["T1"]), said["T1"]
                assert cards.show(led.db, "card-0001")["reserved"] == 3 * RISK
            except BaseException:
                for t in tables.values():
                    t.stop()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
        # head office gone: no answer within answer_s, the strict reading refuses (13.1)
        t2 = tables["T2"]
        try:
            t2.emit(Event("dealer.wager", {"box": 6, "ante": 500, "card": "card-0001"}))
            await wait_for(lambda: t2.state.patrons.get("6", {}).get("status") == "refused",
                           20, "the answer_s timeout")
            assert "6" not in t2.state.wagers
            assert t2.state.patrons["6"]["reason"] == (
                "head office cannot confirm the card (UTH 13.1)")
        finally:
            for t in tables.values():
                t.stop()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def race(tables: dict[str, TableService], workers: Any) -> None:
        order = [(n, box) for box in (1, 2, 3) for n in ("T1", "T2")]  # interleaved
        for n, box in order:
            tables[n].emit(Event("dealer.wager", {"box": box, "ante": 500, "card": "card-0001"}))

        def answered() -> bool:
            return all(len(t.state.patrons) == 3 and all(
                r["status"] not in ("checking", "reserving") for r in t.state.patrons.values())
                for t in tables.values())

        await wait_for(answered, 30, "head office's answers")
        for t in tables.values():
            await t.idle()
        taken = [(n, b) for n, t in tables.items() for b in t.state.wagers]
        assert len(taken) == LIMIT // RISK == 3, taken  # a fourth would pass the limit
        granted = sum(r["granted"] or 0 for t in tables.values()
                      for r in t.state.patrons.values())
        assert granted == 3 * RISK <= LIMIT
        assert cards.show(led.db, "card-0001")["reserved"] == granted
        refused = [r for t in tables.values() for r in t.state.patrons.values()
                   if r["status"] == "refused"]
        assert len(refused) == 3 and all("Loss Limit" in r["reason"] for r in refused)
        assert all(w.counters["patron_answers"] for w in workers)

    try:
        run(main(), timeout=180)
    finally:
        led.close()
