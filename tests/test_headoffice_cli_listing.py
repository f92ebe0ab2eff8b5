"""`tablectl-headoffice` as an operator meets it (issue 28, the technician's item 8): `--config`
after any command, an empty listing said in words, the worker's share of the tables in words."""

from __future__ import annotations

from pathlib import Path

import pytest

from headoffice import cli
from headoffice.routing import PARTITIONS, partition_of
from headoffice.worker import share_text


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "headoffice.toml"
    path.write_text(f'[database]\nurl = "{tmp_path / "ledger.db"}"\n[service]\n'
                    'operators = ["alice"]\n')
    return path


def test_every_command_takes_config_after_it_and_empty_listings_say_so(
        config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv, said in ((["hits"], "no held hits\n"),
                       (["hits", "--pending"], "no held hit waiting for a decision\n"),
                       (["params-log"], "no parameter changes\n"),
                       (["params-log", "p9"], "no parameter changes of pool p9\n"),
                       (["report"], "no pools, tables or alarms in the ledger yet\n"),
                       (["meters"], "no shift closed\n")):
        assert cli.main([*argv, "--config", str(config)]) == 0, argv
        assert capsys.readouterr().out == said, argv
        assert cli.main(["--config", str(config), *argv]) == 0, argv  # before it too
        assert capsys.readouterr().out == said, argv
    # A decision on a hit that is not there: refused (exit 1) by the ledger, not by argparse.
    assert cli.main(["hit", "refuse", "7", "--reason", "x", "--config", str(config)]) == 1
    assert "refused" in capsys.readouterr().err


def test_the_workers_share_of_the_tables_in_words() -> None:
    tables = [f"T{i}" for i in range(10)]
    alone = share_text("w1", frozenset(range(PARTITIONS)), tables)
    assert alone.startswith("head office: worker w1 reads the outboxes of 10 of the 10 enrolled"
                            " tables (no other worker holds any now;")
    half = frozenset(p for p in range(PARTITIONS) if p % 2 == 0)
    mine = sum(partition_of(t) in half for t in tables)
    shared = share_text("w2", half, tables)
    assert f"reads the outboxes of {mine} of the 10 enrolled tables (other workers read the" \
           f" rest; the tables are shared out among the workers in {PARTITIONS} groups, this" \
           f" worker holds {PARTITIONS // 2})" in shared
