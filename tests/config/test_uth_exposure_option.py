"""UTH 11.4.1's two readings from table.toml (issue 13): `[uth] exposure_preflop_only` reaches the
round machine the daemon builds. A dealer hole card revealed after a 2x Play on the flop: by
default (any Play wager so far, 11.4.2) play continues; with the option (only Play wagers made
before the flop) the round is a misdeal and void (11.4.1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import ConfigError, load_config
from controller.config.machine import build_machine
from tests.support.examples import example_config
from tests.support.uth_table import Table, of

DECK = "Ah Kh Qh 2c 7d 3s 4s Jh Th 9c 9d"  # 7.2 shuffler order; box 2 gets 9c 9d


def _config(tmp_path: Path, line: str) -> Path:
    # The shipped example shows the option; only the option differs.
    return example_config(tmp_path, "uth-nsw.toml", "exposure_preflop_only = false", line)


def _hole_card_after_a_flop_play(path: Path) -> list:
    machine = build_machine(load_config(path))
    t = Table(machine.config)  # the daemon's machine configuration, from the file
    t.stack(DECK)
    t.deal_round({2: (2500, 0)})
    t.step("dealer.decision", box=2, action="check")
    t.step("dealer.flop")
    t.step("dealer.decision", box=2, action="play2")
    return t.step("dealer.misdeal", reason="dealer_revealed")


@pytest.mark.parametrize("line", ["exposure_preflop_only = false", ""])
def test_by_default_a_play_wager_on_the_flop_keeps_the_round_going(
    tmp_path: Path, line: str
) -> None:
    out = _hole_card_after_a_flop_play(_config(tmp_path, line))
    assert not of(out, "round") and of(out, "alarm")[0]["rule"] == "11.4.2"


def test_preflop_only_reading_voids_the_round_as_a_misdeal(tmp_path: Path) -> None:
    out = _hole_card_after_a_flop_play(_config(tmp_path, "exposure_preflop_only = true"))
    (rnd,) = of(out, "round")
    assert rnd["status"] == "voided" and rnd["summary"]["rule"] == "11.4.1"


def test_the_option_is_a_boolean(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_config(tmp_path, 'exposure_preflop_only = "yes"'))
    assert any("uth.exposure_preflop_only" in e for e in info.value.errors), info.value.errors
