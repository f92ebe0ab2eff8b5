"""The UTH round machine (docs/rounds-uth.md): `UthMachine(UthConfig(...))`."""

from controller.rounds.uth.machine import EVENT_KINDS, ROUTES, UthMachine
from controller.rounds.uth.state import PHASES, Phase, UthConfig, UthState

__all__ = ["EVENT_KINDS", "PHASES", "ROUTES", "Phase", "UthConfig", "UthMachine", "UthState"]
