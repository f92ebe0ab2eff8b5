"""[cards] from table.toml to the round machine (issue 29): NSW Pai Gow (9.1, 16.1) and UTH (13.1)
require Player Cards by default on a linked table; NZ and ACT Pai Gow do not unless configured;
the offline reading is an option."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from controller.config import ConfigError, validate_text

REPO = Path(__file__).resolve().parents[2]
LINK = """
[link]
enabled = true
host = "ho.example"
"""


def _text(example: str, extra: str = "", linked: bool = True) -> str:
    text = (REPO / "examples" / example).read_text().replace("simulate = false", "simulate = true")
    # The example's own [link] and [link.tls] go: ours (or none) instead.
    text = re.sub(r"^\[link(\.tls)?\]\n(?:(?!\[).*\n?)*", "", text, flags=re.M)
    return text + (LINK if linked else "") + extra


def _cards(example: str, extra: str = "", linked: bool = True):  # type: ignore[no-untyped-def]
    cfg = validate_text(_text(example, extra, linked), example)
    return (cfg.paigow or cfg.uth).cards  # type: ignore[union-attr]


@pytest.mark.parametrize(("example", "required"), [
    ("paigow-nsw.toml", True), ("uth-nsw.toml", True),  # Pai Gow 9.1, 16.1; UTH 13.1
    ("paigow-nz.toml", False), ("paigow-act.toml", False),
])
def test_the_profile_decides_whether_cards_are_required(example: str, required: bool) -> None:
    cards = _cards(example)
    assert cards.required is required and not cards.local
    assert cards.answer_ms == 2000 and cards.offline == "refuse"  # strict by default


def test_nz_requires_cards_when_configured_and_a_standalone_table_answers_locally() -> None:
    assert _cards("paigow-nz.toml", "[cards]\nrequired = true\n").required
    standalone = _cards("paigow-nsw.toml", "[cards]\nrequired = true\n", linked=False)
    assert standalone.required and standalone.local


def test_the_allowance_reading_needs_an_allowance() -> None:
    cards = _cards("uth-nsw.toml", '[cards]\noffline = "allowance"\noffline_allowance = 5000\n'
                   "answer_s = 0.5\n")
    assert (cards.offline, cards.offline_allowance, cards.answer_ms) == ("allowance", 5000, 500)
    with pytest.raises(ConfigError, match="offline_allowance"):
        _cards("uth-nsw.toml", '[cards]\noffline = "allowance"\n')
    with pytest.raises(ConfigError, match="offline"):
        _cards("uth-nsw.toml", '[cards]\noffline = "guess"\n')
