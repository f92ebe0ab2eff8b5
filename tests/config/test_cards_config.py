"""[cards] from table.toml to the round machine (issue 29): NSW Pai Gow (9.1, 16.1) and UTH (13.1)
require Player Cards by default, linked or not; NZ and ACT Pai Gow do not unless configured;
a standalone simulated table has the simulated patron service, a real one none (every wager
refused, saying why) unless `required = false`, logged at start as a departure; the offline
reading is an option."""

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


def _text(example: str, extra: str = "", linked: bool = True, simulate: bool = True) -> str:
    text = (REPO / "examples" / example).read_text()
    if simulate:
        text = text.replace("simulate = false", "simulate = true")
    # The example's own [link] and [link.tls] go: ours (or none) instead.
    text = re.sub(r"^\[link(\.tls)?\]\n(?:(?!\[).*\n?)*", "", text, flags=re.M)
    return text + (LINK if linked else "") + extra


def _cards(example: str, extra: str = "", linked: bool = True,  # type: ignore[no-untyped-def]
           simulate: bool = True):
    cfg = validate_text(_text(example, extra, linked, simulate), example)
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


@pytest.mark.parametrize("example", ["paigow-nsw.toml", "uth-nsw.toml"])
def test_a_standalone_nsw_table_requires_cards_by_default(example: str) -> None:
    """NSW Pai Gow 9.1, 16.1 / UTH 13.1 bind a table whether or not it is linked: a simulated
    one has the simulated patron service, a real one none (its wagers are refused)."""
    simulated = _cards(example, linked=False)
    assert simulated.required and simulated.local and simulated.simulated
    assert not simulated.unserved and simulated.departure is None
    real = _cards(example, linked=False, simulate=False)
    assert real.required and real.unserved


@pytest.mark.parametrize("example", ["paigow-nz.toml", "paigow-act.toml"])
def test_nz_and_act_stay_uncarded_standalone(example: str) -> None:
    cards = _cards(example, linked=False, simulate=False)
    assert not cards.required and not cards.unserved and cards.departure is None


def test_required_false_on_nsw_is_a_logged_departure() -> None:
    cards = _cards("paigow-nsw.toml", "[cards]\nrequired = false\n", linked=False,
                   simulate=False)
    assert not cards.required and not cards.unserved
    assert cards.departure is not None and "9.1, 16.1" in cards.departure
    assert "13.1" in cards.departure
    nz = _cards("paigow-nz.toml", "[cards]\nrequired = false\n")
    assert nz.departure is None  # no such rule in the NZ seed: nothing departed from


def test_the_allowance_reading_needs_an_allowance() -> None:
    cards = _cards("uth-nsw.toml", '[cards]\noffline = "allowance"\noffline_allowance = 5000\n'
                   "answer_s = 0.5\n")
    assert (cards.offline, cards.offline_allowance, cards.answer_ms) == ("allowance", 5000, 500)
    with pytest.raises(ConfigError, match="offline_allowance"):
        _cards("uth-nsw.toml", '[cards]\noffline = "allowance"\n')
    with pytest.raises(ConfigError, match="offline"):
        _cards("uth-nsw.toml", '[cards]\noffline = "guess"\n')


class _Unverified:
    """The software check's answer when none is configured (simulation, development)."""

    def status(self) -> dict[str, str]:
        return {"state": "not_configured", "detail": "no manifest configured"}


@pytest.mark.parametrize(("example", "extra", "said"), [
    ("paigow-nsw.toml", "[cards]\nrequired = false\n", True),  # a departure from 9.1, 16.1
    ("uth-nsw.toml", "[cards]\nrequired = false\n", True),  # from UTH 13.1
    ("paigow-nsw.toml", "", False),  # the rule kept: nothing to say
    ("paigow-nz.toml", "[cards]\nrequired = false\n", False),  # no such rule in NZ's seed
])
def test_the_departure_is_logged_at_every_start(example: str, extra: str, said: bool,
                                                caplog: pytest.LogCaptureFixture) -> None:
    import asyncio
    import logging
    from types import SimpleNamespace

    from controller.daemon.lifecycle import StartLine

    cfg = validate_text(_text(example, extra, linked=False), example)
    log = logging.getLogger("t.cards.start")
    with caplog.at_level(logging.INFO, logger="t.cards.start"):
        line = StartLine(log, _Unverified())  # type: ignore[arg-type]
        asyncio.run(line.start(SimpleNamespace(cfg=cfg)))  # type: ignore[arg-type]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
              and "departure" in r.getMessage()]
    assert bool(warned) is said, [r.getMessage() for r in caplog.records]
    if said:
        assert "NSW Pai Gow 9.1, 16.1 / UTH 13.1" in warned[0]
