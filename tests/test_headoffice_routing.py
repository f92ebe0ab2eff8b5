"""Partition leases (headoffice/routing.py), on SQLite and PostgreSQL, with a clock of our own:
workers converge on fair, disjoint shares; a worker joining gets its share from the others; a
dead worker's partitions are taken once its lease runs out, not before; a table's partition
is stable."""

from __future__ import annotations

import zlib

import pytest

from headoffice.db import open_database
from headoffice.routing import PARTITIONS, Routing, partition_of


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def settle(workers: list[Routing], rounds: int = 3) -> dict[str, frozenset[int]]:
    held: dict[str, frozenset[int]] = {}
    for _ in range(rounds):
        for w in workers:
            held[w.worker] = w.claim().owned
    return held


def test_workers_share_the_partitions_fairly_and_take_over_a_dead_ones(ledger_url: str) -> None:
    clock = Clock()
    dbs = [open_database(ledger_url) for _ in range(3)]
    try:
        a, b, c = (Routing(db, f"w{i}", lease_s=3.0, clock=clock) for i, db in enumerate(dbs))
        assert a.claim().owned == frozenset(range(PARTITIONS))  # alone: everything
        held = settle([a, b])
        assert sorted(map(len, held.values())) == [32, 32]
        assert held["w0"].isdisjoint(held["w1"])
        held = settle([a, b, c])
        assert sorted(map(len, held.values())) == [20, 22, 22]  # ceil(64 / 3) at most
        assert len(frozenset().union(*held.values())) == PARTITIONS
        assert all(x.isdisjoint(y) for x in held.values() for y in held.values() if x is not y)
        # c dies: a and b renew; c's leases still hold until they run out.
        clock.now += 2.0
        held_ab = settle([a, b], rounds=1)
        assert len(held_ab["w0"]) + len(held_ab["w1"]) == PARTITIONS - len(held["w2"])
        clock.now += 1.5  # c last claimed 3.5 s ago: its leases (3 s) have run out
        held_ab = settle([a, b])
        assert sorted(map(len, held_ab.values())) == [32, 32]
        assert held_ab["w0"].isdisjoint(held_ab["w1"])
        # c comes back (the same name: its certificate): fair shares again.
        held = settle([c, a, b, c, a, b])
        assert sorted(map(len, held.values())) == [20, 22, 22]
        rows = dbs[0].execute("SELECT COUNT(DISTINCT owner) AS n FROM ho_partitions")
        assert rows[0]["n"] == 3
    finally:
        for db in dbs:
            db.close()


def test_a_tables_partition_is_stable_and_spread() -> None:
    assert partition_of("T12") == zlib.crc32(b"T12") % PARTITIONS == partition_of("T12")
    counts = [0] * PARTITIONS
    for i in range(6400):
        counts[partition_of(f"T{i}")] += 1
    assert min(counts) > 50 and max(counts) < 150  # ~100 each


def test_bad_routing_settings_are_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = open_database(tmp_path / "ho.db")
    try:
        with pytest.raises(ValueError, match="lease_s"):
            Routing(db, "w", lease_s=0.0)
        with pytest.raises(ValueError, match="worker name"):
            Routing(db, "", lease_s=3.0)
    finally:
        db.close()
