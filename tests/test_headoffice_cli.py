"""`tablectl-headoffice pool set|approve|resume`: the operator is who runs the console as the
operating system authenticated them (under sudo, the user who ran it), not a name typed on the
command line. The ledger's own rules (docs/headoffice.md "Parameters") then decide; this is
about who is asking. The backend is not the subject: SQLite only."""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path

import pytest

from headoffice import cli
from headoffice.ledger import Incoming, Ledger

P = "p1"


@pytest.fixture
def console(tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "ledger.db"
    config = tmp_path / "headoffice.toml"
    config.write_text(f"""
[database]
url = "{db}"
[service]
operators = ["alice", "bob"]
[[pools]]
id = "{P}"
seed = 500000
increment_bp = 2500
""")
    led = Ledger.open(str(db))
    led.ensure_pool(P, cli.load_config(config).pools[P])
    led.enrol({"T1": P})
    # T1 is live on the pool: a change needs --force from an authorised operator.
    led.apply_batch([Incoming("birth", "T1", {"v": 1, "table": "T1", "pool_id": P,
                                               "pending_hits": []})])
    led.close()
    return config, str(db)


def _as(monkeypatch: pytest.MonkeyPatch, user: str) -> None:
    """Run the console as `user` did through sudo (the tests run as root in CI)."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to be 'sudo' for another user")
    monkeypatch.setenv("SUDO_USER", user)


def _log(db: str) -> list[dict]:
    led = Ledger.open(db)
    try:
        return led.param_log(P)
    finally:
        led.close()


def test_the_operator_is_the_login_and_only_an_authorised_one_may_force(
    console: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    config, db = console
    _as(monkeypatch, "mallory")
    args = ["--config", str(config), "pool", "set", P, "--increment-bp", "3000", "--force",
            "--reason", "new sign"]
    assert cli.main(args) == 1
    assert "not authorised" in capsys.readouterr().err
    _as(monkeypatch, "alice")
    assert cli.main(args) == 0  # T1 is live: alice's is the first of two approvals
    out = capsys.readouterr().out
    assert "25.00%" in out and "30.00%" in out and "FIRST APPROVAL" in out
    approve = ["--config", str(config), "pool", "approve", "1", "--reason", "checked"]
    assert cli.main(approve) == 1
    assert "second, different approver" in capsys.readouterr().err
    _as(monkeypatch, "bob")
    assert cli.main(approve) == 0
    assert "APPLIED by alice and bob" in capsys.readouterr().out
    entries = [(r["operator"], r["outcome"].split(":")[0]) for r in _log(db)]
    assert entries[1:] == [("mallory", "refused"), ("alice", "pending"),
                           ("alice and bob", "applied")]
    assert json.loads(_log(db)[-1]["new"])["increment"] == "3/10"


def test_naming_someone_else_is_refused_and_changes_nothing(
    console: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    config, db = console
    _as(monkeypatch, "mallory")
    before = _log(db)
    args = ["--config", str(config), "pool", "set", P, "--increment-bp", "3000", "--force",
            "--reason", "new sign", "--operator", "alice"]
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert "--operator 'alice', but this console runs as 'mallory'" in err
    assert _log(db) == before
    # Repeating one's own name is allowed (and what the docs' examples do).
    _as(monkeypatch, "alice")
    assert cli.main([*args[:-1], "alice"]) == 0


def test_sudo_user_is_believed_only_from_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUDO_USER", "alice")
    me = pwd.getpwuid(os.geteuid()).pw_name
    assert cli.login_name() == ("alice" if os.geteuid() == 0 else me)
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: pwd.struct_passwd(
        ("bob", "x", uid, uid, "", "/home/bob", "/bin/sh")))
    assert cli.login_name() == "bob"  # a user who set SUDO_USER themselves is still bob


def test_pool_set_and_the_console_ask_for_changes_through_one_function() -> None:
    # pools.requested_changes: what `pool set` and the console's form both ask Ledger.set_params.
    from fractions import Fraction

    from headoffice.pools import requested_changes
    from shared.errors import InputError

    assert requested_changes(increment=Fraction(1, 4), wager=500) == {
        "increment": Fraction(1, 4), "wager": 500}
    assert requested_changes(seed=0, no_ceiling=True) == {"seed": 0, "ceiling": None}
    with pytest.raises(InputError, match="a ceiling and no ceiling together"):
        requested_changes(ceiling=100, no_ceiling=True)
    with pytest.raises(InputError, match="nothing to change"):
        requested_changes()


def test_pool_set_refuses_a_ceiling_and_no_ceiling_as_the_console_does(
        console: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    config, db = console
    before = _log(db)
    code = cli.main(["--config", str(config), "pool", "set", P, "--ceiling", "900000",
                     "--no-ceiling", "--reason", "test"])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "tablectl-headoffice: a ceiling and no ceiling together")
    assert _log(db) == before  # nothing changed
