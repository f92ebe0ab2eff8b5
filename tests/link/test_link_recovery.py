"""A linked table put back from an older copy of its state, recovered with the documented
command, plays on without forking its record (issue 27 item 1): no round number head office
has ledgered is used again, no jackpot increment is refused, and the ledger equals the
journals to the cent. Real Mosquitto, head office on SQLite and on PostgreSQL.

Before the fix `accept-loss --outbox-after` skipped outbox ids but not round numbers: the
table numbered rounds head office held again, head office refused their increments ("a
second increment for the round"), held genuine hits and applied second results.
"""

from __future__ import annotations

import asyncio
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
    Idle,
    drain,
    emit_and_wait,
    head_office,
    journal_totals_at,
    make_table,
    paid_by_replay,
    play_until,
    run,
    start,
    table_toml,
    to_the_river,
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


async def refused_with_the_command(table: Any) -> tuple[str | None, re.Match[str] | None]:
    """Start `table` (a journal head office is ahead of), wait until it is out of service, stop
    it: its reason and the accept-loss command the reason gives (RECOVER), if any."""
    table = await start(table)
    await wait_for(lambda: table.service.out_of_service is not None, 20, "out of service")
    reason = table.service.out_of_service
    await table.stop()
    return reason, RECOVER.search(reason or "")


def wagered_figures(table: Any) -> tuple[int, int]:
    """The running `table`'s jackpot wagers as `tablectl status` shows them (pool.ledger.wagered)
    and as its journal's messages say (increments net of cancellations), read at one instant."""
    journal = table.service.journal
    assert journal is not None
    sign = {"jackpot_increment": 1, "jackpot_cancel": -1}
    sent = sum(sign[m.type] * m.payload["amount"] for e in journal.iter_events()
               for m in e.outbox if m.type in sign)
    return table.status()["pool"]["ledger"]["wagered"], sent


async def forty_rounds_after(table: Any, figures: list[tuple[int, int]] | None = None
                             ) -> str | None:
    """Start the recovered `table`, play 40 rounds, drain its outbox, stop it: what it said of
    being out of service (None: it played on). `figures`: gets its `wagered_figures` once
    started and once drained."""
    table = await start(table)
    if figures is not None:
        figures.append(wagered_figures(table))
    await wait_for(play_until([table], 40), 120, "40 rounds after the recovery")
    await drain([table])
    if figures is not None:
        figures.append(wagered_figures(table))
    said = table.service.out_of_service
    await table.stop()
    return said


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
            seen["reason"], found = await refused_with_the_command(
                make_table("T1", root, broker, seed=3))
            assert found is not None, seen["reason"]
            assert Path(found[1]) == state
            outbox_after, round_after = int(found[2]), int(found[3])
            seen["after"] = outbox_after, round_after
            # The documented command, as the out-of-service message gives it; the table's
            # config (on the image its default path) in case the copy had a round open.
            config = tmp_path / "T1.toml"
            config.write_text(table_toml("T1", root, broker))
            assert cli(["journal", "accept-loss", "--state-dir", found[1], "--config",
                        str(config), "--outbox-after", found[2], "--round-after", found[3],
                        "--reason", "restored from an older copy, ticket 27"]) == 0
            capsys.readouterr()

            seen["out_of_service"] = await forty_rounds_after(
                make_table("T1", root, broker, seed=4))

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
        assert ledgered_once_each(ledger) == sorted(lost_rounds + new_rounds)
        # Round by round: the jackpot wagers each round record says were made are the
        # increment head office ledgered for that number, to the cent (a round open in the
        # older copy is voided by the recovery, never carried to a number without one).
        assert ledgered_increments(ledger) == {
            **jackpot_by_round(lost), **open_increments(lost), **jackpot_by_round(state),
            **open_increments(state, outbox_after)}
        # Ledger = journals to the cent: the lost journal's messages (all of them reached head
        # office before it was lost) and the recovered journal's after head office's id.
        lost_wagered, lost_count, _ = wagered_after(lost, 0)
        new_wagered, new_count, last_id = wagered_after(state, outbox_after)
        assert new_wagered > 0
        cfg = make_table("T1", root, broker).cfg
        paid = paid_at(cfg, lost) + paid_at(cfg, state) - paid_at(cfg, older)
        totals = the_books_balance(ledger, lost_wagered + new_wagered, paid)
        assert totals["last_seq"] == last_id == outbox_after + new_count
        count = db.one("SELECT count(*) AS n FROM messages WHERE table_id = 'T1'")
        assert count is not None and count["n"] == lost_count + new_count
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
            seen["reason"], found = await refused_with_the_command(
                make_table("T1", root, broker, seed=2))
            assert rounds_of(state) == []  # no round played on the new journal
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
        ledgered_once_each(ledger)
    finally:
        ledger.close()


