"""Pai Gow procedures left from issue 13, each with its profile's clause (seeds 000 NSW, 002 + 004
NZ, 003 ACT): the OFF-box draw's profiles and timing, NZ 7.2, the delivery order, NZ 12.17."""

from __future__ import annotations

import pytest

from controller.games.paigow.profiles import Profile
from tests.support.paigow_table import Table, kinds, texts

RICH = 10_000_000


def at(profile: Profile, phase: str) -> Table:
    t = Table(profile)
    if phase == "closed":
        return t
    t.send("table.open")
    if phase == "off_draw":
        t.send("dealer.off_draw")
    elif phase == "cutting":
        t.send("dealer.no_more_bets")
    elif phase in ("shaking", "announced", "setting"):
        t.to_shaking(p2=2000)
        if phase != "shaking":
            t.dice(1, 2, 3)
        if phase == "setting":
            t.send("dealer.delivered")
    assert t.phase == phase
    return t


# -- the OFF-box draw: NSW 15.9.1-15.9.3 and NZ 12.9-12.10 between rounds; ACT none ----------

WHEN = {Profile.NSW: "NSW 15.9.1-15.9.3", Profile.NZ: "NZ 12.9-12.10"}
REFUSED_PHASES = {
    Profile.NSW: ["closed", "off_draw", "shaking", "announced", "setting"],
    Profile.NZ: ["closed", "off_draw", "cutting", "shaking", "announced", "setting"],
}


@pytest.mark.parametrize(("profile", "phase"),
                         [(p, ph) for p, phs in REFUSED_PHASES.items() for ph in phs])
def test_the_off_draw_outside_betting_is_refused_with_its_clause(
    profile: Profile, phase: str
) -> None:
    t = at(profile, phase)
    before = t.m.to_json(t.state)
    effects = t.send("dealer.off_draw")
    assert kinds(effects) == ["log"] and WHEN[profile] in texts(effects)
    assert "between rounds" in texts(effects) and t.m.to_json(t.state) == before


@pytest.mark.parametrize("profile", [Profile.NSW, Profile.NZ])
def test_the_off_draw_is_made_in_betting_under_the_house(profile: Profile) -> None:
    t = at(profile, "betting")
    effects = t.send("dealer.off_draw")
    assert t.phase == "off_draw" and "device" in kinds(effects)


@pytest.mark.parametrize("phase", ["closed", "betting", "shaking", "announced", "setting"])
def test_act_has_no_off_draw_in_any_phase(phase: str) -> None:
    t = at(Profile.ACT, phase)
    before = t.m.to_json(t.state)
    effects = t.send("dealer.off_draw")
    assert kinds(effects) == ["log"] and "no OFF-box draw" in texts(effects)
    assert "NSW 15.9 and NZ 12.9-12.10 only" in texts(effects)
    assert t.m.to_json(t.state) == before
