"""The table's GPIO inputs and the jackpot lamps, seen as one device named "sensors".

Events:   chung.on {box} / chung.off {box}           Pai Gow chung sensor (who holds the bank)
          off.pressed {box} / off.released {box}     Pai Gow OFF button (box out of play)
          bet.on {box} / bet.off {box}               UTH jackpot bet sensor of a seat
          dealer.<action> {...}                      a dealer keypad button (action names from
                                                     the config's [devices.gpio.keypad])
          table.open {} / table.close {}             the table-closed key switch
Command:  lamps {box?, state}   state idle | bet | locked | win; without `box`: every lamp

Inputs are reported as edges. A driver reports through `_input`, which runs on the loop: it keeps
the live input states (for `tablectl devices watch`) and drops an edge that does not change a
state (a repeated "on"), counting it, so a bouncing or replayed edge is never acted on twice.
Debouncing raw pin levels is the GPIO driver's job (issue 5).
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from devices.base import Device, DeviceError, DeviceEvent, arg_int, arg_str

LAMP_STATES = ("idle", "bet", "locked", "win")
_ACTION = re.compile(r"[a-z][a-z0-9_]{0,31}")

# event kind -> (input group, state the edge sets)
_EDGES: dict[str, tuple[str, bool]] = {
    "chung.on": ("chung", True),
    "chung.off": ("chung", False),
    "off.pressed": ("off", True),
    "off.released": ("off", False),
    "bet.on": ("bet", True),
    "bet.off": ("bet", False),
}


class Sensors(Device):
    COMMANDS: ClassVar[tuple[str, ...]] = ("lamps",)
    EVENTS: ClassVar[tuple[str, ...]] = (*_EDGES, "dealer.<action>", "table.open", "table.close")

    def __init__(
        self, name: str = "sensors", *, boxes: int, keypad: Iterable[str] | None = None
    ) -> None:
        super().__init__(name)
        if not 1 <= boxes <= 8:
            raise DeviceError(f"{name}: boxes must be 1..8, got {boxes!r}")
        self.boxes = boxes
        # None: any well-formed action (simulation, `tablectl dealer`); else the wired buttons.
        self.keypad: frozenset[str] | None = frozenset(keypad) if keypad is not None else None
        self.levels: dict[str, set[int]] = {"chung": set(), "off": set(), "bet": set()}
        self.table_open: bool | None = None  # unknown until the switch is first read

    async def _cmd_lamps(self, args: Mapping[str, Any]) -> None:
        state = arg_str(self.name, "lamps", args, "state", LAMP_STATES)
        box = None
        if args.get("box") is not None:
            box = arg_int(self.name, "lamps", args, "box", lo=1, hi=self.boxes)
        await self.set_lamp(box, state)

    @abstractmethod
    async def set_lamp(self, box: int | None, state: str) -> None:
        """Light one seat's lamp (or all of them when `box` is None)."""

    def inputs(self) -> dict[str, Any]:
        """The live input states."""
        return {
            "chung": sorted(self.levels["chung"]),
            "off": sorted(self.levels["off"]),
            "bet": sorted(self.levels["bet"]),
            "table_open": self.table_open,
        }

    # --- reporting ------------------------------------------------------------------------------

    def check_box(self, box: int) -> int:
        if isinstance(box, bool) or not isinstance(box, int) or not 1 <= box <= self.boxes:
            raise DeviceError(f"{self.name}: box {box!r} outside 1..{self.boxes}")
        return box

    def check_action(self, action: str) -> str:
        if not isinstance(action, str) or not _ACTION.fullmatch(action):
            raise DeviceError(f"{self.name}: bad keypad action {action!r}")
        if self.keypad is not None and action not in self.keypad:
            wired = ", ".join(sorted(self.keypad)) or "none"
            raise DeviceError(f"{self.name}: no keypad button {action!r} (wired: {wired})")
        return action

    def _input(self, kind: str, data: Mapping[str, Any] | None = None) -> None:
        """Report an input edge; safe from any thread (gpiozero callbacks)."""
        if not self._on_loop(self._apply_input, kind, dict(data or {})):
            self.counters["events_dropped"] += 1

    def _apply_input(self, kind: str, data: dict[str, Any]) -> None:
        if kind in _EDGES:
            group, level = _EDGES[kind]
            boxes = self.levels[group]
            box = data["box"]
            if (box in boxes) == level:
                self.counters["repeated_edges"] += 1
                return
            if level:
                boxes.add(box)
            else:
                boxes.discard(box)
        elif kind in ("table.open", "table.close"):
            is_open = kind == "table.open"
            if self.table_open == is_open:
                self.counters["repeated_edges"] += 1
                return
            self.table_open = is_open
        self.counters["inputs"] += 1
        # Already a loop callback of its own: deliver without another hop.
        self._deliver(DeviceEvent(kind, data))
