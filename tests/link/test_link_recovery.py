"""A linked table put back from an older copy of its state, recovered with the documented
command, plays on without forking its record (issue 27 item 1): no round number head office
has ledgered is used again, no jackpot increment is refused, and the ledger equals the
journals to the cent. Real Mosquitto, head office on SQLite and on PostgreSQL.

Before the fix `accept-loss --outbox-after` skipped outbox ids but not round numbers: the
table numbered rounds head office held again, head office refused their increments ("a
second increment for the round"), held genuine hits and applied second results.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from controller.cli.main import main as cli
from controller.journal import Journal
from headoffice.ledger import Ledger
from tests.support.link import (
    POOL,
    drain,
    head_office,
    journal_totals_at,
    make_table,
    paid_by_replay,
    play_until,
    run,
    start,
    wait_for,
)

RECOVER = re.compile(r"`sudo tablectl journal accept-loss --state-dir (\S+) --outbox-after "
                     r"(\d+) --round-after (\d+) --reason TEXT`")


def rounds_of(state: Path, after_round: int = 0) -> list[int]:
    """The round numbers the journal in `state` recorded, after `after_round`."""
    with Journal.open(state, table_id="T1", game="uth", create=False) as j:
        return [r.number for e in j.iter_events() for r in e.rounds if r.number > after_round]


def lost_open_rounds(state: Path) -> list[int]:
    """The rounds named by the journal's messages (an increment of a round still open)."""
    with Journal.open(state, table_id="T1", game="uth", create=False) as j:
        return [int(m.payload["round"]) for e in j.iter_events() for m in e.outbox
                if isinstance(m.payload, dict) and "round" in m.payload]


def wagered_after(state: Path, after_id: int) -> tuple[int, int, int]:
    """Jackpot wagers (increments net of cancellations) in messages after `after_id`; how many
    messages; the last id."""
    wagered = count = last = 0
    with Journal.open(state, table_id="T1", game="uth", create=False) as j:
        for e in j.iter_events():
            for m in e.outbox:
                last = m.id
                if m.id <= after_id:
                    continue
                count += 1
                if m.type == "jackpot_increment":
                    wagered += m.payload["amount"]
                elif m.type == "jackpot_cancel":
                    wagered -= m.payload["amount"]
    return wagered, count, last


def paid_at(cfg: Any, state: Path) -> int:
    return paid_by_replay(replace(cfg, service=replace(cfg.service, state_dir=state)))


