"""Lajas and re-shuffles before the deal, as the dealer keys them (NSW 7.3, 15.1-15.2, 15.4;
NZ 9.2-9.3, 12.1-12.2, 12.7; ACT 8.6, 13.2-13.3).

The table cannot see the tiles: what it can hold is who asked for a laja or re-shuffle and how
many tiles were exposed, which decides who may ask next (NSW 7.3.1, NZ 9.3) and what follows
(more than two tiles exposed in a laja: re-shuffle, NSW 15.2, NZ 12.2). Nothing here moves a
wager; each laja and re-shuffle is recorded in the round (`lajas`) for the audit trail.
"""

from __future__ import annotations

from dataclasses import replace

from controller.games.paigow.bank import BankHolder
from controller.games.paigow.profiles import Profile
from controller.rounds import fields
from controller.rounds.base import Now
from controller.rounds.paigow.core import Data, Result, bank_of, log
from controller.rounds.paigow.state import JSON, PaiGowConfig, PaiGowState
from shared.errors import InputError

LAJA_EXPOSED_RULE = {Profile.NSW: "NSW 15.2", Profile.NZ: "NZ 12.2"}  # > 2 exposed: re-shuffle
STACKING_RULE = {Profile.NSW: "NSW 15.1", Profile.NZ: "NZ 12.1", Profile.ACT: "ACT 13.2"}
SUPERVISOR_RULE = {Profile.NSW: "NSW 15.4", Profile.NZ: "NZ 12.7", Profile.ACT: "ACT 13.3"}
BEFORE_CUT_RULE = {Profile.NSW: "NSW 7.3.2", Profile.NZ: "NZ 9.2"}
MAX_EXPOSED = 32


def laja(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    """dealer.laja {by: "player"|"banker"|"dealer", approved?, exposed?}: a laja performed.

    by "dealer": the laja for a tile exposed in stacking (NSW 15.1, NZ 12.1; ACT 13.2
    re-shuffles instead). by "player"/"banker": a requested laja (NSW 7.3, NZ 9.2); NZ allows
    one per round besides the irregularity lajas (9.3). exposed: tiles exposed during the
    laja; more than two: the tiles are re-shuffled (NSW 15.2, NZ 12.2).
    """
    by = fields.text(data, "by")
    exposed = fields.integer(data, "exposed", 0)
    if not 0 <= exposed <= MAX_EXPOSED:
        raise InputError(f"exposed {exposed}: 0..{MAX_EXPOSED} tiles")
    if config.profile is Profile.ACT:
        raise InputError("ACT has no laja: no player touches the tiles in the shuffle or cut"
                         " (ACT 8.6); a tile exposed in shuffling or stacking: re-shuffle all"
                         " 32 tiles (ACT 13.2, dealer.reshuffle)")
    if by not in ("player", "banker", "dealer"):
        raise InputError(f"by {by!r}: player, banker or dealer")
    if state.cut_choice is not None:
        raise InputError(f"the cut is already chosen: a laja comes before the cut is"
                         f" determined ({BEFORE_CUT_RULE[config.profile]})")
    rule = _laja_rule(config, state, by, fields.flag(data, "approved", False))
    entry: JSON = {"kind": "laja", "by": by, "exposed": exposed, "rule": rule}
    text = f"laja by the {by} ({rule})"
    if exposed > 2:
        entry["reshuffle"] = LAJA_EXPOSED_RULE[config.profile]
        text += (f"; {exposed} tiles exposed: re-shuffle all 32 tiles"
                 f" ({LAJA_EXPOSED_RULE[config.profile]})")
    return replace(state, lajas=[*state.lajas, entry]), [log(text)]


def _laja_rule(config: PaiGowConfig, state: PaiGowState, by: str, approved: bool) -> str:
    """The clause that lets `by` have a laja now; InputError when none does."""
    player_banker = bank_of(config, state).holder is not BankHolder.HOUSE
    if by == "dealer":
        return STACKING_RULE[config.profile]  # an irregularity laja: not counted by NZ 9.3
    requested = [e for e in state.lajas if e["kind"] == "laja" and e["by"] != "dealer"]
    if config.profile is Profile.NZ:
        if by == "player" and player_banker:
            raise InputError("with a player/banker only the player/banker may request a laja"
                             " (NZ 9.2(b))")
        if by == "banker" and not player_banker:
            raise InputError("the house is the sole banker: a player requests the laja"
                             " (NZ 9.2(a))")
        if requested:
            raise InputError("only 1 laja may be performed during a round (NZ 9.3)")
        return "NZ 9.2(a)" if by == "player" else "NZ 9.2(b)"
    if by == "player":
        if not approved:
            raise InputError("a player's laja needs the casino supervisor's approval"
                             " (NSW 7.3): key approved: true")
        return "NSW 7.3"
    if not player_banker:
        raise InputError("the house banks: its laja is the dealer's (NSW 15.1) or a"
                         " supervisor's re-shuffle (NSW 15.4)")
    return "NSW 7.3.2"


def reshuffle(config: PaiGowConfig, state: PaiGowState, data: Data, now: Now) -> Result:
    """dealer.reshuffle {by: "supervisor"|"dealer"|"banker", exposed?}: all 32 tiles shuffled
    again before the deal: directed by the supervisor (NSW 15.4, NZ 12.7; the inspector,
    ACT 13.3), a tile exposed in shuffling or stacking (ACT 13.2; NSW 15.1 and NZ 12.1
    call for a laja instead), or the player/banker's request (NSW: not after a player's
    laja, 7.3.1)."""
    by = fields.text(data, "by")
    exposed = fields.integer(data, "exposed", 0)
    if not 0 <= exposed <= MAX_EXPOSED:
        raise InputError(f"exposed {exposed}: 0..{MAX_EXPOSED} tiles")
    if by == "supervisor":
        rule = SUPERVISOR_RULE[config.profile]
    elif by == "dealer":
        if config.profile is not Profile.ACT:
            stacking, supervisor = STACKING_RULE[config.profile], SUPERVISOR_RULE[config.profile]
            raise InputError(f"a tile exposed in stacking calls for a laja ({stacking},"
                             f" dealer.laja by dealer); a re-shuffle is the supervisor's"
                             f" ({supervisor})")
        if exposed < 1:
            raise InputError("ACT 13.2 re-shuffles when a tile is exposed: key exposed")
        rule = STACKING_RULE[config.profile]
    elif by == "banker":
        if config.profile is not Profile.NSW:
            raise InputError(f"profile {config.profile} gives the banker no re-shuffle; the"
                             f" supervisor may direct one ({SUPERVISOR_RULE[config.profile]})")
        if any(e["kind"] == "laja" and e["by"] == "player" for e in state.lajas):
            raise InputError("after a player's laja the bank cannot request another shuffle"
                             " (NSW 7.3.1)")
        rule = "NSW 7.3.1"
    else:
        raise InputError(f"by {by!r}: supervisor, dealer or banker")
    entry = {"kind": "reshuffle", "by": by, "exposed": exposed, "rule": rule}
    return replace(state, lajas=[*state.lajas, entry]), [
        log(f"re-shuffle of all 32 tiles by the {by} ({rule})")
    ]
