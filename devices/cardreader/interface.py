"""The card reader's interface (devices/cardreader/__init__.py); drivers report through the
`_report_*` helpers so each keeps the same states and counters."""

from __future__ import annotations

import re
from typing import ClassVar

from devices.base import Device

CARD_ID = re.compile(r"[A-Za-z0-9_-]{4,32}")  # the patron contract's opaque id
MAX_BOXES = 16


class CardReader(Device):
    COMMANDS: ClassVar[tuple[str, ...]] = ()
    EVENTS: ClassVar[tuple[str, ...]] = (
        "cardreader.read", "cardreader.unreadable", "cardreader.removed", "cardreader.fault")

    def __init__(self, name: str = "cardreader", *, boxes: int = 7) -> None:
        super().__init__(name)
        self.boxes = boxes

    def _box(self, token: str) -> int | None:
        return int(token) if token.isdigit() and 1 <= int(token) <= self.boxes else None

    def _report_read(self, box: int, card: str) -> None:
        if not CARD_ID.fullmatch(card):
            self._report_unreadable(box)  # a malformed id is as good as no read
            return
        self.counters["reads"] += 1
        self._post("cardreader.read", {"box": box, "card": card})

    def _report_unreadable(self, box: int) -> None:
        self.counters["unreadable"] += 1
        self._post("cardreader.unreadable", {"box": box})

    def _report_removed(self, box: int) -> None:
        self.counters["removed"] += 1
        self._post("cardreader.removed", {"box": box})

    def _report_fault(self, reason: str) -> None:
        self._fault(reason)
        self._post("cardreader.fault", {"reason": reason})
