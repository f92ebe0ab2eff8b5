"""The whole table simulated in-process, so the daemon runs on any machine (`--simulate`).

Each simulator implements its device's interface and plays both the driver and the hardware,
over the same hardware model its wire simulator uses (devices/<device>/model.py): commands
answer with the same events the real device produces, after a configurable delay, and the
simulated players and dealer act through plain methods (`SimShuffler.dispense`,
`SimSensors.place_chung`, ...). Randomness (dice, shuffles) comes from the operating system's
CSPRNG unless a seeded `random.Random` is injected for reproducible tests. Faults are injected
through methods named for the fault (docs/devices.md).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from devices.base import Device
from devices.meter.sim import SimMeter
from devices.sensors.sim import SimSensors

if TYPE_CHECKING:
    from devices.build import TableConfig


def build_simulators(cfg: TableConfig, rng: random.Random | None = None) -> dict[str, Device]:
    """The simulated devices a configured table uses, keyed by device name.

    `rng` (tests, reproducible demos) is shared by the shaker and the shuffler; by default each
    uses the CSPRNG.
    """
    # The simulated keypad has every button: the simulated dealer and `tablectl dealer` may use
    # any action, wired on the real table or not.
    devices: list[Device] = [SimSensors(boxes=cfg.boxes), SimMeter()]
    needs = cfg.needs
    if "shaker" not in needs.unused:  # imported only by a table that has one (issue 31)
        from devices.shaker.sim import SimShaker

        devices.append(SimShaker(cut_die=needs.cut_die, rng=rng))
    if "shuffler" not in needs.unused:
        from devices.shuffler.sim import SimShuffler

        devices.append(SimShuffler(decks=needs.decks, rng=rng))
    return {d.name: d for d in devices}