def jackpot_by_round(state: Path) -> dict[int, int]:
    """Round number -> the jackpot wagers its round record says were made (boxes x wager,
    UTH 15.2.4), for each completed round in the journal in `state` that had any."""
    with Journal.open(state, table_id="T1", game="uth", create=False) as j:
        rounds = [r for e in j.iter_events() for r in e.rounds if r.status == "completed"]
    return {r.number: len(jp["boxes"]) * jp["wager"] for r in rounds
            if (jp := r.summary.get("jackpot")) and jp["boxes"]}


def open_increments(state: Path, after_id: int = 0) -> dict[int, int]:
    """Round number -> the jackpot increments (net of cancellations) the journal in `state`
    sent, in messages after `after_id`, for rounds it has no record of (open when it ended)."""
    sent: dict[int, int] = {}
    with Journal.open(state, table_id="T1", game="uth", create=False) as j:
        recorded = {r.number for e in j.iter_events() for r in e.rounds}
        for e in j.iter_events():
            for m in e.outbox:
                sign = {"jackpot_increment": 1, "jackpot_cancel": -1}.get(m.type)
                if sign and m.id > after_id and m.payload["round"] not in recorded:
                    number = m.payload["round"]
                    sent[number] = sent.get(number, 0) + sign * m.payload["amount"]
    return {n: a for n, a in sent.items() if a}


def ledgered_once_each(ledger: Ledger) -> list[int]:
    """The round numbers head office ledgered from T1, in order, once it is checked that it
    applied every message (no refused increment, no held hit, for a false reason or any) and
    used no round number twice."""
    bad = ledger.db.execute("SELECT seq, type, status, reason FROM messages"
                            " WHERE table_id = 'T1' AND status <> 'applied' ORDER BY seq")
    assert bad == [], bad
    twice = ledger.db.execute("SELECT round FROM rounds WHERE table_id = 'T1' GROUP BY round"
                              " HAVING count(*) > 1")
    assert twice == [], twice
    return sorted(r["round"] for r in ledger.db.execute(
        "SELECT round FROM rounds WHERE table_id = 'T1'"))


def ledgered_increments(ledger: Ledger) -> dict[int, int]:
    """Round number -> head office's jackpot increment for it from T1, not cancelled."""
    return {r["round"]: r["amount"] for r in ledger.db.execute(
        "SELECT round, amount FROM increments WHERE table_id = 'T1'"
        " AND cancelled_seq IS NULL")}


def last_seq(state: Path) -> int:
    with Journal.open(state, table_id="T1", game="uth", create=False) as j:
        return j.last_seq


def recovery_record(state: Path) -> dict[str, Any]:
    with Journal.open(state, table_id="T1", game="uth", create=False) as j:
        found = [e.data for e in j.iter_events() if e.kind == "journal.loss_accepted"]
    assert len(found) == 1
    return found[0]


def the_books_balance(ledger: Ledger, wagered: int, paid: int) -> dict[str, Any]:
    """Head office's books for T1 against the journals' figures: the table's totals and the
    pool's (wagers in, wins), to the cent, the pool live and balanced; T1's totals."""
    totals = ledger.table_totals("T1")
    assert (totals["wagered"], totals["paid"]) == (wagered, paid)
    pool = ledger.pool(POOL)
    assert pool is not None and pool.stopped is None and pool.imbalance() == 0
    assert (pool.wagers_in, pool.wins) == (wagered, paid)
    return totals


