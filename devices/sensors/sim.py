"""The table's inputs and lamps simulated in-process: the simulated players and dealer touch
the table through plain methods, each emitting the event the GPIO driver would. (The wire-level
counterpart is the real GPIO driver on gpiozero's mock pins: devices/sensors/gpio.py.)"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from devices.base import DeviceError
from devices.sensors.interface import Sensors


class SimSensors(Sensors):
    """The simulated players and dealer touch the table through these methods; each emits the
    event the GPIO driver would. Lamps are recorded in `lamps` and `lamp_history`."""

    def __init__(
        self, name: str = "sensors", *, boxes: int, keypad: Iterable[str] | None = None
    ) -> None:
        super().__init__(name, boxes=boxes, keypad=keypad)
        self.lamps: dict[int, str] = dict.fromkeys(range(1, boxes + 1), "idle")
        self.lamp_history: list[tuple[int, str]] = []
        self._chung_box: int | None = None

    def _require_started(self) -> None:
        if not self.started:
            raise DeviceError(f"{self.name}: not started")

    def place_chung(self, box: int) -> None:
        """The chung is one physical marker: placing it on a box lifts it from the previous."""
        self._require_started()
        self.check_box(box)
        if self._chung_box == box:
            return
        if self._chung_box is not None:
            self._input("chung.off", {"box": self._chung_box})
        self._chung_box = box
        self._input("chung.on", {"box": box})

    def remove_chung(self) -> None:
        self._require_started()
        if self._chung_box is not None:
            self._input("chung.off", {"box": self._chung_box})
            self._chung_box = None

    def press_off(self, box: int) -> None:
        """The OFF button latches: the box stays out of play until `release_off`."""
        self._require_started()
        self._input("off.pressed", {"box": self.check_box(box)})

    def release_off(self, box: int) -> None:
        self._require_started()
        self._input("off.released", {"box": self.check_box(box)})

    def bet(self, box: int, on: bool = True) -> None:
        self._require_started()
        self._input("bet.on" if on else "bet.off", {"box": self.check_box(box)})

    def press_key(self, action: str, /, **data: Any) -> None:
        self._require_started()
        self._input(f"dealer.{self.check_action(action)}", data)

    def key_switch(self, open: bool) -> None:
        self._require_started()
        self._input("table.open" if open else "table.close", {})

    async def set_lamp(self, box: int | None, state: str) -> None:
        for b in [box] if box is not None else list(self.lamps):
            self.lamps[b] = state
            self.lamp_history.append((b, state))
        self.counters["lamp_writes"] += 1

    async def selftest(self) -> dict[str, Any]:
        return {"ok": True, "inputs": self.inputs(), "lamps": dict(self.lamps)}
