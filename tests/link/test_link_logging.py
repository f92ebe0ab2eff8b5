"""The head-office link's log lines over an outage, against a real Mosquitto behind a proxy
that can be cut: a link that cannot connect says so once (a warning), its retries are only
counted, and the recovery is logged (info) with how many attempts failed."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests import mqtt_broker
from tests.support.link import make_table, run, start, wait_for

pytestmark = pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def lines(self) -> list[tuple[str, str]]:
        return [(r.levelname, r.getMessage()) for r in self.records
                if r.getMessage().startswith("link")]


def test_an_outage_is_logged_once_and_its_recovery_once(broker, tmp_path: Path) -> None:
    async def main() -> None:
        proxy = await mqtt_broker.TcpProxy(broker.port).start()
        proxy.cut()  # the broker is unreachable from the start
        table = make_table("LOG1", tmp_path / "LOG1", broker, port=proxy.port, autoplay=False)
        seen = Records()
        table.service.log.addHandler(seen)
        table.service.log.setLevel(logging.INFO)  # the daemon's level (logs.setup)
        try:
            await start(table)
            await wait_for(lambda: table.link.counters["connect_failures"] >= 4, 30, "4 failures")
            cannot = [line for line in seen.lines() if "cannot connect" in line[1]]
            assert len(cannot) == 1 and cannot[0][0] == "WARNING", seen.lines()
            assert f"127.0.0.1:{proxy.port}" in cannot[0][1]
            failures = table.link.counters["connect_failures"]

            proxy.restore()
            await wait_for(lambda: table.link.connected, 30, "the link up")
            up = [line for line in seen.lines() if line[1].startswith("link up")]
            assert len(up) == 1 and up[0][0] == "INFO", seen.lines()
            assert "after" in up[0][1] and "failed attempts" in up[0][1]
            assert int(up[0][1].split("after ")[1].split()[0]) >= failures

            # A drop while up: "link down" once; the retries while cut say nothing more.
            seen.records.clear()
            proxy.cut()
            await wait_for(lambda: not table.link.connected, 30, "the link down")
            before = table.link.counters["connect_failures"]
            await wait_for(lambda: table.link.counters["connect_failures"] >= before + 3, 30,
                           "3 more failures")
            warnings = [line for line in seen.lines() if line[0] == "WARNING"]
            assert len(warnings) == 1 and warnings[0][1].startswith("link down"), seen.lines()
            proxy.restore()
            await wait_for(lambda: table.link.connected, 30, "the link up again")
            assert [line[0] for line in seen.lines()] == ["WARNING", "INFO"], seen.lines()
        finally:
            table.service.log.removeHandler(seen)
            table.service.log.setLevel(logging.NOTSET)
            await table.stop()
            await proxy.close()

    run(main(), timeout=120)