def test_a_round_open_in_the_restored_copy_is_voided_not_renumbered(broker, ledger_url,
                                                                    tmp_path, capsys) -> None:
    """The older copy was taken while a round was open: its wagers locked and its jackpot
    increments already at head office (UTH 5.5). The lost records played that round to its
    end, so head office holds its increments and its result under its number. Recovered, the
    table voids it (docs/journal.md, "A round open in the restored copy") instead of
    carrying its wagers to a new number head office holds no increment for (before the fix:
    that round's jackpot wagers were settled, and a hit held, as "boxes [..] made no jackpot
    wager")."""
    root = tmp_path / "T1"
    state, older, lost = root / "state", tmp_path / "older", tmp_path / "lost"
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with head_office(ledger_url, broker, verify_from=None):
            table = await start(make_table("T1", root, broker, autoplay=False, seed=1))
            await to_the_river(table)  # round 1 open, jackpot wagers on boxes 2 and 5
            await drain([table])  # its increments acknowledged by head office
            seen["open"] = table.status()["round"]
            await table.stop()
            shutil.copytree(state, older)  # the copy taken mid-round
            table = await start(make_table("T1", root, broker, seed=2))
            await wait_for(play_until([table], 20), 90, "20 rounds, the open one first")
            await drain([table])
            await table.stop()
            shutil.copytree(state, lost)

            shutil.rmtree(state)
            shutil.copytree(older, state)  # restored from the copy with the round open
            seen["reason"], found = await refused_with_the_command(
                make_table("T1", root, broker, seed=3))
            assert found is not None, seen["reason"]
            seen["after"] = int(found[2]), int(found[3])
            before = last_seq(state)
            # The void is the game's: without the table's config (no default one here) the
            # command refuses, naming the round, and the journal is left as it was.
            assert cli(["journal", "accept-loss", "--state-dir", found[1], "--outbox-after",
                        found[2], "--round-after", found[3], "--reason", "no config"]) == 1
            seen["refused"] = capsys.readouterr().err
            assert last_seq(state) == before
            config = tmp_path / "T1.toml"  # the game's rules decide the void: its config
            config.write_text(table_toml("T1", root, broker))
            assert cli(["journal", "accept-loss", "--state-dir", found[1], "--config",
                        str(config), "--outbox-after", found[2], "--round-after", found[3],
                        "--reason", "restored from a copy taken mid-round, ticket 27"]) == 0
            seen["said"] = capsys.readouterr().out

            seen["out_of_service"] = await forty_rounds_after(
                make_table("T1", root, broker, seed=4), seen.setdefault("figures", []))

    run(main(), timeout=400)

    assert seen["out_of_service"] is None
    outbox_after, round_after = seen["after"]
    open_round = seen["open"]
    # The table's own figure of jackpot wagers (`tablectl status`: pool.ledger.wagered) is its
    # journal's messages, increments net of cancellations: the voided round's increments
    # stand at head office, never cancelled (docs/journal.md, "A round open in the restored
    # copy"); before the fix it read lower by them.
    assert len(seen["figures"]) == 2
    assert all(shown == sent for shown, sent in seen["figures"]), seen["figures"]
    assert seen["figures"][-1][1] == wagered_after(state, 0)[0]
    assert rounds_of(older) == [] and open_round in lost_open_rounds(older)
    lost_rounds = rounds_of(lost)
    assert open_round in lost_rounds
    assert round_after == max(lost_rounds + lost_open_rounds(lost))
    record = recovery_record(state)
    assert record["voided_round"] == open_round and record["round_next"] == round_after + 1
    assert f"round {open_round}, open in the restored copy, voided" in seen["said"]
    assert f"round {open_round} is open in the journal" in seen["refused"], seen["refused"]
    capsys.readouterr()
    assert cli(["journal", "verify", "--state-dir", str(state)]) == 0, capsys.readouterr()
    new_rounds = rounds_of(state, after_round=0)
    # The phantom keeps no record here (head office's stands); numbering goes on past it.
    assert open_round not in new_rounds
    assert len(new_rounds) >= 40 and new_rounds[0] == round_after + 1

    ledger = Ledger.open(str(ledger_url))
    try:
        db = ledger.db
        assert ledgered_once_each(ledger) == sorted(lost_rounds + new_rounds)
        # Round by round, every jackpot wager a round record says was made is the increment
        # head office ledgered for that round number, to the cent, and no other.
        journals = {**jackpot_by_round(lost), **open_increments(lost),
                    **jackpot_by_round(state), **open_increments(state, outbox_after)}
        assert ledgered_increments(ledger) == journals
        # The whole: the lost journal's messages, then the recovered journal's after head
        # office's id (the void sent nothing: no result, no cancellation, no increment).
        lost_wagered, _, _ = wagered_after(lost, 0)
        new_wagered, new_count, last_id = wagered_after(state, outbox_after)
        assert lost_wagered + new_wagered == sum(journals.values())
        cfg = make_table("T1", root, broker).cfg
        paid = paid_at(cfg, lost) + paid_at(cfg, state) - paid_at(cfg, older)
        totals = the_books_balance(ledger, lost_wagered + new_wagered, paid)
        assert totals["last_seq"] == last_id == outbox_after + new_count
        alarms = [a["text"] for a in db.execute("SELECT text FROM alarms WHERE table_id = 'T1'")]
        assert any(f"the round {open_round} left open in its restored copy was voided" in a
                   and "ticket 27" in a for a in alarms), alarms
    finally:
        ledger.close()


