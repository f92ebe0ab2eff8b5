"""A serial device's config section, `[devices.<name>]`, and its reader.

Every serial device (shaker, shuffler, meter, card reader) has the same keys; each device's own
`config.py` gives its section's name and its default port and baud rate (`SerialSection`), which
its descriptor (devices/kind.py) names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from devices.kind import Section, Setup
from shared.config_reader import Table

BAUD_RATES = (1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400)
_USB_ID = re.compile(r"[0-9a-f]{4}")


@dataclass(frozen=True)
class SerialConfig:
    port: str
    baud: int
    usb_vendor: str | None = None  # 4 hex digits, for the udev rule's stable name
    usb_product: str | None = None
    usb_serial: str | None = None
    answer_timeout_ms: int = 1000  # no answer within this: the device is reported offline


@dataclass(frozen=True)
class SerialSection(Section):
    """A serial device's section: `[devices.<name>]`, with the port udev names for it."""

    name: str
    port: str
    baud: int

    def read(self, t: Table) -> SerialConfig:
        hexid = "4 lowercase hex digits, e.g. '0403'"
        cfg = SerialConfig(
            port=t.string(
                "port", self.port, pattern=re.compile(r"/\S+"), what="an absolute device path"
            ),
            baud=t.integer("baud", self.baud),  # one of BAUD_RATES, checked below
            usb_vendor=t.string("usb_vendor", None, pattern=_USB_ID, what=hexid),
            usb_product=t.string("usb_product", None, pattern=_USB_ID, what=hexid),
            usb_serial=t.string(
                "usb_serial", None, pattern=re.compile(r"[!-~]{1,64}"), what="printable ASCII"
            ),
            answer_timeout_ms=t.integer("answer_timeout_ms", 1000, lo=10, hi=60_000),
        )
        if cfg.baud is not None and cfg.baud not in BAUD_RATES:
            t.error("baud", f"must be one of {', '.join(map(str, BAUD_RATES))}, got {cfg.baud}")
        if (cfg.usb_vendor is None) != (cfg.usb_product is None):
            t.error(
                "usb_product", "usb_vendor and usb_product go together (the udev rule needs both)"
            )
        t.done()
        return cfg

    def for_simulator(self, cfg: Any, setup: Setup, port: str | None) -> SerialConfig:
        """The section on the simulator's pty, at the device's own baud rate."""
        timeout = cfg.answer_timeout_ms if cfg is not None else 1000
        return SerialConfig(port=port or self.port, baud=self.baud, answer_timeout_ms=timeout)
