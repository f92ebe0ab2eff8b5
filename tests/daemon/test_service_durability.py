"""Which commits the daemon fsyncs (docs/daemon.md "Where the bytes of a round go"): every one
that moves money (the first card out locks the wagers, 5.5; jackpot contributions; settlement)
is fsync'd before its effects; UTH wagers and the deal, which move none, ride on the next one."""

from __future__ import annotations

import asyncio
import logging
import random
from pathlib import Path
from typing import Any

from controller.config.machine import build_machine
from controller.daemon.build import build_devices, build_policy, simulation_config
from controller.daemon.service import TableService
from controller.journal import Journal, verify_dir
from controller.journal.mark import MARK_FILE, read_mark


def test_only_commits_that_move_no_money_go_without_their_own_fsync(tmp_path: Path) -> None:
    cfg = simulation_config("uth", "nsw", tmp_path / "state", tmp_path / "run")
    rng = random.Random(7)
    svc = TableService(cfg, build_machine(cfg), build_devices(cfg, rng),
                       logging.getLogger("test.durable"), policy=build_policy(cfg, rng),
                       autoplay=6)
    commits: list[tuple[list[str], bool, bool]] = []  # (kinds, money, durable)

    async def scenario() -> None:
        task = asyncio.create_task(svc.run())
        while svc.journal is None:
            await asyncio.sleep(0.01)
        journal = svc.journal
        append = journal.append_batch

        def recording(entries: Any, *, durable: bool = True) -> list[int]:
            seqs = append(entries, durable=durable)
            money = any(e.snapshot is not None or any(fx.kind in ("outbox", "round")
                                                      for fx in e.effects) for e in entries)
            commits.append(([e.event.kind for e in entries], money, durable))
            return seqs

        journal.append_batch = recording  # type: ignore[method-assign]
        await task

    asyncio.run(scenario())
    assert commits, "the table played"
    assert all(durable for _kinds, money, durable in commits if money)
    unsynced = [kinds for kinds, _money, durable in commits if not durable]
    assert any("dealer.deal" in kinds for kinds in unsynced)
    assert any("dealer.wager" in kinds for kinds in unsynced)
    assert all(set(kinds) <= {"dealer.wager", "bet.on", "bet.off", "shuffler.ready",
                              "dealer.deal"} for kinds in unsynced)
    # A decision (a play wager) and the first card out are always fsync'd.
    assert all(durable for kinds, _m, durable in commits
               if {"dealer.decision", "card.dispensed"} & set(kinds))
    # The last commit of a round settles it (fsync'd): the mark, moved only by fsync'd
    # commits, is at the journal's end, and the journal verifies.
    assert commits[-1][1] and commits[-1][2]
    state = cfg.service.state_dir
    with Journal.open(state, table_id=cfg.table_id, game=cfg.game, create=False) as j:
        last, key = j.last_seq, j.key
    assert read_mark(state / MARK_FILE, key, cfg.table_id, cfg.game).seq == last
    assert verify_dir(state).ok


def test_only_uth_wagers_and_the_deal_skip_their_own_fsync() -> None:
    """UTH 5.5: wagers are placed, not locked, until the first card out; the card burst, a
    round record (settlement), an outbox message (head office) or a snapshot always waits for
    the disk, and Pai Gow has no unsynced kind at all."""
    from controller.daemon.durability import needs_fsync
    from controller.journal import Entry
    from controller.rounds.base import Effect, Event, Now

    now = Now("2026-11-26T08:00:00.000Z", 1000)

    def entry(kind: str, *effects: str, snapshot: dict[str, object] | None = None) -> Entry:
        return Entry(Event(kind, {}), now, 1, tuple(Effect(k, {}) for k in effects), snapshot)

    wagers = [entry("dealer.wager", "display"), entry("bet.on"), entry("dealer.deal")]
    assert not needs_fsync("uth", wagers, meters_changed=False)
    assert needs_fsync("paigow", wagers, meters_changed=False)
    assert needs_fsync("uth", wagers, meters_changed=True)
    assert needs_fsync("uth", [*wagers, entry("card.dispensed")], meters_changed=False)
    assert needs_fsync("uth", [entry("dealer.wager", "outbox")], meters_changed=False)
    assert needs_fsync("uth", [entry("dealer.wager", "round")], meters_changed=False)
    assert needs_fsync("uth", [entry("dealer.deal", snapshot={})], meters_changed=False)
    assert needs_fsync("uth", [], meters_changed=False)
    # Head office's pool value and the pool timeout's tick: the meter and the jackpot's online
    # state, no money (issue 16: a linked idle table fsync'd one every ~2 s).
    pool = [entry("ho.pool", "display", "log"), entry("tick", "alarm", "display")]
    assert not needs_fsync("uth", pool, meters_changed=False)
    assert needs_fsync("uth", [*pool, entry("ho.award")], meters_changed=False)