def open_with_jackpot(table: Any) -> bool:
    """The round's cards are out and some box has a jackpot wager: nobody plays on (`Idle`)."""
    status = table.status()
    if status["cards_dealt"] and any(b["jackpot"] for b in status["boxes"]):
        table.service.policy = Idle()
        return True
    return False


async def leave_mid_round(table: Any) -> None:
    """The players leave once a round's cards are out with a jackpot wager, and the round is
    still open when what they had already sent is done (a loaded run once saw it end: events
    the players had sent before leaving finished it; then they come back for the next)."""
    playing = table.service.policy
    for _ in range(5):
        await wait_for(lambda: open_with_jackpot(table), 60, "a round dealt with jackpots",
                       every=0.001)
        await drain([table])
        if open_with_jackpot(table):
            return
        table.service.policy = playing
    raise AssertionError("no round stayed open with a jackpot wager once the players left")


async def start_or_refused(table: Any) -> Any:
    """`start`, for a table that may refuse its journal (it then has none, out of service)."""
    table.task = asyncio.create_task(table.service.run())
    service = table.service
    await wait_for(lambda: service.out_of_service is not None
                   or (service.journal is not None and service.state is not None), 10, "start")
    if service.journal is None:
        return table
    await wait_for(lambda: service.ready and (service.ignored.held is None
                                              or service.out_of_service is not None),
                   table.link.options.confirm_s + 10, "the dealer's keys released")
    return table


def journal_files(src: Path, dst: Path) -> None:
    """The journal file (and its WAL) of `src` into `dst`, the marks left as they are."""
    for suffix in ("-wal", "-shm", ""):
        (dst / f"journal.sqlite3{suffix}").unlink(missing_ok=True)
    for suffix in ("", "-wal"):
        if (src / f"journal.sqlite3{suffix}").exists():
            shutil.copy2(src / f"journal.sqlite3{suffix}", dst / f"journal.sqlite3{suffix}")


