"""`tablectl devices watch` (the devices extension's `device_watch`) shows every kind the event
registry says a device emits, and nothing else: the meter's fault and recovery and the random
cut selection (NZ 9.3A(c)) too, which a hand-kept list of prefixes once left out (issue 30)."""

from __future__ import annotations

import asyncio
from typing import Any

from controller.events import REGISTRY, Kind, Source
from controller.extensions.devices import DevicesExtension


class _Table:
    """What the extension reads of a table: processed events, and its devices (none here)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.devices: dict[str, Any] = {}

    def subscribe(self) -> asyncio.Queue[dict[str, Any] | None]:
        return self.queue

    def unsubscribe(self, q: object) -> None:
        pass


def _watched(kinds: list[str]) -> list[str]:
    """The kinds `device_watch` answers with after the table processed `kinds`, in order."""

    async def run() -> list[str]:
        ext, table = DevicesExtension(), _Table()
        await ext.start(table)  # type: ignore[arg-type]
        try:
            for n, kind in enumerate(kinds):
                table.queue.put_nowait({"event": {"kind": kind, "data": {}}, "effects": [],
                                        "utc": f"2026-11-28T04:00:{n:02d}Z"})
            while not table.queue.empty():
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.01)  # the last item taken is appended before the next get
            view = await ext.handlers()["device_watch"]({"since": 0})
        finally:
            await ext.stop()
        return [e["event"]["kind"] for e in view["events"]]

    return asyncio.run(run())


def test_the_meter_fault_and_ready_and_the_cut_selection_are_watched() -> None:
    shown = [Kind.METER_FAULT, Kind.METER_READY, Kind.CUT_SELECTED, Kind.DICE_RESULT]
    assert _watched([Kind.LINK_UP, *shown, Kind.DEALER_DEAL]) == shown


def test_every_device_kind_is_watched_and_nothing_the_service_or_link_emits() -> None:
    everything = list(REGISTRY)
    devices = [k for k in everything if REGISTRY[k].source is Source.DEVICE]
    assert len(devices) >= 19
    # No keypad is wired (no sensors device): a dealer action is not a device's event either.
    assert _watched(everything) == devices
