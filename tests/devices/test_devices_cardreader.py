"""The Player Card reader driver against its pty simulator, on the real wire (issue 29): a card
read, no card (removed), an unreadable card, a malformed id or box, the reader's fault, and the
reader unplugged and plugged back (the dealer keys cards meanwhile: `dealer.player_card`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from devices.base import DeviceEvent as Event
from devices.base import State
from devices.cardreader.driver import SerialCardReader
from devices.cardreader.wire import PtyCardReaderSim
from tests.support.devices import run, until
from tests.support.devices import serial_cfg as cfg


def test_reads_removals_unreadable_cards_and_faults(tmp_path: Path) -> None:
    async def go() -> None:
        sim = PtyCardReaderSim()
        sim.plug_at(str(tmp_path / "tablectl-cardreader"))
        await sim.start()
        dev = SerialCardReader(cfg(tmp_path / "tablectl-cardreader", 9600), boxes=7, poll_s=0)
        events: list[Event] = []
        await dev.start(events.append)
        try:
            assert (await dev.selftest())["ok"] is True
            sim.insert(3, "CARD-0003")
            sim.insert_unreadable(4)
            sim.insert(5, "not a card!")  # a malformed id is no card
            sim.insert(9, "CARD-0009")  # box 9 is not on this table: nothing
            sim.remove(3)
            await until(lambda: len(events) == 4)
            assert [(e.kind, dict(e.data)) for e in events] == [
                ("cardreader.read", {"box": 3, "card": "CARD-0003"}),
                ("cardreader.unreadable", {"box": 4}),
                ("cardreader.unreadable", {"box": 5}),
                ("cardreader.removed", {"box": 3}),
            ]
            assert dev.counters["bad_box"] == 1
            sim.fail("head dirty")
            await until(lambda: events[-1].kind == "cardreader.fault")
            assert events[-1].data == {"reason": "head dirty"}
            assert dev.status()["state"] == State.FAULT
        finally:
            await dev.stop()
            await sim.close()

    run(go)


def test_unplugged_reader_faults_and_reads_again_after_replug(tmp_path: Path) -> None:
    link = tmp_path / "tablectl-cardreader"

    async def go() -> None:
        sim = PtyCardReaderSim()
        sim.plug_at(str(link))
        await sim.start()
        dev = SerialCardReader(cfg(link, 9600), poll_s=0)
        events: list[Event] = []
        await dev.start(events.append)
        try:
            await sim.unplug()
            await until(lambda: dev.status()["state"] == State.DISCONNECTED, 2)
            await until(lambda: any(e.kind == "cardreader.fault" for e in events), 1)
            (fault,) = [e for e in events if e.kind == "cardreader.fault"]
            assert fault.data["reason"].startswith("disconnected: ")
            await sim.replug()
            await until(lambda: dev.status()["state"] == State.READY, 5)
            await asyncio.sleep(0.2)  # the new session's HELLO
            sim.insert(1, "CARD-0001")
            await until(lambda: events[-1].kind == "cardreader.read", 3)
            assert events[-1].data == {"box": 1, "card": "CARD-0001"}
        finally:
            await dev.stop()
            await sim.close()

    run(go)