def test_a_linked_table_that_lost_journal_commits_recovers_past_its_mark_and_head_office(
        broker, ledger_url, tmp_path, capsys) -> None:
    """A lost write-ahead log on a linked table (issue 27: "after a restore, a lost WAL or a
    fresh journal"): the journal file goes back to an older state while its high-water mark
    stays. The table refuses it (LOST RECORDS); the command the message gives recovers past
    the mark; head office's answer, if it is further on still, takes the table out of service
    again with its numbers, and the command it gives goes past those. Then 40 rounds: no
    refused increment, no held hit, no round number twice, increments round by round."""
    root = tmp_path / "T1"
    state, older, lost = root / "state", tmp_path / "older", tmp_path / "lost"
    config = tmp_path / "T1.toml"
    seen: dict[str, Any] = {"reasons": []}

    async def main() -> None:
        config.write_text(table_toml("T1", root, broker))
        async with head_office(ledger_url, broker, verify_from=None):
            table = await start(make_table("T1", root, broker, seed=1))
            await wait_for(play_until([table], 10), 60, "10 rounds")
            await drain([table])
            await table.stop()
            older.mkdir()
            journal_files(state, older)
            table = await start(make_table("T1", root, broker, seed=2))
            await wait_for(play_until([table], 25), 90, "25 more rounds")
            # The lost commits end in a round open with its jackpot increments at head office:
            # the players leave (nobody plays on) once the cards of one are out.
            await leave_mid_round(table)
            await table.stop()
            shutil.copytree(state, lost)
            journal_files(older, state)  # the commits since the older state are lost
            for attempt in range(3):
                table = await start_or_refused(make_table("T1", root, broker, seed=4 + attempt))
                if table.service.out_of_service is None:
                    await wait_for(lambda t=table: t.service.out_of_service is not None
                                   or len(t.rounds) >= 1, 20, "out of service or a round")
                reason = table.service.out_of_service
                await table.stop()
                if reason is None:
                    break
                seen["reasons"].append(reason)
                found = RECOVER.search(reason)
                args = (["--outbox-after", found[2], "--round-after", found[3]]
                        if found is not None else [])
                assert "accept-loss" in reason, reason
                assert cli(["journal", "accept-loss", "--state-dir", str(state), "--config",
                            str(config), *args, "--reason", f"WAL lost, ticket 27 ({attempt})"
                            ]) == 0
                capsys.readouterr()
            seen["out_of_service"] = await forty_rounds_after(
                make_table("T1", root, broker, seed=9), seen.setdefault("figures", []))

    run(main(), timeout=400)

    assert seen["out_of_service"] is None
    assert all(shown == sent for shown, sent in seen["figures"]), seen["figures"]
    assert "LOST RECORDS" in seen["reasons"][0], seen["reasons"]
    capsys.readouterr()
    assert cli(["journal", "verify", "--state-dir", str(state)]) == 0, capsys.readouterr()
    lost_rounds = rounds_of(lost)
    with Journal.open(state, table_id="T1", game="uth", create=False) as j:
        recoveries = [e.data for e in j.iter_events() if e.kind == "journal.loss_accepted"]
    outbox_after = max(r["outbox_next"] for r in recoveries) - 1
    first_new = max(r["round_next"] for r in recoveries)
    new_rounds = rounds_of(state, after_round=first_new - 1)
    assert len(new_rounds) >= 40 and new_rounds[0] == first_new
    assert max(lost_open_rounds(lost)) > max(lost_rounds)  # the lost round open, at head office
    assert len(recoveries) == 2  # past the marks, then past head office's open round
    assert first_new > max(lost_rounds + lost_open_rounds(lost))

    ledger = Ledger.open(str(ledger_url))
    try:
        assert ledgered_once_each(ledger) == sorted(lost_rounds + new_rounds)
        assert ledgered_increments(ledger) == {
            **jackpot_by_round(lost), **open_increments(lost),
            **{n: a for n, a in jackpot_by_round(state).items() if n >= first_new},
            **open_increments(state, outbox_after)}
        lost_wagered, _, _ = wagered_after(lost, 0)
        new_wagered, _, last_id = wagered_after(state, outbox_after)
        totals = ledger.table_totals("T1")
        assert totals["wagered"] == lost_wagered + new_wagered
        assert totals["last_seq"] == last_id
    finally:
        ledger.close()


def ledgered_messages(ledger: Ledger, number: int) -> list[tuple[int, str, str]]:
    """(seq, type, status) of head office's messages from T1 that name round `number`."""
    return [(r["seq"], r["type"], r["status"]) for r in ledger.db.execute(
        "SELECT seq, type, status FROM messages WHERE table_id = 'T1' AND round = ?"
        " ORDER BY seq", (number,))]


