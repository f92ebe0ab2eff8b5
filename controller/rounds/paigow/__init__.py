"""The Pai Gow round machine (docs/rounds-paigow.md): `PaiGowMachine(PaiGowConfig(...))`."""

from controller.rounds.paigow.core import Refused
from controller.rounds.paigow.machine import IGNORED, OTHER_GAME, ROUTES, PaiGowMachine
from controller.rounds.paigow.state import IN_ROUND, PHASES, PaiGowConfig, PaiGowState, Phase

__all__ = [
    "IGNORED", "IN_ROUND", "OTHER_GAME", "PHASES", "ROUTES", "PaiGowConfig", "PaiGowMachine",
    "PaiGowState", "Phase", "Refused",
]
