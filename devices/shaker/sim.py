"""The dice shaker simulated in-process: the driver side of `DiceShaker` over the hardware model.

Faults are the model's (`not_flat_next`, `not_flat_probability`, `fail_next`, `cover_open`,
devices/shaker/model.py), plus `no_answer = True`: a shake is never answered, and after
`answer_timeout_s` the driver side reports shaker.fault "no answer". All timers run on the
daemon's loop; nothing blocks.
"""

from __future__ import annotations

import random
from typing import Any

from devices.shaker.interface import DiceShaker
from devices.shaker.model import ShakerFaults, ShakerModel
from devices.simbase import Timers


class SimShaker(ShakerFaults, DiceShaker):
    def __init__(
        self,
        name: str = "shaker",
        *,
        cut_die: bool = False,
        rng: random.Random | None = None,
        not_flat_probability: float = 0.0,
        shake_time_s: float = 0.0,
        answer_timeout_s: float = 1.0,
    ) -> None:
        super().__init__(name, cut_die=cut_die)
        self.model = ShakerModel(
            cut_die=cut_die, rng=rng, not_flat_probability=not_flat_probability
        )
        self.rng = self.model.rng
        self.shake_time_s = shake_time_s
        self.answer_timeout_s = answer_timeout_s
        self.no_answer = False
        self._timers = Timers()

    async def _close(self) -> None:
        self._timers.cancel()

    def _timed_out(self) -> None:
        self._report_fault("no answer", offline=True)

    async def shake(self) -> None:
        if self.no_answer:
            self._timers.later(self.answer_timeout_s, self._timed_out)
            return
        refused = self.model.start()
        if refused is not None:
            self._timers.later(0, self._answer_fault, refused)
            return
        self._timers.later(self.shake_time_s, self._answer)

    def _answer_fault(self, reason: str) -> None:
        self._seen()
        self._report_fault(reason)

    def _answer(self) -> None:
        self._seen()
        shake = self.model.settle()
        if shake.fault is not None:
            self._report_fault(shake.fault)
        elif shake.not_flat:
            self._report_not_flat()
        else:
            self._report_result(shake.box_dice, shake.cut_die)

    async def selftest(self) -> dict[str, Any]:
        if self.no_answer:
            return {"ok": False, "error": "no answer"}
        if self.model.cover_open:
            return {"ok": False, "error": "cover open"}
        dice, cut = self.model.roll()
        return {"ok": True, "box_dice": dice, "cut_die": cut}
