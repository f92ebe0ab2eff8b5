"""The UTH round machine (docs/rounds-uth.md): `UthMachine(UthConfig(...))`."""

from controller.rounds.uth.machine import EVENT_KINDS, OTHER_GAME, ROUTES, UthMachine
from controller.rounds.uth.state import PHASES, Phase, UthConfig, UthState

__all__ = [
    "EVENT_KINDS", "OTHER_GAME", "PHASES", "ROUTES", "Phase", "UthConfig", "UthMachine",
    "UthState",
]
