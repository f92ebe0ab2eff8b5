"""The result of a player's wager against the bank, and of the bank's own wager.

Per hand: the player takes a hand only with a strictly stronger hand. Copies (same points, equal
highest tile) and identical hands go to the bank (NSW 9.2.2.3-9.2.2.4, NZ 4.5-4.6, ACT 12.4);
zero against zero goes to the bank (NSW 9.2.2.2, NZ 4.7, ACT 12.5).

Whole wager: the player wins with both hands, loses with neither, and it is a push (stand-off)
otherwise (NSW 9.2.1-9.2.3, NZ 6.1, ACT 12.1-12.2). The bank's wager is the mirror image
(NSW 9.4, whose items the text prints 9.3.1-9.3.3; NZ 6.2).

Profile difference, read literally: ACT 12.5 gives zero-against-zero to the bank only for the low
hand; two zero high hands fall under ACT 12.3 (same total: the higher-ranking tile decides). NSW
9.2.2.2 ("either the high or low hand") and NZ 4.7 (any two-tile hand of 0) apply it to both.
"""

from __future__ import annotations

from enum import StrEnum

from controller.games.paigow.profiles import Profile
from controller.games.paigow.settings import Setting


class Outcome(StrEnum):
    WIN = "win"
    LOSE = "lose"
    PUSH = "push"

    def mirrored(self) -> Outcome:
        return {Outcome.WIN: Outcome.LOSE, Outcome.LOSE: Outcome.WIN}.get(self, Outcome.PUSH)


def player_takes_high(player: Setting, banker: Setting, profile: Profile) -> bool:
    if profile is Profile.ACT:
        return player.high.key_by_tile > banker.high.key_by_tile
    return player.high.key > banker.high.key


def player_takes_low(player: Setting, banker: Setting) -> bool:
    return player.low.key > banker.low.key


def player_outcome(player: Setting, banker: Setting, profile: Profile) -> Outcome:
    """The player's wager against the bank."""
    won = player_takes_high(player, banker, profile) + player_takes_low(player, banker)
    return (Outcome.LOSE, Outcome.PUSH, Outcome.WIN)[won]


def banker_outcome(player: Setting, banker: Setting, profile: Profile) -> Outcome:
    """The bank's wager against one player (NSW 9.4 and its items 9.3.1-9.3.3, NZ 6.2)."""
    return player_outcome(player, banker, profile).mirrored()
