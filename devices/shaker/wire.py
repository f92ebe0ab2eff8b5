"""The dice shaker as hardware behind a pty pair: the framed protocol (docs/protocols.md) over
the hardware model (devices/shaker/model.py), for the real driver to talk to."""

from __future__ import annotations

import random

from devices.proto.wire_sim import FramedSim, ticks
from devices.shaker.model import ShakerFaults, ShakerModel


class PtyShakerSim(ShakerFaults, FramedSim):
    def __init__(
        self,
        *,
        cut_die: bool = False,
        rng: random.Random | None = None,
        shake_time_s: float = 0.0,
        not_flat_probability: float = 0.0,
    ) -> None:
        super().__init__(rng)
        self.model = ShakerModel(
            cut_die=cut_die, rng=self.rng, not_flat_probability=not_flat_probability
        )
        self.shake_time_s = shake_time_s

    def on_SHAKE(self, args: list[str]) -> None:
        refused = self.model.start()
        if refused is not None:
            self.later(0, self.say, "FAULT", refused)
            return
        for t in ticks(self.shake_time_s):
            self.later(t, self.say, "SHAKING")
        self.later(self.shake_time_s, self._settle)

    def _settle(self) -> None:
        shake = self.model.settle()
        if shake.fault is not None:
            self.say("FAULT", shake.fault)
        elif shake.not_flat:
            self.say("NOTFLAT")
        else:
            self.say("DICE", *shake.box_dice, _die(shake.cut_die))

    def on_TEST(self, args: list[str]) -> None:
        if self.model.cover_open:
            self.later(0, self.say, "TEST", "FAIL", "cover open")
        else:
            dice, cut = self.model.roll()
            self.later(self.shake_time_s, self.say, "TEST", "OK", *dice, _die(cut))

    def on_STATUS(self, args: list[str]) -> None:
        self.say("STATUS", *(("FAULT", "cover open") if self.model.cover_open else ("READY",)))


def _die(cut_die: int | None) -> object:
    """The cut die on the wire: its face, or "-" for a shaker without one."""
    return "-" if cut_die is None else cut_die
