"""`tablectl-headoffice card ...` (issue 29): Player Cards decided by the operating system's
login, authorised in [service] operators, with a reason; each decision in the audit trail.
The backend is not the subject: SQLite only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headoffice import audit, cli
from headoffice.ledger import Ledger, cards
from tests.test_headoffice_cli import _as, console  # noqa: F401 -- the fixture

CONSOLE = tuple[Path, str]


def _card(config: Path, *args: str) -> int:
    return cli.main(["card", *args, "--config", str(config)])


def test_card_lifecycle_by_the_login(console: CONSOLE, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
                                     capsys: pytest.CaptureFixture[str]) -> None:
    config, db = console
    _as(monkeypatch, "alice")
    assert _card(config, "add", "card-0001", "--limit", "50000", "--period", "week",
                 "--reason", "new member") == 0
    out = capsys.readouterr().out
    assert "ADD by alice: new member" in out and "Loss Limit $500.00 per 1 week(s)" in out
    assert _card(config, "limit", "card-0001", "--limit", "20000", "--reason",
                 "player asked to lower it") == 0
    assert "Loss Limit $200.00 per 1 week(s)" in capsys.readouterr().out
    assert _card(config, "restrict", "card-0001", "--reason", "supervisor's call") == 0
    assert "RESTRICTED by alice until" in capsys.readouterr().out
    assert _card(config, "unrestrict", "card-0001", "--reason", "reviewed") == 0
    assert _card(config, "invalidate", "card-0001", "--reason", "reported stolen") == 0
    capsys.readouterr()
    assert _card(config, "show", "card-0001", "--json") == 0
    view = json.loads(capsys.readouterr().out)
    assert (view["status"], view["limit"], view["restricted_until"]) == ("invalid", 20000, None)
    assert [e["action"] for e in view["decisions"]] == [
        "invalidated", "unrestricted", "restricted", "limit", "added"]
    assert {e["person"] for e in view["decisions"]} == {"alice"}
    assert _card(config, "list") == 0
    assert "card card-0001: INVALID: reported stolen" in capsys.readouterr().out
    led = Ledger.open(db)
    try:
        trail = [e for e in audit.trail(led.db) if e["subject"] == "card card-0001"]
    finally:
        led.close()
    assert [e["action"] for e in trail] == ["card_invalidated", "card_unrestricted",
                                            "card_restricted", "card_limit", "card_added"]
    assert trail[0]["person"] == "alice" and trail[0]["detail"] == "reported stolen"


def test_who_and_why_are_checked(console: CONSOLE, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
                                 capsys: pytest.CaptureFixture[str]) -> None:
    config, db = console
    _as(monkeypatch, "mallory")  # not in [service] operators
    assert _card(config, "add", "card-0001", "--limit", "100", "--reason", "x") == 1
    assert "not authorised" in capsys.readouterr().err
    _as(monkeypatch, "alice")
    assert _card(config, "add", "card-0001", "--limit", "100", "--reason", "x",
                 "--operator", "bob") == 1  # someone else's name: refused
    assert _card(config, "add", "card-0001", "--limit", "100", "--reason", "  ") == 1
    assert "reason" in capsys.readouterr().err
    assert _card(config, "add", "no name!", "--limit", "100", "--reason", "x") == 2
    assert "card:" in capsys.readouterr().err
    assert _card(config, "add", "card-0001", "--limit", "-5", "--reason", "x") == 2
    assert _card(config, "add", "card-0001", "--limit", "100", "--length", "0",
                 "--reason", "x") == 2
    assert _card(config, "show", "card-0001") == 1  # never added
    assert "no card card-0001" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _card(config, "restrict", "card-0001")  # --reason is required
    led = Ledger.open(db)
    try:
        assert cards.list_cards(led.db) == []
    finally:
        led.close()
