"""The table's side of the Player Card link (issue 29) on a real Mosquitto: a linked UTH table
with `[cards] required` asks head office about each wager's card (`card_reserve` on
`tablectl/v1/table/{table}/patron`) and a small fake head office in the test answers on
`tablectl/v1/ho/table/{table}/patron`; the table takes or refuses the wager on the answer
(UTH 13.1, 13.3), and with no answer within `[cards] answer_s` refuses it (strict reading).
Head office's own patron service is the other helper's (carded-ho): the end-to-end test is added
after both are merged."""

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
from shared.link import patron
from shared.link.transport import connect
from tests import mqtt_broker
from tests.support.link import FAST, run, table_toml, wait_for

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


def carded_table(root: Path, broker: mqtt_broker.Broker) -> TableService:
    toml = table_toml(TABLE, root, broker, cards="required = true\nanswer_s = 1.0")
    cfg = validate_text(toml, "T1.toml")
    assert cfg.uth is not None and cfg.uth.cards.required and not cfg.uth.cards.local
    rng = random.Random(3)
    devices = build_simulators(cfg, rng)
    devices["rng"] = RandomSource(rng=rng)
    devices["patron"] = PatronDevice(TABLE, cfg.uth.cards.answer_ms / 1000)
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
