"""The automatic dice shaker (Pai Gow): shakes the cup and reads the dice.

Command:  shake {}
Events:   dice.result {box_dice: [a, b, c], cut_die: n | null}
          dice.not_flat {}                 a die not lying flat: the dealer reshakes
                                           (NSW 8.3, NZ 9.8, ACT 13.1)
          shaker.fault {reason}            cover open, motor fault, no answer

The cut die is the fourth, differently coloured die of NSW 2.4; other profiles shake three dice
and report `cut_die: null`. A driver reports through the `_report_*` helpers so every
implementation keeps the same states and counters.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from devices.base import Device, DeviceError, State

BOX_DICE = 3


class DiceShaker(Device):
    COMMANDS: ClassVar[tuple[str, ...]] = ("shake",)
    EVENTS: ClassVar[tuple[str, ...]] = ("dice.result", "dice.not_flat", "shaker.fault")

    def __init__(self, name: str = "shaker", *, cut_die: bool = False) -> None:
        super().__init__(name)
        self.cut_die = cut_die

    async def _cmd_shake(self, args: Mapping[str, Any]) -> None:
        if self.state == State.BUSY:
            # One cup: a second shake before the first answered is a controller bug.
            raise DeviceError(f"{self.name}.shake: a shake is already in progress")
        self.counters["shakes"] += 1
        self.state = State.BUSY
        await self.shake()

    @abstractmethod
    async def shake(self) -> None:
        """Start one shake; the outcome arrives as one of the EVENTS."""

    def _report_result(self, box_dice: Sequence[int], cut_die: int | None) -> None:
        if len(box_dice) != BOX_DICE or not all(1 <= d <= 6 for d in box_dice):
            self._report_fault(f"bad dice reading {list(box_dice)!r}")
            return
        if (cut_die is not None) != self.cut_die or (cut_die is not None and not 1 <= cut_die <= 6):
            self._report_fault(f"bad cut die reading {cut_die!r}")
            return
        self.state = State.READY
        self.counters["results"] += 1
        self._post("dice.result", {"box_dice": list(box_dice), "cut_die": cut_die})

    def _report_not_flat(self) -> None:
        self.state = State.READY
        self.counters["not_flat"] += 1
        self._post("dice.not_flat", {})

    def _report_fault(self, reason: str, *, offline: bool = False) -> None:
        if offline:
            self._fault(reason, state=State.OFFLINE, counter="timeouts")
        else:
            self._fault(reason)
        self._post("shaker.fault", {"reason": reason})
