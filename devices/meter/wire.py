"""The meter as hardware behind a pty pair: an Alpha sign (docs/protocols.md) over the sign's
model; it shows what it is written and answers reads of its TEXT file."""

from __future__ import annotations

import random

from devices.meter.model import MeterFaces, MeterModel
from devices.proto.alpha import READ_TEXT, AlphaDecoder, encode_text_reply
from devices.proto.wire_sim import WireSim
from devices.simbase import default_rng


class PtyMeterSim(MeterFaces, WireSim):
    def __init__(self, *, rng: random.Random | None = None) -> None:
        super().__init__(rng if rng is not None else default_rng())
        self.model = MeterModel()
        self.decoder = AlphaDecoder(self.counters)

    def _received(self, data: bytes) -> None:
        for packet in self.decoder.feed(data):
            if packet.command == READ_TEXT:
                self.later(0, self.wire_write, encode_text_reply(self.model.text))
                continue
            parsed = packet.text()
            if parsed is None:
                self.counters["ignored"] += 1
                continue
            _, mode, text = parsed
            self.model.show(text, mode)
