"""Every `tablectl` and `tablectl-headoffice` command, with `--help`, a bad argument and inputs it
cannot read, answers in words and an exit code: never a Python traceback (issue 28, the
technician's item 5). The sweep walks the argument parsers, so a command added later is swept
too; the unreadable inputs are nonexistent, garbage, and (as uid nobody) permission-denied
files."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from controller.cli import main as tablectl_main
from headoffice import cli as headoffice_cli
from tests.support.daemon import REPO

NOBODY = 65534


def leaves(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> Iterator[
        tuple[str, ...]]:
    """Every runnable command's words: `("journal", "verify")`, ..."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix
        return
    for name, sub in subs[0].choices.items():
        yield from leaves(sub, (*prefix, name))


def tablectl_parser() -> argparse.ArgumentParser:
    return tablectl_main.build_parser()


def headoffice_parser() -> argparse.ArgumentParser:
    parsers: list[argparse.ArgumentParser] = []
    real = argparse.ArgumentParser.parse_args

    def keep(self: argparse.ArgumentParser, *a: object, **k: object) -> argparse.Namespace:
        parsers.append(self)
        raise SystemExit(0)

    argparse.ArgumentParser.parse_args = keep  # type: ignore[method-assign,assignment]
    try:
        with pytest.raises(SystemExit):
            headoffice_cli.parse_args([])
    finally:
        argparse.ArgumentParser.parse_args = real  # type: ignore[method-assign]
    return parsers[0]


