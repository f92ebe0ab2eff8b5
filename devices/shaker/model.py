"""The dice shaker as hardware: a cup, three dice (four with NSW 2.4's cut die), a cover.

One model behind both simulators (sim.py in-process, wire.py behind a pty), so an injected fault
behaves the same whichever one a test or a table runs. Fault injection:
    not_flat_next(n), not_flat_probability   a die does not lie flat (the dealer reshakes)
    fail_next(reason)                       the next shake ends in that fault ("motor fault")
    cover_open                              every shake and test fails at once: "cover open"
Randomness is the OS CSPRNG unless a seeded `random.Random` is passed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from devices.errors import DeviceError
from devices.shaker.interface import BOX_DICE
from devices.simbase import default_rng


@dataclass(frozen=True)
class Shake:
    """How a shake came out: dice (and the cut die, or None), not flat, or a fault."""

    box_dice: tuple[int, ...] = ()
    cut_die: int | None = None
    not_flat: bool = False
    fault: str | None = None


class ShakerModel:
    def __init__(
        self,
        *,
        cut_die: bool = False,
        rng: random.Random | None = None,
        not_flat_probability: float = 0.0,
    ) -> None:
        if not 0.0 <= not_flat_probability <= 1.0:
            raise DeviceError("shaker: not_flat_probability must be within 0..1")
        self.cut_die = cut_die
        self.rng = rng if rng is not None else default_rng()
        self.not_flat_probability = not_flat_probability
        self.cover_open = False
        self.shakes = 0
        self._not_flat = 0
        self._fail: list[str] = []

    def not_flat_next(self, times: int = 1) -> None:
        self._not_flat += times

    def fail_next(self, reason: str = "motor fault") -> None:
        self._fail.append(reason)

    def roll(self) -> tuple[list[int], int | None]:
        dice = [self.rng.randint(1, 6) for _ in range(BOX_DICE)]
        return dice, self.rng.randint(1, 6) if self.cut_die else None

    def start(self) -> str | None:
        """A shake is asked for: the fault that stops it at once (cover open), or None."""
        self.shakes += 1
        return "cover open" if self.cover_open else None

    def settle(self) -> Shake:
        """The cup stops: how the dice lie."""
        if self._fail:
            return Shake(fault=self._fail.pop(0))
        # Only consult the rng for tilts when they can happen, so a seeded run's dice do not
        # depend on whether fault injection is configured.
        if self._not_flat or (
            self.not_flat_probability and self.rng.random() < self.not_flat_probability
        ):
            self._not_flat = max(0, self._not_flat - 1)
            return Shake(not_flat=True)
        dice, cut = self.roll()
        return Shake(box_dice=tuple(dice), cut_die=cut)


class ShakerFaults:
    """The model's faults on a simulator that holds one as `model`: both simulators answer to
    the same names (tests, `tablectl devices fault`)."""

    model: ShakerModel

    @property
    def shakes(self) -> int:
        return self.model.shakes

    def not_flat_next(self, times: int = 1) -> None:
        self.model.not_flat_next(times)

    def fail_next(self, reason: str = "motor fault") -> None:
        self.model.fail_next(reason)

    @property
    def cover_open(self) -> bool:
        return self.model.cover_open

    @cover_open.setter
    def cover_open(self, value: bool) -> None:
        self.model.cover_open = value
