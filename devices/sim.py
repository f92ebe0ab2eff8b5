"""The whole table simulated in-process, so the daemon runs on any machine (`--simulate`).

Each simulator implements its device's interface and plays both the driver and the hardware,
over the same hardware model its wire simulator uses (devices/<device>/model.py): commands
answer with the same events the real device produces, after a configurable delay, and the
simulated players and dealer act through plain methods (`SimShuffler.dispense`,
`SimSensors.place_chung`, ...). Randomness (dice, shuffles) comes from the operating system's
CSPRNG unless a seeded `random.Random` is injected for reproducible tests. Faults are injected
through methods named for the fault (docs/devices.md).

Which simulators a table gets is each device's descriptor's (devices/kind.py): every device the
game uses that has an in-process simulator, an optional one (the card reader) only where
configured. Each is imported only here, when built (issue 31).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from devices.base import Device
from devices.kind import Setup
from devices.kinds import kinds

if TYPE_CHECKING:
    from devices.build import TableConfig


def build_simulators(cfg: TableConfig, rng: random.Random | None = None) -> dict[str, Device]:
    """The simulated devices a configured table uses, keyed by device name.

    `rng` (tests, reproducible demos) is shared by the shaker and the shuffler; by default each
    uses the CSPRNG. The simulated keypad has every button: the simulated dealer and
    `tablectl dealer` may use any action, wired on the real table or not.
    """
    how = Setup(needs=cfg.needs, boxes=cfg.boxes, rng=rng)
    devices: list[Device] = [
        kind.sim.make(how)
        for kind in kinds()
        if kind.sim is not None
        and kind.simulated(cfg.devices.section(kind.section.name) is not None, cfg.needs)
    ]
    return {d.name: d for d in devices}