def test_a_round_open_whose_increments_head_office_never_had_is_voided_with_its_messages(
        broker, ledger_url, tmp_path, capsys) -> None:
    """`_void_open_round` when head office never acknowledged the open round's increments
    (docs/journal.md, "A round open in the restored copy", second case): head office was
    stopped from before the round's jackpot wagers were locked (UTH 5.5) until after the
    loss, so only the marks say later numbers were used, and the ids the lost records used
    never reached head office. The void is journaled with its effects:
    head office gets the round's increments, their cancellation (UTH 15.3.1) and the voided
    result, in that order; the pool keeps none of those wagers; 40 rounds after, the ledger
    equals the journal to the cent, no message refused or held, no round number twice."""
    root = tmp_path / "T1"
    state, older, lost = root / "state", tmp_path / "older", tmp_path / "lost"
    config = tmp_path / "T1.toml"
    seen: dict[str, Any] = {}
    slow_pool = 300.0  # the pool value stays valid with head office down: jackpot wagers taken

    async def main() -> None:
        config.write_text(table_toml("T1", root, broker))
        async with head_office(ledger_url, broker, verify_from=None):
            table = await start(make_table("T1", root, broker, autoplay=False, seed=1,
                                           pool_timeout_s=slow_pool))
            await wait_for(lambda: table.status()["jackpot"] == "online"
                           and table.status()["deck_ready"], 10, "jackpot online")
            await drain([table])
        # Head office is gone (the broker stays): nothing from here on is acknowledged.
        await to_the_river(table)  # round 1 open, its jackpot increments written, not sent
        seen["open"] = table.status()["round"]
        await table.stop()
        older.mkdir()
        journal_files(state, older)
        table = await start(make_table("T1", root, broker, seed=2, pool_timeout_s=slow_pool))
        await wait_for(play_until([table], 6), 90, "6 rounds, the open one first, unlinked")
        await table.stop()
        shutil.copytree(state, lost)
        journal_files(older, state)  # the commits since the older state are lost
        # The marks are ahead of the journal: the command without head office's numbers.
        assert cli(["journal", "accept-loss", "--state-dir", str(state), "--config",
                    str(config), "--reason", "WAL lost with the link down, ticket 27"]) == 0
        seen["said"] = capsys.readouterr().out
        async with head_office(ledger_url, broker, verify_from=None):
            seen["out_of_service"] = await forty_rounds_after(
                make_table("T1", root, broker, seed=9), seen.setdefault("figures", []))

    run(main(), timeout=400)

    assert seen["out_of_service"] is None
    assert all(shown == sent for shown, sent in seen["figures"]), seen["figures"]
    open_round = seen["open"]
    lost_rounds = rounds_of(lost)
    assert open_round in lost_rounds and open_round in lost_open_rounds(state)
    _, _, lost_last = wagered_after(lost, 0)
    record = recovery_record(state)
    assert record["voided_round"] == open_round
    assert record["round_next"] == max(lost_rounds) + 1
    assert record["outbox_next"] == lost_last + 1  # no id the lost records used, sent or not
    assert f"round {open_round}, open in the restored copy, voided" in seen["said"]
    capsys.readouterr()
    assert cli(["journal", "verify", "--state-dir", str(state)]) == 0, capsys.readouterr()
    rounds = rounds_of(state)
    assert rounds[0] == open_round and rounds[1] == record["round_next"] and len(rounds) > 40

    ledger = Ledger.open(str(ledger_url))
    try:
        db = ledger.db
        # Nothing of the lost records reached head office; the journal's rounds did, once each.
        assert ledgered_once_each(ledger) == rounds
        voided = db.execute("SELECT status FROM rounds WHERE table_id = 'T1' AND round = ?",
                            (open_round,))
        assert [r["status"] for r in voided] == ["voided"]
        # In order: the increment (wagers locked), its cancellation, the voided result.
        types = [t for _, t, _ in ledgered_messages(ledger, open_round)]
        assert types == ["jackpot_increment", "jackpot_cancel", "round_result"], types
        assert ledgered_increments(ledger) == {
            **jackpot_by_round(state), **open_increments(state)}
        assert open_round not in ledgered_increments(ledger)
        wagered, count, last_id = wagered_after(state, 0)
        cfg = make_table("T1", root, broker).cfg
        totals = the_books_balance(ledger, wagered, paid_at(cfg, state))
        assert totals["last_seq"] == last_id
        messages = db.one("SELECT count(*) AS n FROM messages WHERE table_id = 'T1'")
        assert messages is not None and messages["n"] == count
        alarms = [a["text"] for a in db.execute("SELECT text FROM alarms WHERE table_id = 'T1'")]
        # The alarm says what head office got: the round's void with its cancellation (not
        # "head office's record stands"), and which ids it never received.
        first, last = record["outbox_lost"]
        assert any("accepted a loss of journal records" in a and "ticket 27" in a
                   and f"round {open_round} left open in its restored copy was voided at the"
                   " table: its jackpot wagers cancelled and returned (UTH 15.3.1)" in a
                   and f"messages {first}..{last} were lost at the table before head office"
                   " received them" in a for a in alarms), alarms
        assert not any("would be used twice" in a or "record of round" in a for a in alarms)
    finally:
        ledger.close()


