"""The meter as hardware: a sign that shows one text at a time and remembers nothing else.

One model behind both simulators (sim.py in-process, wire.py an Alpha sign behind a pty);
`shown` lists every text it was given, in order, for tests and the curious.
"""

from __future__ import annotations


class MeterModel:
    def __init__(self) -> None:
        self.text = ""  # what the sign shows now
        self.mode = ""  # the display mode it was written with (Alpha: hold, flash, rotate)
        self.shown: list[str] = []

    def show(self, text: str, mode: str = "") -> None:
        self.text, self.mode = text, mode
        self.shown.append(text)


class MeterFaces:
    """What a simulator holding a `model` shows, by the same names on both simulators."""

    model: MeterModel

    @property
    def text(self) -> str:
        return self.model.text

    @text.setter
    def text(self, value: str) -> None:  # tests: a power blip garbles the sign
        self.model.text = value

    @property
    def mode(self) -> str:
        return self.model.mode

    @property
    def shown(self) -> list[str]:
        return self.model.shown
