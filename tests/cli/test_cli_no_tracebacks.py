"""Every `tablectl` and `tablectl-headoffice` command, with `--help`, a bad argument and inputs it
cannot read, answers in words and an exit code: never a Python traceback (issue 28, the
technician's item 5). The sweep walks the argument parsers, so a command added later is swept
too; the unreadable inputs are nonexistent, garbage, and (as uid nobody) permission-denied
files."""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import shutil
import subprocess
import sys
import traceback
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


# -- every file a command reads, found from the parsers ------------------------------------------
#
# The sweeps above name their inputs; this one finds them. Every option or positional of every
# command that names a file or directory (a `Path` type, or a name that says so) is given, in
# turn, a path that is not there, a file of garbage, a directory, and a state directory whose
# journal is garbage; the rest of the command's arguments are the smallest valid ones (required
# arguments from SAMPLE, by their name). A command added later with a file argument is swept
# without touching this test; one whose required argument has no sample fails here, saying so.

FILE_DESTS = {"file", "path", "config", "console_config", "db", "settings", "state_dir",
              "runtime_dir", "key_file", "archive_dir", "outside_mark"}
SAMPLE = {"ids": ["1"], "action": ["shake"], "device": ["shaker"], "fault": ["jam"],
          "input": ["chung1"], "inputs": ["deal"], "number": ["1"], "reason": ["test"],
          "segment": ["1"], "note": ["test"], "id": ["1"], "card": ["1234567890"],
          "decision": ["1"], "pool": ["p1"], "rules": ["nsw"]}  # fmt: skip


def file_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions
            if a.type is Path or (a.dest in FILE_DESTS and a.nargs != 0)]


