"""The meter simulated in-process: the `Meter` interface over the sign's model; it also keeps
every `MeterView` it was asked to show (`views`)."""

from __future__ import annotations

from typing import Any

from devices.meter.interface import Meter, MeterView
from devices.meter.model import MeterFaces, MeterModel


class SimMeter(MeterFaces, Meter):
    def __init__(self, name: str = "meter") -> None:
        super().__init__(name)
        self.model = MeterModel()
        self.views: list[MeterView] = []

    async def _show(self, view: MeterView) -> None:
        self._seen()
        self.views.append(view)
        self.model.show(view.text, view.mode)

    async def selftest(self) -> dict[str, Any]:
        return {"ok": True, "text": self.text}
