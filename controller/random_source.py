"""The table's random source, seen as a device: the round machines are pure, so any random
choice they need (NZ 9.3A(c): a cut selected through a random method) is asked for as a device
command and answered as an event, which the journal records like any other input.

The CSPRNG is the operating system's (`secrets.SystemRandom`); tests may inject a seeded Random.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Mapping
from typing import Any, ClassVar

from controller.events import Kind
from controller.games.paigow.cuts import Cut, random_cut
from controller.games.paigow.profiles import parse_profile
from devices.base import Device, DeviceError
from shared.errors import InputError


class RandomSource(Device):
    COMMANDS: ClassVar[tuple[str, ...]] = ("select_cut",)
    EVENTS: ClassVar[tuple[str, ...]] = (Kind.CUT_SELECTED,)

    def __init__(self, name: str = "rng", rng: random.Random | None = None) -> None:
        super().__init__(name)
        self._rng = rng if rng is not None else secrets.SystemRandom()

    async def _cmd_select_cut(self, args: Mapping[str, Any]) -> None:
        try:
            profile = parse_profile(str(args.get("profile", "")))
            approved = [Cut(c) for c in args.get("approved") or []] or None
            decision = random_cut(profile, approved=approved, rng=self._rng)
        except (InputError, ValueError) as exc:
            raise DeviceError(f"rng.select_cut: {exc}") from None
        options = sorted(o.value for o in decision.options or ())
        self._post(Kind.CUT_SELECTED, {"cut": decision.cut.value, "options": options})

    async def selftest(self) -> dict[str, Any]:
        sample = [self._rng.randrange(6) for _ in range(600)]
        # Every face of a die within 600 draws; fails only on a broken source (p < 1e-40).
        ok = len(set(sample)) == 6
        return {"ok": ok, "source": type(self._rng).__name__}