def leaf_parser(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> argparse.ArgumentParser:
    for word in words:
        subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = subs.choices[word]
    return parser


def with_value(action: argparse.Action, value: list[str]) -> list[str]:
    return [action.option_strings[0], *value] if action.option_strings else value


def required_argv(parser: argparse.ArgumentParser, given: dict[str, list[str]],
                  skip: str) -> list[str]:
    """The command's required arguments (and the valid `given` ones), `skip` left out."""
    argv: list[str] = []
    for action in parser._actions:
        if action.dest == skip or isinstance(action, argparse._HelpAction):
            continue
        if action.dest in given:
            argv += with_value(action, given[action.dest])
        elif (action.required and action.nargs != "*") or (
                action.nargs == "*" and action.dest in SAMPLE):  # (`*`: none is valid)
            if action.choices:
                value = [str(next(iter(action.choices)))]
            elif action.dest in SAMPLE:
                value = SAMPLE[action.dest]
            elif action.type is int:
                value = ["1"]
            else:
                pytest.fail(f"{parser.prog}: no sample for its required {action.dest!r}:"
                            " add one to SAMPLE")
            argv += with_value(action, value)
    for group in parser._mutually_exclusive_groups:  # one of them required: its first
        first = group._group_actions[0]
        if group.required and not any(a.dest in given for a in group._group_actions):
            argv += with_value(first, [] if first.nargs == 0 else SAMPLE.get(first.dest, ["1"]))
    return argv


def bad_inputs(where: Path) -> dict[str, Path]:
    """A fresh set for each run (a command may create what it was given, a ledger at a path
    that was not there): a path that is not there, a file of garbage, a directory, and a state
    directory whose journal is garbage."""
    where.mkdir(parents=True)
    garbage = where / "garbage"
    garbage.write_bytes(b"\x00\xffnot what it should be\n" * 40)
    state = where / "state"
    state.mkdir()
    shutil.copy(garbage, state / "journal.sqlite3")
    return {"missing": where / "missing" / "x", "garbage": garbage, "dir": where / "state",
            "state": state}


BAD = ("missing", "garbage", "dir", "state")


def swept(parser: argparse.ArgumentParser, leaves_: list[tuple[str, ...]],
          given: dict[str, list[str]], tmp_path: Path,
          ) -> Iterator[tuple[tuple[str, ...], str, list[str], Path]]:
    """(command words, `dest=what`, argv, the bad path) for every file argument of every
    command and every bad input; each run gets its own bad inputs."""
    n = 0
    for words in leaves_:
        leaf = leaf_parser(parser, words)
        for action in file_actions(leaf):
            rest = required_argv(leaf, given, skip=action.dest)
            for what in BAD:
                n += 1
                path = bad_inputs(tmp_path / f"case-{n}")[what]
                argv = [*words, *with_value(action, [str(path)]), *rest]
                try:
                    parser.parse_args(argv)
                except SystemExit:
                    pytest.fail(f"the sweep's {argv} does not parse: add a sample to SAMPLE")
                yield words, f"{action.dest}={what}", argv, path


FILE_ERRORS = tuple(os.strerror(e) for e in (errno.ENOENT, errno.ENOTDIR, errno.EISDIR,
                                             errno.EACCES))


def says_which(out: str, err: str) -> bool:
    """A failure about a file names the file or directory (a bare "Not a directory" does not)."""
    text = out + err
    return "/" in text or not any(e.lower() in text.lower() for e in FILE_ERRORS)


@pytest.fixture
def valid_state(tmp_path: Path) -> Path:
    from controller.journal import Journal

    state = tmp_path / "valid-state"
    Journal.open(state, table_id="T1", game="uth").close()
    return state


def test_every_tablectl_file_argument_with_inputs_it_cannot_read(
        valid_state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The other arguments valid (a real journal, a runtime directory with no daemon), each file
    argument in turn unreadable: an answer in words naming the path, never a traceback."""
    parser = tablectl_parser()
    # (--config: never the machine's own /etc/tablectl/table.toml, whose outside mark the
    # journal commands would write to)
    given = {"runtime_dir": [str(tmp_path / "no-daemon")], "state_dir": ["STATE"],
             "config": [str(tmp_path / "no-table.toml")]}
    seen = set()
    for n, (words, what, argv, _bad) in enumerate(swept(parser, TABLECTL, given, tmp_path)):
        state = tmp_path / f"state-{n}"  # (a command may change the journal it is given)
        shutil.copytree(valid_state, state)
        argv = [str(state) if a == "STATE" else a for a in argv]
        code, out, err = answer(tablectl_main.main, argv, capsys)
        if code != 0:
            assert (out + err).strip() and says_which(out, err), (argv, out, err)
        seen.add((words, what.split("=")[0]))
    # The sweep found the arguments the named sweeps above list by hand, and more.
    assert {(("journal", "verify"), "key_file"), (("journal", "start-fresh"), "outside_mark"),
            (("verify",), "settings"), (("paigow", "settle"), "file"),
            (("devices", "udev"), "config"), (("status",), "runtime_dir"),
            (("alarms", "ack"), "runtime_dir")} <= seen, seen


def test_a_runtime_dir_that_is_a_file_is_named(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`--runtime-dir` (or TABLECTL_RUNTIME_DIR) naming a file: said with its name, exit 2,
    not the socket's bare "Not a directory"."""
    a_file = tmp_path / "table.toml"
    a_file.write_text("")
    code, _out, err = answer(tablectl_main.main, ["status", "--runtime-dir", str(a_file)],
                             capsys)
    assert code == 2 and f"--runtime-dir {a_file} is not a directory" in err, err


def test_every_headoffice_file_argument_with_inputs_it_cannot_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each command with a valid config but one file argument it cannot read (the config, the
    console's, the ledger): a non-zero exit saying what it could not read, never a traceback.
    The servers (`run`, `console`) are given only bad ones: they stop before listening."""
    config = tmp_path / "headoffice.toml"
    config.write_text(f'[database]\nurl = "{tmp_path / "ledger.db"}"\n[service]\n'
                      'operators = ["alice"]\n')
    parser = headoffice_parser()
    seen = set()
    for words, what, argv, _bad in swept(parser, HEADOFFICE, {"config": [str(config)]},
                                         tmp_path):
        code, out, err = answer(headoffice_cli.main, argv, capsys)
        seen.add((words, what.split("=")[0]))
        if what == "db=missing":  # a new SQLite ledger there: a command on an empty ledger
            continue
        assert code != 0 and err.strip(), (argv, out, err)
        if what.startswith("config="):
            assert says_which(out, err), (argv, err)
    assert {(("card", "add"), "config"), (("console",), "console_config"),
            (("hits",), "db"), (("run",), "config")} <= seen, seen


@pytestmark_root
def test_every_tablectl_file_argument_a_technician_may_not_read(valid_state: Path) -> None:
    """The same sweep as a technician (uid nobody, group users) on the table's own files, which
    are root's: a file of mode 0600 and a directory of mode 0700 (holding a journal) in each
    file argument in turn. One line saying so, never a traceback."""
    import json
    import tempfile

    from tests.daemon.test_control_access import TECH, _gid

    top = Path(tempfile.mkdtemp(prefix="tablectl-sweep-"))  # (pytest's tmp is root's, 0700)
    try:
        top.chmod(0o755)
        shutil.copytree(valid_state, top / "valid")
        for path in [top / "valid", *(top / "valid").rglob("*")]:  # the rest readable to all
            path.chmod(0o755 if path.is_dir() else 0o644)
        private = top / "private"
        shutil.copytree(valid_state, private / "state")
        (private / "table.toml").write_text((REPO / "examples" / "uth-nsw.toml").read_text())
        (private / "table.toml").chmod(0o600)
        private.chmod(0o700)
        inputs = {"file": private / "table.toml", "dir": private / "state"}
        parser = tablectl_parser()
        given = {"runtime_dir": [str(top / "no-daemon")], "state_dir": [str(top / "valid")],
                 "config": [str(top / "no-table.toml")]}
        cases = []
        for words in TABLECTL:
            leaf = leaf_parser(parser, words)
            for action in file_actions(leaf):
                if words == ("journal", "keygen"):
                    continue  # (it writes a key where it is told: swept above, as root)
                rest = required_argv(leaf, given, skip=action.dest)
                for what, path in inputs.items():
                    cases.append((f"{' '.join(words)} {action.dest}={what}",
                                  [*words, *with_value(action, [str(path)]), *rest]))
        results = top / "results.jsonl"
        results.touch()
        results.chmod(0o666)
        pid = os.fork()
        if pid == 0:  # the technician: every case in this one child, each answer recorded
            code = 70
            try:
                os.setgroups([_gid(TECH)])
                os.setgid(_gid(TECH))
                os.setuid(NOBODY)
                with open(results, "a") as log:
                    for name, argv in cases:
                        out, err = io.StringIO(), io.StringIO()
                        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                            try:
                                got: object = tablectl_main.main(argv)
                            except SystemExit as exc:
                                got = exc.code
                            except BaseException:  # the traceback a person would see
                                traceback.print_exc(file=err)
                                got = "traceback"
                        log.write(json.dumps([name, got, out.getvalue(), err.getvalue()]) + "\n")
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        answers = [json.loads(line) for line in results.read_text().splitlines()]
        assert len(answers) == len(cases) > 40
        for name, got, out, err in answers:
            assert got != "traceback" and "Traceback" not in out + err, (name, err)
            if got not in (0, None):
                assert (out + err).strip() and says_which(out, err), (name, got, out, err)
        # The journal's read-only commands work for a technician who may read the journal but
        # not write its directory (its key root's: the MACs are said to be not checked).
        readers = {name: (got, out, err) for name, got, out, err in answers
                   if name.startswith(("journal verify key_file", "journal segments key_file"))}
        assert len(readers) == 4, readers
        for name, (got, out, err) in readers.items():
            assert got == 0 and "not checked" in out, (name, got, out, err)
    finally:
        shutil.rmtree(top, ignore_errors=True)