def test_a_restored_table_recovers_past_head_offices_numbering(broker, ledger_url,
                                                              tmp_path, capsys) -> None:
    root = tmp_path / "T1"
    state, older, lost = root / "state", tmp_path / "older", tmp_path / "lost"
    seen: dict[str, Any] = {}

    async def main() -> None:
        # Hits paid without an operator's verification: drain() waits for every award.
        async with head_office(ledger_url, broker, verify_from=None, dual_control_from=None):
            table = await start(make_table("T1", root, broker, seed=1))
            await wait_for(play_until([table], 12), 60, "12 rounds")
            await drain([table])
            await table.stop()
            shutil.copytree(state, older)  # the copy a technician will put back
            table = await start(make_table("T1", root, broker, seed=2))
            await wait_for(play_until([table], 25), 90, "25 more rounds")
            await drain([table])
            await table.stop()
            shutil.copytree(state, lost)  # what the table loses (kept to check the ledger)

            shutil.rmtree(state)
            shutil.copytree(older, state)  # restored from the older copy
            table = await start(make_table("T1", root, broker, seed=3))
            await wait_for(lambda: table.service.out_of_service is not None, 20,
                           "out of service")
            seen["reason"] = table.service.out_of_service
            await table.stop()

            found = RECOVER.search(seen["reason"] or "")
            assert found is not None, seen["reason"]
            assert Path(found[1]) == state
            outbox_after, round_after = int(found[2]), int(found[3])
            seen["after"] = outbox_after, round_after
            # The documented command, as the out-of-service message gives it.
            assert cli(["journal", "accept-loss", "--state-dir", found[1], "--outbox-after",
                        found[2], "--round-after", found[3], "--reason",
                        "restored from an older copy, ticket 27"]) == 0
            capsys.readouterr()

            table = await start(make_table("T1", root, broker, seed=4))
            await wait_for(play_until([table], 40), 120, "40 rounds after the recovery")
            await drain([table])
            seen["out_of_service"] = table.service.out_of_service
            await table.stop()

    run(main(), timeout=400)

    assert seen["out_of_service"] is None
    outbox_after, round_after = seen["after"]
    lost_rounds, new_rounds = rounds_of(lost), rounds_of(state, after_round=round_after)
    # Head office told the table the last round the lost journal used (recorded, or still
    # open with its jackpot wagers sent) and its last message.
    assert round_after == max(lost_rounds + lost_open_rounds(lost))
    assert outbox_after == journal_totals_at(lost, "T1", "uth")["messages"]
    assert len(new_rounds) >= 40 and new_rounds[0] == round_after + 1
    # The restored journal went on from where head office stands: nothing it held reused.
    assert rounds_of(state) == rounds_of(older) + new_rounds

    ledger = Ledger.open(str(ledger_url))
    try:
        db = ledger.db
        bad = db.execute("SELECT seq, type, status, reason FROM messages WHERE table_id = 'T1'"
                         " AND status <> 'applied' ORDER BY seq")
        assert bad == [], bad  # no refused increment, no held hit
        twice = db.execute("SELECT round FROM rounds WHERE table_id = 'T1' GROUP BY round"
                           " HAVING count(*) > 1")
        assert twice == []  # no round number used twice
        ledgered = sorted(r["round"] for r in db.execute(
            "SELECT round FROM rounds WHERE table_id = 'T1'"))
        assert ledgered == sorted(lost_rounds + new_rounds)
        # Ledger = journals to the cent: the lost journal's messages (all of them reached head
        # office before it was lost) and the recovered journal's after head office's id.
        lost_wagered, lost_count, _ = wagered_after(lost, 0)
        new_wagered, new_count, last_id = wagered_after(state, outbox_after)
        assert new_wagered > 0
        totals = ledger.table_totals("T1")
        assert totals["wagered"] == lost_wagered + new_wagered
        assert totals["last_seq"] == last_id == outbox_after + new_count
        count = db.one("SELECT count(*) AS n FROM messages WHERE table_id = 'T1'")
        assert count is not None and count["n"] == lost_count + new_count
        cfg = make_table("T1", root, broker).cfg
        paid = paid_at(cfg, lost) + paid_at(cfg, state) - paid_at(cfg, older)
        assert totals["paid"] == paid
        pool = ledger.pool(POOL)
        assert pool is not None and pool.stopped is None and pool.imbalance() == 0
        assert (pool.wagers_in, pool.wins) == (lost_wagered + new_wagered, paid)
        # The recovery reached head office: recorded with who and why, and alarmed.
        told = db.execute("SELECT body FROM messages WHERE table_id = 'T1'"
                          " AND type = 'table_recovered'")
        assert len(told) == 1 and "restored from an older copy, ticket 27" in told[0]["body"]
        alarms = [a["text"] for a in db.execute("SELECT text FROM alarms WHERE table_id = 'T1'")]
        assert any("accepted a loss of journal records" in a and "ticket 27" in a
                   and f"rounds go on at {round_after + 1}" in a for a in alarms), alarms
        assert not any("would be used twice" in a for a in alarms)
    finally:
        ledger.close()


def test_a_linked_table_whose_state_directory_is_gone_plays_no_round_head_office_holds(
        broker, ledger_url, tmp_path, capsys) -> None:
    """Nothing at the table says a journal was there (its development key went with the
    directory): head office's record does. The new journal plays no round before head office
    answers, goes out of service naming its numbers, and the command continues past them."""
    root = tmp_path / "T1"
    state = root / "state"
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with head_office(ledger_url, broker, verify_from=None, dual_control_from=None):
            table = await start(make_table("T1", root, broker, seed=1))
            await wait_for(play_until([table], 10), 60, "10 rounds")
            await drain([table])
            await table.stop()
            seen["lost"] = rounds_of(state)
            shutil.rmtree(state)
            table = await start(make_table("T1", root, broker, seed=2))
            await wait_for(lambda: table.service.out_of_service is not None, 20,
                           "out of service")
            seen["reason"] = table.service.out_of_service
            await table.stop()
            assert rounds_of(state) == []  # no round played on the new journal
            found = RECOVER.search(seen["reason"] or "")
            assert found is not None, seen["reason"]
            seen["round_after"] = int(found[3])
            assert cli(["journal", "accept-loss", "--state-dir", found[1], "--outbox-after",
                        found[2], "--round-after", found[3], "--reason",
                        "state directory lost, ticket 28"]) == 0
            capsys.readouterr()
            table = await start(make_table("T1", root, broker, seed=3))
            await wait_for(play_until([table], 5), 60, "5 rounds after the recovery")
            await drain([table])
            seen["out_of_service"] = table.service.out_of_service
            await table.stop()

    run(main(), timeout=300)
    assert seen["out_of_service"] is None
    assert "head office has ledgered round" in seen["reason"] or (
        "head office acknowledged outbox message" in seen["reason"])
    assert seen["round_after"] >= max(seen["lost"])
    new = rounds_of(state)
    assert len(new) >= 5 and new[0] == seen["round_after"] + 1
    ledger = Ledger.open(str(ledger_url))
    try:
        assert ledger.db.execute("SELECT seq FROM messages WHERE table_id = 'T1'"
                                 " AND status <> 'applied'") == []
        assert ledger.db.execute("SELECT round FROM rounds WHERE table_id = 'T1'"
                                 " GROUP BY round HAVING count(*) > 1") == []
    finally:
        ledger.close()
