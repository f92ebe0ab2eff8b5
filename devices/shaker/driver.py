"""The dice shaker driver: our framed protocol over a serial port (docs/protocols.md).

    host -> shaker   SHAKE | STATUS | TEST
    shaker -> host   SHAKING                     progress (restarts the answer timer)
                     DICE a b c x                the three box dice, x the cut die or "-"
                     NOTFLAT                     a die is not lying flat (reshake)
                     FAULT reason...             cover open, motor fault, ...
                     STATUS READY|BUSY|FAULT [reason...]
                     TEST OK a b c x | TEST FAIL reason...   a shake that reports no game event

Dice, a tilt or a fault nobody asked for are never turned into game events: a result only
answers our SHAKE. An unsolicited FAULT (the cover opened between rounds) updates the health.
"""

from __future__ import annotations

from typing import Any

from devices.base import DeviceError, State
from devices.errors import MessageError
from devices.proto.channel import POLL_S, ChannelDriver
from devices.proto.serial_config import SerialConfig
from devices.shaker import DiceShaker

TEST_ANSWERS = frozenset({"TEST"})


def parse_die(token: str) -> int | None:
    if token == "-":
        return None
    if not token.isdigit() or len(token) != 1:
        raise MessageError(f"die {token!r} is not a digit")
    return int(token)


class SerialShaker(ChannelDriver, DiceShaker):
    def __init__(
        self,
        cfg: SerialConfig,
        name: str = "shaker",
        *,
        cut_die: bool = False,
        poll_s: float = POLL_S,
    ) -> None:
        super().__init__(name, cut_die=cut_die)
        self._attach(cfg, self._no_answer, poll_s=poll_s)

    async def shake(self) -> None:
        self.channel.request("SHAKE")

    def _no_answer(self, reason: str) -> None:
        # A port that is gone is a fault (counted `faults`), not a silence (`timeouts`). Pai Gow
        # has no "shaker back" event: the round waits for the dealer's next shake (shaker.fault).
        self._report_fault(reason, offline=self.port_down is None)

    def _message(self, verb: str, args: list[str]) -> None:
        shaking = self.channel.waiting == "SHAKE"
        if verb == "SHAKING" and shaking:
            self.channel.progress()
        elif verb == "DICE" and shaking:
            self.channel.answered()
            if len(args) != 4:
                self._report_fault(f"bad dice reading {' '.join(args)!r}")
                return
            try:
                dice = [parse_die(t) for t in args[:3]]
                cut = parse_die(args[3])
            except ValueError as exc:
                self._report_fault(f"bad dice reading: {exc}")
                return
            if None in dice:
                self._report_fault(f"bad dice reading {' '.join(args)!r}")
                return
            self._report_result([d for d in dice if d is not None], cut)
        elif verb == "NOTFLAT" and shaking:
            self.channel.answered()
            self._report_not_flat()
        elif verb == "FAULT":
            reason = " ".join(args) or "fault"
            if shaking:
                self.channel.answered()
                self._report_fault(reason)
            else:
                self._fault(reason)  # between shakes: health only, no game event
        elif verb == "STATUS":
            if not shaking:  # while shaking, the shake's answer says how it went
                self._idle_status(args)
        else:
            self.counters["unsolicited"] += 1

    async def selftest(self) -> dict[str, Any]:
        """One shake whose dice are shown to the technician, never to the round."""
        if not self.started:
            return {"ok": False, "error": "not started"}
        if self.state == State.BUSY:
            return {"ok": False, "error": "a shake is in progress"}
        try:
            _, args = await self.channel.ask("TEST", answers=TEST_ANSWERS)
        except DeviceError as exc:
            return {"ok": False, "error": str(exc)}
        if args[:1] == ["OK"] and len(args) == 5:
            try:
                dice = [parse_die(t) for t in args[1:4]]
                cut = parse_die(args[4])
            except ValueError as exc:
                return {"ok": False, "error": f"bad dice reading: {exc}"}
            ok = None not in dice and all(1 <= (d or 0) <= 6 for d in dice)
            return {"ok": ok, "box_dice": dice, "cut_die": cut}
        return {"ok": False, "error": " ".join(args[1:]) or "test failed"}
