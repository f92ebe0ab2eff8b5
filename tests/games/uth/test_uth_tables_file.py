"""The evaluator's tables shipped as a file (controller/games/uth/tables_file.py): the file the
build writes is exactly rule 8's tables, a file with any other digest is refused, and without
one the evaluator computes the tables itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller.games.uth import evaluator, tables_file
from controller.games.uth.tables_file import TablesFileError
from tests.support.daemon import REPO


@pytest.fixture(scope="module")
def computed() -> tables_file.Tables:
    return evaluator.compute_tables()


def test_the_computed_tables_have_the_pinned_digest(computed: tables_file.Tables) -> None:
    # What setup.py's build writes: a change to rule 8's tables or the format changes SHA256.
    assert tables_file.digest(tables_file.encode(computed)) == tables_file.SHA256


def test_decoding_the_file_gives_back_the_computed_tables(computed: tables_file.Tables) -> None:
    low, high, nonflush, flush, starts = tables_file.decode(tables_file.encode(computed))
    assert (low, high, nonflush, list(flush), starts) == computed
    assert flush[0b1111100000000] == evaluator.MAX_RANK  # A-K-Q-J-10 of one suit: 8.2(j)


def test_the_shipped_file_is_the_pinned_one() -> None:
    # ./dev setup (pip install -e) and the wheel build write it; the daemon loads this one.
    assert tables_file.FILE.exists(), "run ./dev setup (pip install -e .) to build it"
    assert tables_file.digest(tables_file.FILE.read_bytes()) == tables_file.SHA256
    assert tables_file.load() is not None


def test_a_file_with_another_digest_is_refused(tmp_path: Path,
                                               computed: tables_file.Tables) -> None:
    data = bytearray(tables_file.encode(computed))
    data[len(tables_file.MAGIC) + 100] ^= 1  # one bit of one key: a wrong table, same size
    bad = tmp_path / "evaluator_tables.bin"
    bad.write_bytes(bytes(data))
    with pytest.raises(TablesFileError) as err:
        tables_file.load(bad)
    msg = str(err.value)
    assert str(bad) in msg and tables_file.SHA256 in msg and tables_file.digest(data) in msg


def test_a_missing_file_loads_as_none(tmp_path: Path) -> None:
    assert tables_file.load(tmp_path / "absent.bin") is None


def test_a_file_that_is_not_tables_is_refused_by_decode() -> None:
    with pytest.raises(TablesFileError, match="not a tablectl-uth-eval/1 file"):
        tables_file.decode(b"something else")


PROBE = """
import sys
from pathlib import Path
from controller.games.uth import evaluator, tables_file
tables_file.FILE = Path(sys.argv[1])
try:
    evaluator.build_tables()
except tables_file.TablesFileError as exc:
    print("refused", bool(evaluator._FLUSH), exc)
else:
    print("ranked", evaluator.hand_rank([48, 44, 40, 36, 32]))  # A-K-Q-J-10 of clubs
"""


def _probe(path: Path) -> str:
    return subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True,
                          text=True, check=True, cwd=REPO, timeout=300).stdout.strip()


def test_the_evaluator_refuses_a_wrong_file_and_computes_without_one(tmp_path: Path) -> None:
    bad = tmp_path / "evaluator_tables.bin"
    bad.write_bytes(tables_file.FILE.read_bytes()[:-2] + b"\0\0")
    out = _probe(bad)
    # Refused: no table is filled from it, and the error names the file.
    assert out.startswith(f"refused False uth evaluator tables {bad}: SHA-256"), out
    assert _probe(tmp_path / "absent.bin") == f"ranked {evaluator.MAX_RANK}"


DAEMON = """
import sys
from pathlib import Path
from controller.games.uth import tables_file
tables_file.FILE = Path(sys.argv[1])
from controller.daemon.main import main
sys.exit(main(["--simulate", "--game", "uth", "--autoplay", "0", "--quiet",
               "--state-dir", sys.argv[2]]))
"""


def test_a_uth_daemon_with_a_wrong_tables_file_does_not_start(tmp_path: Path) -> None:
    bad = tmp_path / "evaluator_tables.bin"
    bad.write_bytes(tables_file.FILE.read_bytes()[:-2] + b"\0\0")
    run = subprocess.run([sys.executable, "-c", DAEMON, str(bad), str(tmp_path / "state")],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith(f"tablectld: uth evaluator tables {bad}: SHA-256 "), run.stderr
    assert "refusing a file this program was not built with" in run.stderr
    assert "Traceback" not in run.stderr
