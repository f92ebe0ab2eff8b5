"""The two Pai Gow readings the seeds leave open, from table.toml to the machine the daemon builds
(docs/rounds-paigow.md, "What a regulator should confirm"): the delivery direction (NSW 12.1 and
NZ 10.1 silent, ACT 9.1 clockwise) and NZ 12.17's miscount make-up in NSW/ACT."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import ConfigError, load_config, validate_text
from controller.config.machine import build_machine
from controller.events import Event, Now

REPO = Path(__file__).resolve().parents[2]
NOW = Now("2026-11-26T08:00:00.000Z", 1000)


def _text(example: str, lines: str) -> str:
    text = (REPO / "examples" / example).read_text()
    text = text.replace("simulate = false", "simulate = true")
    return text.replace("[paigow]\n", f"[paigow]\n{lines}\n", 1)


def _machine(tmp_path: Path, example: str, lines: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "table.toml"
    path.write_text(_text(example, lines))
    return build_machine(load_config(path))


def _delivery(machine) -> list[int]:  # type: ignore[no-untyped-def]
    state = machine.initial()
    for kind, data in (("table.open", {}),
                       ("dealer.wager", {"box": 2, "player": "p2", "amount": 2500}),
                       ("dealer.no_more_bets", {}),
                       ("dice.result", {"box_dice": [1, 2, 2], "cut_die": 1})):
        state, effects = machine.step(state, Event(kind, data), NOW)
        assert not any(e.kind == "alarm" for e in effects), (kind, effects)
    return [d["position"] for d in state.display["delivery"]]


def test_the_delivery_direction_reaches_the_machine(tmp_path: Path) -> None:
    default = _delivery(_machine(tmp_path, "paigow-nsw.toml", ""))
    clockwise = _delivery(_machine(tmp_path, "paigow-nsw.toml", "clockwise_delivery = true"))
    assert clockwise == [5, 4, 3, 2, 1, 8, 7, 6]  # 5 from box 1, clockwise (the ACT 9.1 reading)
    assert default != clockwise and sorted(default) == sorted(clockwise)


def test_the_miscount_make_up_reaches_the_machine(tmp_path: Path) -> None:
    assert not _machine(tmp_path, "paigow-nsw.toml", "").config.miscount_make_up
    assert _machine(tmp_path, "paigow-nsw.toml", "miscount_make_up = true").config.miscount_make_up


@pytest.mark.parametrize(("example", "line", "clause"), [
    ("paigow-act.toml", "clockwise_delivery = false", "ACT 9.1"),
    ("paigow-nz.toml", "miscount_make_up = true", "NZ 12.17"),
])
def test_a_reading_the_profile_decides_is_refused(example: str, line: str, clause: str) -> None:
    with pytest.raises(ConfigError) as raised:
        validate_text(_text(example, line), example)
    assert len(raised.value.errors) == 1 and clause in raised.value.errors[0]
    assert f"paigow.{line.split(' ')[0]}" in raised.value.errors[0]
