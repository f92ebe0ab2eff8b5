"""The card reader driver: our framed protocol over a serial port (docs/protocols.md).

    reader -> host   CARD box id          a card read at box `box` (1..boxes)
                     UNREADABLE box       a card inserted that could not be read
                     REMOVED box          the card taken out
                     FAULT reason...      the reader failed
                     STATUS READY|FAULT [reason...]   (the answer to our idle STATUS poll)

Reads are unsolicited (a player inserts a card when they sit down): nothing waits for them. A
box outside the table or a malformed id is counted and reported unreadable, never a card. The
port going is `cardreader.fault {reason: "disconnected: ..."}`; the dealer keys cards meanwhile.
"""

from __future__ import annotations

from typing import Any

from devices.base import DeviceError
from devices.cardreader.interface import CardReader
from devices.proto.channel import POLL_S, ChannelDriver
from devices.proto.serial_config import SerialConfig


class SerialCardReader(ChannelDriver, CardReader):
    def __init__(
        self, cfg: SerialConfig, name: str = "cardreader", *, boxes: int = 7, poll_s: float = POLL_S
    ) -> None:
        super().__init__(name, boxes=boxes)
        self._attach(cfg, self._report_fault, poll_s=poll_s)

    def _message(self, verb: str, args: list[str]) -> None:
        box = self._box(args[0]) if args else None
        if verb in ("CARD", "UNREADABLE", "REMOVED") and box is None:
            self.counters["bad_box"] += 1
            return
        if verb == "CARD" and box is not None:
            if len(args) != 2:
                self._report_unreadable(box)
            else:
                self._report_read(box, args[1])
        elif verb == "UNREADABLE" and box is not None:
            self._report_unreadable(box)
        elif verb == "REMOVED" and box is not None:
            self._report_removed(box)
        elif verb == "FAULT":
            self._report_fault(" ".join(args) or "fault")
        elif verb == "STATUS":
            self._idle_status(args)
        else:
            self.counters["unsolicited"] += 1

    async def selftest(self) -> dict[str, Any]:
        """The reader answers STATUS: READY is a pass (no card is read for it)."""
        if not self.started:
            return {"ok": False, "error": "not started"}
        try:
            _, args = await self.channel.ask("STATUS", answers=frozenset({"STATUS"}))
        except DeviceError as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": args[:1] == ["READY"], "status": " ".join(args)}
