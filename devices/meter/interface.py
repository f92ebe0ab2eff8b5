"""The progressive meter / table display.

Commands (the daemon hands each `Effect("display", {mode, ...})` to `display`, which maps it
to one of the others, see `display_command`):
  display {mode, ...}           a display effect as the round machine made it
  pool {amount, after_award?}   the pool value in cents
  win {amount, box}             WIN with the amount and the box
  offline {}                    head office unreachable / jackpot equipment failure (UTH 11.11)
  closed {}                     table closed
  announce {text}               e.g. Pai Gow "FIRST BOX 5 / CUT TIGER"
  pending {box}                 a jackpot hit awaiting head office's award
Events: none (the driver adds PORT_EVENTS).

Display effects of other modes that carry a `text` (e.g. Pai Gow's "betting", "setting") are
shown as announcements; `display_command` does that mapping.

The displayed pool never decreases except after a win: a `win` (at this table), or a pool value
marked `after_award` (a logged award elsewhere on a linked pool, or an authorised adjustment)
allows the next pool value to be lower. Any other lower value is refused: the meter keeps
showing the value it showed, counts `decrease_refused` and records the error. This rule lives
here, in the interface, so the simulator and the real Alpha-protocol driver both obey it.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from devices.base import Device, DeviceError, arg_int, arg_str
from shared.money import dollars as format_cents  # the one formatter (issue 30)

MAX_TEXT = 80  # longest announcement; longer text is cut, counted as `truncated`
MAX_BOX = 8
# The real driver reports its serial port going and coming back (devices/meter/driver.py).
PORT_EVENTS: tuple[str, ...] = ("meter.fault", "meter.ready")


@dataclass(frozen=True)
class MeterView:
    """What the meter shows: the mode and its text, with the amount/box it was made from."""

    mode: str
    text: str
    amount: int | None = None
    box: int | None = None


def display_command(data: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A display effect's data -> (meter command, args). A mode the meter has no command for
    is shown as an announcement of its `text`."""
    if "mode" not in data:
        raise DeviceError(f"display effect without a mode: {dict(data)!r}")
    mode = str(data["mode"])
    args = {k: v for k, v in data.items() if k != "mode"}
    if mode not in Meter.COMMANDS and isinstance(data.get("text"), str):
        return "announce", args
    return mode, args


def _text(args: Mapping[str, Any], default: str) -> str:
    """The effect's own wording when it gives one (e.g. "TABLE CLOSED"), else ours."""
    text = args.get("text")
    return text.strip()[:MAX_TEXT] if isinstance(text, str) and text.strip() else default


class Meter(Device):
    COMMANDS: ClassVar[tuple[str, ...]] = (
        "pool",
        "win",
        "offline",
        "closed",
        "announce",
        "pending",
        "display",
    )
    EVENTS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, name: str = "meter") -> None:
        super().__init__(name)
        self.pool_shown: int | None = None  # the last pool value displayed
        self.view: MeterView | None = None
        self._may_decrease = False  # set by a win, spent by the next pool value

    async def _cmd_display(self, args: Mapping[str, Any]) -> None:
        """A display effect's data: the command its mode names, or an announcement of its text
        (`display_command`); the daemon knows no more of the meter than this command."""
        command, rest = display_command(args)
        if command == "display" or command not in self.COMMANDS:
            supported = ", ".join(c for c in self.COMMANDS if c != "display")
            raise DeviceError(f"{self.name}: unknown display mode {command!r} (one of {supported})")
        await getattr(self, f"_cmd_{command}")(rest)

    async def _cmd_pool(self, args: Mapping[str, Any]) -> None:
        amount = arg_int(self.name, "pool", args, "amount", lo=0)
        allowed = self._may_decrease or bool(args.get("after_award", False))
        if self.pool_shown is not None and amount < self.pool_shown and not allowed:
            self.counters["decrease_refused"] += 1
            self.last_error = (
                f"pool {format_cents(amount)} below the shown {format_cents(self.pool_shown)}"
                " without a win: kept"
            )
            amount = self.pool_shown
        self.pool_shown = amount
        self._may_decrease = False
        await self._display(MeterView("pool", format_cents(amount), amount=amount))

    async def _cmd_win(self, args: Mapping[str, Any]) -> None:
        amount = arg_int(self.name, "win", args, "amount", lo=1)
        box = arg_int(self.name, "win", args, "box", lo=1, hi=MAX_BOX)
        self._may_decrease = True
        self.counters["wins"] += 1
        text = f"WIN {format_cents(amount)} BOX {box}"
        await self._display(MeterView("win", text, amount=amount, box=box))

    async def _cmd_offline(self, args: Mapping[str, Any]) -> None:
        await self._display(MeterView("offline", _text(args, "OFFLINE")))

    async def _cmd_closed(self, args: Mapping[str, Any]) -> None:
        await self._display(MeterView("closed", _text(args, "CLOSED")))

    async def _cmd_pending(self, args: Mapping[str, Any]) -> None:
        box = arg_int(self.name, "pending", args, "box", lo=1, hi=MAX_BOX)
        await self._display(MeterView("pending", f"JACKPOT BOX {box} PENDING", box=box))

    async def _cmd_announce(self, args: Mapping[str, Any]) -> None:
        text = arg_str(self.name, "announce", args, "text").strip()
        if not text:
            raise DeviceError(f"{self.name}.announce: empty text")
        if len(text) > MAX_TEXT:
            self.counters["truncated"] += 1
            text = text[:MAX_TEXT]
        await self._display(MeterView("announce", text))

    async def _display(self, view: MeterView) -> None:
        self.view = view
        self.counters["updates"] += 1
        await self._show(view)

    @abstractmethod
    async def _show(self, view: MeterView) -> None:
        """Put `view` on the display (the driver paces and frames the writes)."""