def answer(main: Callable[[list[str]], int], argv: list[str],
           capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run a CLI in this process: an exception out of it is the traceback a person would see
    (it fails the test with it); a SystemExit or a return is an answer."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, (argv, out, err)
    return code, out, err


TABLECTL = sorted(leaves(tablectl_parser()))
HEADOFFICE = sorted(leaves(headoffice_parser()))


def test_the_sweep_covers_the_commands() -> None:
    assert ("journal", "verify") in TABLECTL and ("logs",) in TABLECTL and len(TABLECTL) > 35
    assert ("hits",) in HEADOFFICE and ("hit", "approve") in HEADOFFICE


@pytest.mark.parametrize("words", TABLECTL, ids=" ".join)
def test_tablectl_help_and_bad_arguments(words: tuple[str, ...],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = answer(tablectl_main.main, [*words, "--help"], capsys)
    assert code == 0 and out.startswith("usage: tablectl")
    code, _, err = answer(tablectl_main.main, [*words, "--no-such-option"], capsys)
    assert code == 2 and "error:" in err  # (or a missing positional, named first)
    assert err.count("\n") == 1, err  # one line naming it


@pytest.mark.parametrize("words", HEADOFFICE, ids=" ".join)
def test_headoffice_help_and_bad_arguments(words: tuple[str, ...],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = answer(headoffice_cli.main, [*words, "--help"], capsys)
    assert code == 0 and out.startswith("usage: tablectl-headoffice")
    code, _, err = answer(headoffice_cli.main, [*words, "--no-such-option"], capsys)
    assert code == 2 and "error:" in err


@pytest.fixture
def unreadable(tmp_path: Path) -> dict[str, Path]:
    """A path that is not there, a file of garbage, a directory where a file belongs, and a
    state directory whose journal is garbage."""
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x00\xffnot what it should be\n" * 40)
    state = tmp_path / "state"
    state.mkdir()
    shutil.copy(garbage, state / "journal.sqlite3")
    return {"missing": tmp_path / "missing" / "x", "garbage": garbage, "dir": tmp_path,
            "state": state}


def unreadable_cases(p: dict[str, Path]) -> list[list[str]]:
    run = ["--runtime-dir", str(p["missing"])]
    cases: list[list[str]] = []
    for words in TABLECTL:  # every command that asks the daemon: not running
        if words[0] in ("status", "watch", "selftest", "dealer", "table", "logs", "meters",
                        "alarms") \
                or words[:1] in (("devices",), ("round",)) or words in (
                    ("journal", "tail"), ("journal", "summary"), ("verify",)):
            extra = {("round", "show"): ["1"], ("dealer",): ["shake"], ("table",): ["open"],
                     ("devices", "test"): ["shaker"], ("devices", "fault"): ["shaker", "jam"],
                     ("devices", "input"): ["chung1", "on"],
                     ("devices", "loopback"): ["shaker"],
                     ("alarms", "ack"): ["--all"]}.get(words, [])
            if words != ("devices", "udev"):
                cases.append([*words, *extra, *run])
    for what in ("missing", "garbage", "dir"):
        f = str(p[what])
        cases += [["config", "validate", f], ["config", "show", f], ["devices", "udev",
                  "--config", f], ["paigow", "settle", f], ["verify", "--settings", f, *run],
                  ["journal", "keygen", str(p["missing"])]]  # fmt: skip
    for what in ("missing", "garbage", "state"):
        d = str(p[what])
        for cmd in ("verify", "segments", "archive", "downgrade", "accept-loss"):
            extra = ["--reason", "test"] if cmd == "accept-loss" else []
            cases.append(["journal", cmd, "--state-dir", d, *extra])
        cases += [["journal", "prune", "--dry-run", "--keep-rounds", "1", "--state-dir", d],
                  ["errors", "--state-dir", d]]  # fmt: skip
    return cases


def test_tablectl_with_inputs_it_cannot_read(unreadable: dict[str, Path],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    for argv in unreadable_cases(unreadable):
        code, out, err = answer(tablectl_main.main, argv, capsys)
        if code != 0:
            assert (out + err).strip(), (argv, "a failure must say why")


def test_headoffice_with_inputs_it_cannot_read(unreadable: dict[str, Path],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    for what in ("missing", "garbage", "dir"):
        f = str(unreadable[what])
        for words in HEADOFFICE:
            if words in (("run",), ("console",)):
                continue  # (a server: its config is read before it listens, swept below)
            extra = {("pool", "set"): ["p1", "--seed", "100"], ("pool", "resume"): ["p1"],
                     ("hit", "approve"): ["1"], ("hit", "refuse"): ["1", "--reason", "x"]}
            code, _out, err = answer(headoffice_cli.main,
                                     [*words, *extra.get(words, []), "--config", f], capsys)
            assert code != 0 and err.strip(), (words, what)
        for words in (("run",), ("console",)):
            code, _out, err = answer(headoffice_cli.main, [*words, "--config", f], capsys)
            assert code != 0 and err.strip(), (words, what)
    # A ledger that is not a database, and a PostgreSQL server that is not there.
    for url in (str(unreadable["garbage"]), "postgresql://nobody@127.0.0.1:1/ledger"):
        for words in (("report",), ("hits",), ("params-log",), ("meters",)):
            code, _out, err = answer(headoffice_cli.main, [*words, "--db", url], capsys)
            assert code == 2 and "the ledger cannot be opened" in err, (words, url, err)


pytestmark_root = pytest.mark.skipif(os.geteuid() != 0, reason="dropping to nobody needs root")


@pytestmark_root
def test_a_technician_without_read_access_is_told_so(tmp_path: Path) -> None:
    """`journal verify` (and its neighbours) on a state directory the user may not read: one
    line saying so, exit 77; the default state directory is the installed table's."""
    from controller.journal import Journal

    state = tmp_path / "state"
    Journal.open(state, table_id="T1", game="uth").close()
    state.chmod(0o700)
    tmp_path.chmod(0o755)
    cfg = tmp_path / "table.toml"
    cfg.write_text("secret")
    cfg.chmod(0o600)
    for argv in (["journal", "verify", "--state-dir", str(state)],
                 ["journal", "segments", "--state-dir", str(state)],
                 ["errors", "--state-dir", str(state)],
                 ["config", "validate", str(cfg)]):
        run = subprocess.run(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             sys.executable, "-m", "controller.cli.main", *argv],
            cwd=REPO, capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})  # fmt: skip
        assert "Traceback" not in run.stderr, (argv, run.stderr)
        assert run.returncode != 0 and run.stderr.count("\n") <= 2, (argv, run.stderr)
        assert "permission denied" in (run.stdout + run.stderr).lower(), (argv, run.stderr)
    # With no --state-dir: the installed table's, named.
    run = subprocess.run([sys.executable, "-m", "controller.cli.main", "journal", "verify"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in run.stderr
    assert "/var/lib/tablectl" in run.stdout + run.stderr or "/persistent" in run.stdout


def test_headoffice_report_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`tablectl-headoffice report | head -1`: head closes the pipe early; the report ends
    without a BrokenPipeError traceback."""
    from headoffice.ledger import Ledger

    db = tmp_path / "ledger.db"
    led = Ledger.open(str(db))
    led.enrol({f"T{i}": None for i in range(3000)})  # a report longer than a pipe's buffer
    led.close()
    script = (f"{sys.executable} -m headoffice.cli report --db {db} | head -1;"
              " echo status=${PIPESTATUS[0]}")
    run = subprocess.run(["bash", "-c", script], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert "Traceback" not in run.stderr and "BrokenPipe" not in run.stderr, run.stderr
    assert "status=0" in run.stdout, run.stdout
