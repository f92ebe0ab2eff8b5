"""Head office's side of issue 13: a pool's qualifying jackpot wager (UTH 15.2.5.3) in its
parameters and configuration, an increment at another wager refused (counted, alarmed, never
applied) with the books as they were, and the values to publish carrying the pool's awards
count and wager (UTH 2.4.3, 15.1.3).

On SQLite and PostgreSQL (the `new_url` fixture in tests/conftest.py)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headoffice import cli
from headoffice.config import HeadOfficeConfigError, validate_text
from headoffice.hits import HitPolicy
from headoffice.ledger import Incoming, Ledger
from headoffice.pools import Params, Pool, PoolValue
from shared.errors import InputError
from shared.link import contract
from tests.test_headoffice_ledger import PARAMS, ROYAL, TABLES, NewUrl, body, hit, inc

P = "p1"
QUALIFYING = replace(PARAMS, wager=100)  # the wager of tests.test_headoffice_ledger.inc


def at(wager: int, round_: int, wagers: int = 1) -> tuple[str, dict[str, Any]]:
    """A jackpot_increment of `wagers` boxes at `wager` cents each."""
    t, p = inc(round_, wagers)
    return t, {**p, "wager": wager, "amount": wager * wagers}


def ledger(new_url: NewUrl, params: Params = QUALIFYING) -> Ledger:
    led = Ledger.open(new_url())
    led.ensure_pool(P, params)
    led.enrol(dict.fromkeys(TABLES))
    return led


def apply(led: Ledger, table: str, *messages: dict[str, Any]) -> Any:
    return led.apply_batch([Incoming("outbox", table, m) for m in messages])


# -- the ledger --------------------------------------------------------------------------------
def test_an_increment_at_another_wager_is_refused_and_the_pool_unchanged(
        new_url: NewUrl) -> None:
    led = ledger(new_url)
    apply(led, "T1", body("T1", 1, *at(100, 1, 2)))
    before = led.pool(P)
    assert before is not None and before.wagers_in == 200
    res = apply(led, "T2", body("T2", 1, *at(500, 1, 2)))
    # UTH 15.2.5.3: refused, acknowledged (the table does not resend it), alarmed, counted.
    assert res.acks == {"T2": 1} and res.wager_refused == ["T2/1"] and len(res.refused) == 1
    assert led.pool(P) == before and P not in res.pools
    row = led.db.one("SELECT status, reason, amount FROM messages WHERE table_id = 'T2'")
    assert row is not None and row["status"] == "refused" and row["amount"] == 0
    assert "500" in row["reason"] and "15.2.5.3" in row["reason"]
    alarms = led.report()["alarms"]
    assert any(a["table_id"] == "T2" and "15.2.5.3" in a["text"] for a in alarms)
    # Nothing was ledgered for the round: its cancellation is refused, its hit is not paid.
    res = apply(led, "T2", body("T2", 2, "jackpot_cancel", at(500, 1, 2)[1]))
    assert len(res.refused) == 1 and led.pool(P) == before
    led.policy = HitPolicy(verify_from=None, dual_control_from=None)
    res = apply(led, "T2", body("T2", 3, *hit(1, [ROYAL])))
    assert res.awards == [] and res.held_hits and led.pool(P) == before
    # The pool's wager is accepted from the same table afterwards.
    res = apply(led, "T2", body("T2", 4, *at(100, 2)))
    pool = led.pool(P)
    assert pool is not None and pool.wagers_in == 300 and pool.imbalance() == 0
    led.close()


def test_a_pool_without_a_wager_accepts_any_wager_as_before(new_url: NewUrl) -> None:
    led = ledger(new_url, PARAMS)
    res = apply(led, "T1", body("T1", 1, *at(100, 1)), body("T1", 2, *at(500, 2, 3)))
    pool = led.pool(P)
    assert res.refused == [] and pool is not None and pool.wagers_in == 1600
    assert res.pools[P] == PoolValue(pool.amount, pool.version, 0, None)
    led.close()


WAGERS = st.lists(st.tuples(st.sampled_from(("T1", "T2", "T6")), st.sampled_from((100, 200)),
                            st.integers(1, 7)), min_size=1, max_size=20)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rounds=WAGERS)
def test_refusals_keep_the_books_and_only_the_pools_wager_counts(
        new_url: NewUrl, rounds: list[tuple[str, int, int]]) -> None:
    # Conservation unchanged: the pool holds exactly the qualifying wagers' contributions.
    led = ledger(new_url)
    seqs: dict[str, int] = {}
    for table, wager, wagers in rounds:
        seqs[table] = seqs.get(table, 0) + 1
        apply(led, table, body(table, seqs[table], *at(wager, seqs[table], wagers)))
    pool = led.pool(P)
    assert pool is not None and pool.imbalance() == 0
    good = sum(w * n for _, w, n in rounds if w == 100)
    assert pool.wagers_in == good
    assert pool.contributions == good * (PARAMS.increment + PARAMS.hidden)
    refused = led.db.one("SELECT COUNT(*) AS n FROM messages WHERE status = 'refused'")
    assert refused is not None and refused["n"] == sum(1 for _, w, _ in rounds if w != 100)
    led.close()


def test_the_values_to_publish_carry_awards_and_wager_and_a_hit_lowers_them(
        new_url: NewUrl) -> None:
    led = ledger(new_url)
    led.policy = HitPolicy(verify_from=None, dual_control_from=None)
    res = apply(led, "A", body("A", 1, *at(100, 1)), body("A", 2, *at(100, 2)))
    before = led.pool(P)
    assert before is not None
    assert res.pools[P] == PoolValue(before.amount, before.version, 0, 100)
    res = apply(led, "A", body("A", 3, *hit(2, [ROYAL])))
    after = led.pool(P)
    assert after is not None and after.amount < before.amount
    # UTH 2.4.3, 15.1.3: the lower value goes out with one more award, so every meter lowers.
    assert res.pools[P] == PoolValue(after.amount, after.version, 1, 100)
    assert after.version > before.version
    led.close()


def test_a_hit_verified_at_the_table_changes_no_pool_value(new_url: NewUrl) -> None:
    # A Royal Flush held for verification, then verified by the attendant (UTH rule 15): recorded
    # for the approver at head office (issue 26), nothing paid, no new pool value.
    led = ledger(new_url)
    apply(led, "T1", body("T1", 1, *at(100, 1)))
    res = apply(led, "T1", body("T1", 2, *hit(1, [ROYAL])))
    assert res.held_hits and res.awards == []
    before = led.pool(P)
    assert before is not None and before.hits == 0
    verified = {"round": 1, "pool_id": P, "boxes": [1], "verified_by": {"uid": 1001,
                                                                        "user": "carol"}}
    res = apply(led, "T1", body("T1", 3, "jackpot_verified", verified))
    assert res.verified == [(1, "T1", "carol")] and res.awards == []
    assert led.pool(P) == before and P not in res.pools
    led.close()


def test_the_wager_is_changed_like_any_parameter_and_logged(new_url: NewUrl) -> None:
    led = ledger(new_url, PARAMS)
    change = led.set_params(P, {"wager": 200}, operator="alice", authorised=["alice"],
                            reason="new sign")
    old, new = change.old, change.new
    assert old.wager is None and new.wager == 200
    pool = led.pool(P)
    assert pool is not None and pool.params.wager == 200 and pool.value().wager == 200
    assert led.param_log(P)[-1]["outcome"] == "applied: decision #1; reason: new sign"
    with pytest.raises(Exception, match="wager"):
        led.set_params(P, {"wager": 0}, operator="alice", authorised=["alice"], reason="r")
    led.close()


# -- parameters and configuration --------------------------------------------------------------
def test_params_without_a_wager_keep_their_stored_bytes() -> None:
    assert "wager" not in PARAMS.as_json()
    assert Params.from_json(PARAMS.as_json()) == PARAMS
    assert Params.from_json(QUALIFYING.as_json()) == QUALIFYING
    pool = Pool.new(P, QUALIFYING)
    assert Pool.from_row(pool.row()) == pool
    assert json.loads(pool.row()["params"])["wager"] == 100


@pytest.mark.parametrize("wager", [0, -1, True, 1.5, "100", contract.MAX_CENTS + 1])
def test_a_bad_wager_in_params_is_refused(wager: Any) -> None:
    with pytest.raises(InputError, match="wager"):
        Params(seed=1000, increment=Fraction(1, 4), wager=wager)


POOL_TOML = """
[database]
url = "sqlite:////nonexistent/ledger.db"
[service]
max_jackpot_wager = 1000
operators = ["alice"]
[[pools]]
id = "p1"
seed = 500000
increment_bp = 2500
{extra}
"""


def test_the_config_reads_a_pools_wager() -> None:
    assert validate_text(POOL_TOML.format(extra="wager = 500")).pools[P].wager == 500
    assert validate_text(POOL_TOML.format(extra="")).pools[P].wager is None


@pytest.mark.parametrize(("extra", "why"), [
    ("wager = 0", "pools[0].wager: must be >= 1"),
    ("wager = -5", "pools[0].wager: must be >= 1"),
    ("wager = 5.0", "pools[0].wager: expected int"),
    ("wager = true", "pools[0].wager: expected"),
    ("wager = 1001", "above service.max_jackpot_wager 1000"),
])
def test_a_bad_wager_in_the_config_is_refused(extra: str, why: str) -> None:
    with pytest.raises(HeadOfficeConfigError) as info:
        validate_text(POOL_TOML.format(extra=extra))
    assert why in str(info.value)


def test_pool_set_wager_from_the_console(tmp_path: Path, capsys: pytest.CaptureFixture,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "ledger.db"
    config = tmp_path / "headoffice.toml"
    config.write_text(POOL_TOML.format(extra="").replace("/nonexistent/ledger.db", str(db)))
    led = Ledger.open(str(db))
    led.ensure_pool(P, cli.load_config(config).pools[P])
    led.close()
    monkeypatch.setattr(cli, "login_name", lambda: "alice")
    pool_set = ["--config", str(config), "pool", "set", P, "--reason", "new sign"]
    assert cli.main([*pool_set, "--wager", "500"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"qualifying wager \(UTH 15\.2\.5\.3\)\s+-\s+\$5\.00", out)
    assert "APPLIED (decision #1)" in out
    assert cli.main([*pool_set, "--wager", "0"]) == 1
    led = Ledger.open(str(db))
    assert led.pool(P).params.wager == 500  # type: ignore[union-attr]
    led.close()


def test_the_web_console_sets_the_wager_as_pool_set_does(tmp_path: Path) -> None:
    from tests.test_headoffice_console_support import Browser, csrf_of, make_office

    office = make_office(tmp_path / "office")
    b, second = Browser(office), Browser(office)
    try:
        b.login("alice")
        token = csrf_of(b.client.get("/params").text)
        # In dollars; T1 is live on p1: forced, and applied by a second approver.
        r = b.client.post("/pools/p1/params", data={"csrf": token, "wager": "5.00",
                                                     "force": "on", "reason": "new sign"})
        assert r.status_code == 303
        second.login("bob")
        r = second.client.post("/decisions/1/approve", data={"csrf": second.csrf(),
                                                             "reason": "checked"})
        assert r.status_code == 303
        r = b.client.post("/pools/p1/params", data={"csrf": token, "wager": "0",
                                                     "force": "on", "reason": "r"})
        assert r.status_code != 303 and "wager" in r.text
        assert b.ledger.pool(P).params.wager == 500  # type: ignore[union-attr]
    finally:
        b.close()
        second.close()
