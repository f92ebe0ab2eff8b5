"""UTH 6.1/6.3/11.8.2 from table.toml (issue 30): the sign shows a maximum for each playing area,
the Play's too (`[uth.limits] play_max`, default 4 x `ante_max`), and a Play over it is settled
to it. Checked on the round machine the daemon builds from the shipped example."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import ConfigError, load_config
from controller.config.machine import build_machine
from controller.games.uth.settlement import Spot
from tests.support.examples import example_config
from tests.support.uth_table import Table, played_four_times

EXAMPLE_LINE = "play_max = 2000000"


def _config(tmp_path: Path, line: str) -> Path:
    return example_config(tmp_path, "uth-nsw.toml", EXAMPLE_LINE, line)


def _play_spot(path: Path) -> dict:
    """A $6,000 Ante on the $5,000 sign, Play 4x ($24,000), settled."""
    return played_four_times(Table(build_machine(load_config(path)).config), 2, 600_000)


@pytest.mark.parametrize("line", ["", EXAMPLE_LINE])
def test_by_default_the_play_is_settled_to_four_times_the_ante_maximum(
    tmp_path: Path, line: str
) -> None:
    path = _config(tmp_path, line)
    assert load_config(path).uth.rules.limits_for(Spot.PLAY).maximum == 2_000_000
    play = _play_spot(path)
    assert (play["placed"], play["stake"]) == (2_400_000, 2_000_000)  # 6.3, 11.8.2


def test_a_play_maximum_of_its_own(tmp_path: Path) -> None:
    play = _play_spot(_config(tmp_path, "play_max = 3000000"))
    assert (play["placed"], play["stake"]) == (2_400_000, 2_400_000)


@pytest.mark.parametrize(("line", "words"), [
    ("play_max = 400000", "at least ante_max 500000"),  # a 1x Play on a maximum Ante
    ("play_max = 2000100", "whole number of 500-cent chips"),
    ("play_max = 20000.0", "float"),
    ('play_max = "lots"', "integer number of cents"),
])
def test_a_bad_play_maximum_is_named(tmp_path: Path, line: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_config(tmp_path, line))
    assert any("uth.limits.play_max" in e and words in e for e in info.value.errors), (
        info.value.errors)