async def jackpot_wager_down(table: Any, box: int) -> int:
    """`table`'s round open in betting with `box`'s ante and jackpot wager down, nothing dealt:
    no jackpot increment written yet (the wagers lock at the deal, UTH 5.5). Its number."""
    await wait_for(lambda: table.status()["jackpot"] == "online" and table.status()["deck_ready"],
                   10, "jackpot online, deck shuffled")
    if table.status()["state"] == "closed":
        await emit_and_wait(table, "table.open")
    await emit_and_wait(table, "dealer.wager", box=box, ante=1000)
    await emit_and_wait(table, "bet.on", box=box)
    assert table.status()["state"] == "betting" and not table.status()["cards_dealt"]
    return int(table.status()["round"])


def round_record(state: Path, number: int) -> Any:
    with Journal.open(state, table_id="T1", game="uth", create=False) as j:
        return j.round_record(number)


def test_a_round_open_in_betting_in_the_restored_copy_is_renumbered_past_head_office(
        broker, ledger_url, tmp_path, capsys) -> None:
    """`_void_open_round`, nothing of the open round sent: a copy taken with a round open in
    betting (a jackpot wager down, nothing dealt, no increment written: UTH 5.5) is put back
    after 20 more rounds reached head office. The round is not voided: it is carried to the
    number after head office's (base.skip_rounds), its wagers with it, and 40 rounds after,
    head office's ledger equals the journal to the cent, no refused increment, no number
    twice."""
    root = tmp_path / "T1"
    state, older, lost = root / "state", tmp_path / "older", tmp_path / "lost"
    config = tmp_path / "T1.toml"
    seen: dict[str, Any] = {}

    async def main() -> None:
        config.write_text(table_toml("T1", root, broker))
        async with head_office(ledger_url, broker, verify_from=None, dual_control_from=None):
            table = await start(make_table("T1", root, broker, autoplay=False, seed=2))
            seen["open"] = await jackpot_wager_down(table, box=2)
            await drain([table])
            await table.stop()
            shutil.copytree(state, older)  # the copy taken mid-round, in betting
            table = await start(make_table("T1", root, broker, seed=3))
            await wait_for(play_until([table], 20), 90, "20 rounds, the open one first")
            await drain([table])
            await table.stop()
            shutil.copytree(state, lost)
            shutil.rmtree(state)
            shutil.copytree(older, state)
            seen["reason"], found = await refused_with_the_command(
                make_table("T1", root, broker, seed=4))
            assert found is not None, seen["reason"]
            seen["after"] = int(found[2]), int(found[3])
            assert cli(["journal", "accept-loss", "--state-dir", found[1], "--config",
                        str(config), "--outbox-after", found[2], "--round-after", found[3],
                        "--reason", "restored from a copy taken in betting, ticket 27"]) == 0
            seen["said"] = capsys.readouterr().out
            seen["out_of_service"] = await forty_rounds_after(
                make_table("T1", root, broker, seed=5))

    run(main(), timeout=400)

    assert seen["out_of_service"] is None
    outbox_after, round_after = seen["after"]
    open_round = seen["open"]
    lost_rounds = rounds_of(lost)
    assert open_round in lost_rounds and open_round not in lost_open_rounds(older)
    assert round_after == max(lost_rounds + lost_open_rounds(lost)) > open_round
    record = recovery_record(state)
    assert record["voided_round"] is None and record["round_next"] == round_after + 1
    assert "voided" not in seen["said"]
    new_rounds = rounds_of(state, after_round=open_round)
    assert rounds_of(state) == rounds_of(older) + new_rounds
    assert len(new_rounds) >= 40 and new_rounds[0] == round_after + 1
    # The round open in betting is the first new number, its jackpot wager (box 2) with it.
    carried = round_record(state, round_after + 1)
    assert carried is not None and 2 in carried.summary["jackpot"]["boxes"]
    capsys.readouterr()
    assert cli(["journal", "verify", "--state-dir", str(state)]) == 0, capsys.readouterr()

    ledger = Ledger.open(str(ledger_url))
    try:
        assert ledgered_once_each(ledger) == sorted(lost_rounds + new_rounds)
        journals = {**jackpot_by_round(lost), **open_increments(lost),
                    **{n: a for n, a in jackpot_by_round(state).items() if n > round_after},
                    **open_increments(state, outbox_after)}
        assert ledgered_increments(ledger) == journals
        lost_wagered, _, _ = wagered_after(lost, 0)
        new_wagered, new_count, last_id = wagered_after(state, outbox_after)
        assert lost_wagered + new_wagered == sum(journals.values())
        cfg = make_table("T1", root, broker).cfg
        paid = paid_at(cfg, lost) + paid_at(cfg, state) - paid_at(cfg, older)
        totals = the_books_balance(ledger, lost_wagered + new_wagered, paid)
        assert totals["last_seq"] == last_id == outbox_after + new_count
    finally:
        ledger.close()


