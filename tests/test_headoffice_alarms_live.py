"""Alarms as they happen: a linked table through a real Mosquitto and head-office worker, the
console in front of the same ledger. The table's link is cut (the broker publishes its will):
a table-offline alarm, counted in the console's menu bar; the link restored: the alarm cleared.
Then the worker stops: the console, sweeping on its own, shows it down."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from controller.about import program_version
from headoffice.console.accounts import validate_text
from headoffice.console.app import Console
from headoffice.ledger import Ledger
from tests import mqtt_broker
from tests.support.link import drain, head_office, ho_config, make_table, play_until, run, wait_for
from tests.support.link import start as start_table
from tests.test_headoffice_console import cells, csrf_of
from tests.test_headoffice_console_support import PASSWORDS, console_toml


def _count(html: str) -> int:
    m = re.search(r'id="alarm-count"[^>]*>(\d+)<', html)
    assert m, "no alarm count in the menu bar"
    return int(m[1])


def _offline_alarms(led: Ledger, active: bool) -> list[dict]:
    return [a for a in led.alarms(active_only=active)
            if a["kind"] == "table_offline" and a["table_id"] == "T1"]


@pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")
def test_a_table_cut_off_is_an_alarm_until_it_returns(broker, tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    ho = ho_config(db, None)
    accounts = validate_text(console_toml(), (*ho.operators, "bob"))

    async def main() -> None:
        proxy = await mqtt_broker.TcpProxy(broker.port).start()
        led = Ledger.open(str(db))
        client = TestClient(Console(ho, accounts, led).app(), base_url="http://127.0.0.1",
                            follow_redirects=False)

        async def get(path: str) -> str:
            return (await asyncio.to_thread(client.get, path)).text

        try:
            async with head_office(db, broker) as (worker,):
                name = worker.cfg.broker.client_id
                page = await get("/login")
                await asyncio.to_thread(client.post, "/login", data={
                    "csrf": csrf_of(page), "name": "victor", "password": PASSWORDS["victor"]})
                table = await start_table(make_table("T1", tmp_path / "T1", broker,
                                                     port=proxy.port))
                await wait_for(play_until([table], 3), 60, "3 rounds")
                await drain([table])
                tables = await get("/tables")
                t1 = cells(tables, "table-T1")
                # What the table said of itself at its connect: its version, in service.
                assert t1[2] == "online" and t1[-2:] == [program_version(), "yes"]
                before = _count(tables)
                assert _offline_alarms(led, active=True) == []

                proxy.cut()  # the broker sees the table's link die and publishes its will

                async def raised() -> bool:
                    return _count(await get("/alarms")) == before + 1

                await wait_for(raised, 60, "the offline alarm counted", every=0.1)
                (alarm,) = _offline_alarms(led, active=True)
                page = await get("/alarms")
                assert f'id="alarm-{alarm["alarm_no"]}"' in page and "table T1 is offline" in page
                assert cells(await get("/tables"), "table-T1")[2] == "offline"

                proxy.restore()  # the table reconnects: birth and status online

                async def cleared() -> bool:
                    return _count(await get("/alarms")) == before

                await wait_for(cleared, 60, "the offline alarm cleared", every=0.1)
                (done,) = _offline_alarms(led, active=False)
                assert done["alarm_no"] == alarm["alarm_no"] and done["cleared_utc"]
                assert done["repeats"] == 1  # one alarm for the outage, however often seen
                await table.stop()
            # The worker has stopped: nobody renews its lease; the console sees it (its own
            # sweep, every few seconds) as a worker down.

            async def worker_down() -> bool:
                await get("/alarms")
                return any(a["kind"] == "worker_down" and a["subject"] == name
                           for a in led.alarms(active_only=True))

            await wait_for(worker_down, 60, "the stopped worker alarmed", every=0.2)
        finally:
            client.close()
            led.close()
            await proxy.close()

    run(main())
