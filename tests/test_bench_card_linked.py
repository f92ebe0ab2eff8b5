"""bench_card.py --linked end to end at a tiny size (no loop device, no root), so that it keeps
working: a linked table with retention on prunes a segment inside the measured window and a
positive figure is printed. No figure is asserted beyond that (they are the benchmark's to
print)."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from bench import card_linked
from controller.config import validate_text
from tests import mqtt_broker

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")

LINE = re.compile(r"run 1 (?P<name>\w+) +proc +(?P<proc>[\d.]+) KB.*segments in the window: "
                  r"closed (?P<closed>\d+) archived (?P<archived>\d+) acknowledged (?P<acked>\d+)"
                  r" pruned (?P<pruned>\d+);")


def test_linked_mode_prunes_inside_the_window_and_reports_bytes_per_round() -> None:
    # 100 rounds a segment (the config's least), 300 measured: the window, which starts half a
    # segment after the first prune, spans three segments, so a prune falls in it whatever the
    # second-long upkeep and segment-send ticks do.
    out = subprocess.run(
        [sys.executable, "bench/bench_card.py", "--linked", "--no-card", "--no-baseline",
         "--segment-rounds", "100", "--keep-rounds", "100", "--rounds", "300"],
        cwd=REPO, capture_output=True, text=True, timeout=180, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    [m] = [m for line in out.stdout.splitlines() if (m := LINE.match(line))]
    assert m["name"] == "linked"
    assert float(m["proc"]) > 0
    assert int(m["pruned"]) >= 1 and int(m["closed"]) >= 1, out.stdout


def test_an_idle_linked_table_writes_little() -> None:
    # Head office republishes the pool every second. The link journaled the same value every
    # ~2 s, each an fsync'd commit: 320 KB a minute by this counter (2d4f5a6); now once a minute
    # (pool_values.py), so a 10 s window holds at most that one commit and the log's lines.
    out = subprocess.run(
        [sys.executable, "bench/bench_card.py", "--linked", "--no-card", "--idle", "10"],
        cwd=REPO, capture_output=True, text=True, timeout=180, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    [m] = [m for line in out.stdout.splitlines()
           if (m := re.match(r"run 1 idle, 10 s: proc ([\d.]+) KB a minute", line))]
    assert float(m[1]) < 60, out.stdout


def test_the_baseline_is_the_same_table_unlinked(tmp_path: Path) -> None:
    # What the unlinked baseline runs: the linked table's file with only the link turned off,
    # valid, with the same retention.
    pki = mqtt_broker.Pki(tmp_path / "pki")
    broker = mqtt_broker.Broker(tmp_path / "broker", pki)  # not started: only its port and PKI
    from tests.support.link import table_toml

    text = table_toml(card_linked.LINKED_TABLE, tmp_path, broker)
    linked = validate_text(card_linked.with_journal(text, 100, 100, True), "linked.toml")
    unlinked = validate_text(card_linked.with_journal(text, 100, 100, False), "unlinked.toml")
    assert linked.link.enabled and not unlinked.link.enabled
    for cfg in (linked, unlinked):
        assert (cfg.journal.segment_rounds, cfg.journal.keep_rounds) == (100, 100)
    # the jackpot and the rest of the game alike; only whether its pool is head office's differs
    assert linked.uth is not None and unlinked.uth is not None
    # (and where Player Cards are answered: head office's patron service when linked, the table
    # itself when not: controller/rounds/cards.py)
    assert replace(unlinked.uth, linked=True,
                   cards=replace(unlinked.uth.cards, local=False)) == linked.uth