def test_a_round_whose_number_head_office_never_ledgered_keeps_it_after_a_lost_wal(
        broker, ledger_url, tmp_path, capsys) -> None:
    """`_void_open_round`, numbering does not pass the open round: the write-ahead log is lost
    in the middle of a round's betting (the lost commits: a second box's wagers, nothing
    sent). Recovered past the marks alone, the round keeps its number (head office has not
    ledgered it, the marks name the round before it) and goes on with the wagers the journal
    kept; 40 rounds after, head office's ledger equals the journal to the cent, no refused
    increment, no number twice."""
    root = tmp_path / "T1"
    state, older = root / "state", tmp_path / "older"
    config = tmp_path / "T1.toml"
    seen: dict[str, Any] = {}

    async def main() -> None:
        config.write_text(table_toml("T1", root, broker))
        async with head_office(ledger_url, broker, verify_from=None, dual_control_from=None):
            table = await start(make_table("T1", root, broker, autoplay=False, seed=2))
            seen["open"] = await jackpot_wager_down(table, box=2)
            await drain([table])
            await table.stop()
            older.mkdir()
            journal_files(state, older)
            table = await start(make_table("T1", root, broker, autoplay=False, seed=3))
            assert await jackpot_wager_down(table, box=5) == seen["open"]  # the lost commits
            await drain([table])
            await table.stop()
            journal_files(older, state)
            assert cli(["journal", "accept-loss", "--state-dir", str(state), "--config",
                        str(config), "--reason", "WAL lost mid-round, ticket 27"]) == 0
            seen["said"] = capsys.readouterr().out
            seen["out_of_service"] = await forty_rounds_after(
                make_table("T1", root, broker, seed=5))

    run(main(), timeout=400)

    assert seen["out_of_service"] is None
    open_round = seen["open"]
    record = recovery_record(state)
    assert record["voided_round"] is None and record["round_next"] == open_round
    assert record["rounds_lost"] is None and record["outbox_lost"] is None
    assert "voided" not in seen["said"]
    rounds = rounds_of(state)
    assert rounds == list(range(1, len(rounds) + 1)) and len(rounds) >= open_round - 1 + 40
    # The round kept its number and the wagers the journal kept: box 2's, not the lost box 5's.
    kept = round_record(state, open_round)
    assert kept is not None and kept.status == "completed"
    assert 2 in kept.summary["jackpot"]["boxes"] and 5 not in kept.summary["jackpot"]["boxes"]
    capsys.readouterr()
    assert cli(["journal", "verify", "--state-dir", str(state)]) == 0, capsys.readouterr()

    ledger = Ledger.open(str(ledger_url))
    try:
        assert ledgered_once_each(ledger) == rounds
        journals = {**jackpot_by_round(state), **open_increments(state)}
        assert ledgered_increments(ledger) == journals
        wagered, count, last_id = wagered_after(state, 0)
        assert wagered == sum(journals.values())
        cfg = make_table("T1", root, broker).cfg
        totals = the_books_balance(ledger, wagered, paid_at(cfg, state))
        assert totals["last_seq"] == last_id == count
    finally:
        ledger.close()
