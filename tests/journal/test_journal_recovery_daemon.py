"""The real daemon, standalone (issue 27 items 1 and 3): a state directory put back from an
older copy, or gone, is refused with a clear message and a nonzero exit when the table's key
or its high-water mark outside the state directory says a journal was there; the documented
commands (`tablectl journal accept-loss`, `start-fresh`) bring it back with its round numbers
going on past every number it used.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from controller.cli.main import main as cli
from controller.daemon.build import SIM_LIMITS
from controller.journal import Journal
from controller.journal.mac import make_key_file
from tests.support.daemon import start_daemon

TABLE = "SIM-UTH-REC"


def config(tmp_path: Path, outside_mark: Path | None) -> Path:
    path = tmp_path / "table.toml"
    mark = "" if outside_mark is None else f'[journal]\noutside_mark = "{outside_mark}"\n'
    path.write_text(
        f'table_id = "{TABLE}"\ngame = "uth"\n[service]\nstate_dir = "{tmp_path / "state"}"\n'
        f'runtime_dir = "{tmp_path / "run"}"\nsocket_group = "root"\nwatchdog = false\n'
        f'[uth]\n{SIM_LIMITS["uth"]}[devices]\nsimulate = true\n{mark}')
    return path


class Table:
    """The simulated daemon of one config, its key handed over as systemd would."""

    def __init__(self, tmp_path: Path, outside_mark: Path | None = None) -> None:
        self.state = tmp_path / "state"
        self.run_dir = tmp_path / "run"
        self.cfg = config(tmp_path, outside_mark)
        creds = tmp_path / "credentials"
        creds.mkdir()
        self.key = creds / "journal-key"
        make_key_file(self.key)
        self.env = {"CREDENTIALS_DIRECTORY": str(creds)}

    def play(self, rounds: int) -> tuple[int, str]:
        proc = start_daemon(self.state, "--config", str(self.cfg), "--runtime-dir",
                            str(self.run_dir), "--autoplay", str(rounds), "--quiet",
                            env=self.env)
        _out, err = proc.communicate(timeout=120)
        return proc.returncode, err

    def rounds(self) -> list[int]:
        with Journal.open(self.state, table_id=TABLE, game="uth", create=False,
                          key_file=self.key) as j:
            return [r.number for e in j.iter_events() for r in e.rounds]


def tablectl(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    capsys.readouterr()
    assert cli(["journal", *args, "--json"]) == 0, capsys.readouterr().err
    record = json.loads(capsys.readouterr().out)
    assert isinstance(record, dict)
    return record


@pytest.mark.slow
def test_a_deleted_journal_refuses_to_start_until_started_fresh_on_purpose(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = Table(tmp_path)
    code, err = table.play(2)
    assert code == 0, err
    for name in ("journal.sqlite3", "journal.sqlite3-wal", "journal.sqlite3-shm"):
        (table.state / name).unlink(missing_ok=True)  # its mark stays in the state directory
    code, err = table.play(2)
    assert code != 0
    assert "journal unusable" in err and "refusing to start a new journal" in err
    assert f"tablectl journal start-fresh --state-dir {table.state}" in err
    assert not (table.state / "journal.sqlite3").exists()  # nothing made
    record = tablectl(capsys, "start-fresh", "--state-dir", str(table.state), "--config",
                      str(table.cfg), "--key-file", str(table.key), "--reason",
                      "journal deleted by mistake, ticket 31")
    assert record["fresh"] is True and str(record["by"]).startswith("root")
    assert record["round_next"] == 3  # after the mark's last round
    code, err = table.play(2)
    assert code == 0, err
    assert table.rounds()[:2] == [3, 4]


@pytest.mark.slow
def test_a_standalone_table_goes_on_past_its_outside_mark(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / "mark" / "journal.mark"
    outside.parent.mkdir()
    table = Table(tmp_path, outside)
    code, err = table.play(3)
    assert code == 0, err
    shutil.copytree(table.state, tmp_path / "older")
    code, err = table.play(3)
    assert code == 0, err
    played = table.rounds()
    assert played == list(range(1, len(played) + 1))

    # The whole state directory put back from the older copy: its own mark agrees with it.
    shutil.rmtree(table.state)
    shutil.copytree(tmp_path / "older", table.state)
    code, err = table.play(3)
    assert code != 0 and "OUT OF SERVICE" in err
    assert f"(the high-water mark outside the state directory, {outside})" in err
    record = tablectl(capsys, "accept-loss", "--state-dir", str(table.state), "--config",
                      str(table.cfg), "--key-file", str(table.key), "--reason",
                      "restored from last night's copy, ticket 32")
    assert record["round_next"] == played[-1] + 1
    code, err = table.play(3)
    assert code == 0, err
    after = table.rounds()
    assert len(after) == len(set(after))  # no round number twice
    assert after[-1] > played[-1] and played[-1] + 1 in after

    # The state directory gone: refused (the mark outside says a journal was there), then
    # started fresh on purpose, numbering on after the last round.
    shutil.rmtree(table.state)
    code, err = table.play(2)
    assert code != 0 and "refusing to start a new journal" in err
    assert "the high-water mark outside the state directory" in err
    record = tablectl(capsys, "start-fresh", "--state-dir", str(table.state), "--config",
                      str(table.cfg), "--key-file", str(table.key), "--reason",
                      "state directory deleted, ticket 33")
    assert record["round_next"] == after[-1] + 1
    code, err = table.play(2)
    assert code == 0, err
    assert table.rounds()[0] == after[-1] + 1
