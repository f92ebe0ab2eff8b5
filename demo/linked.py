"""`./dev run --linked`: the linked system on one machine, until Ctrl-C.

    ./dev run --linked [--pace S] [--listen 127.0.0.1:8080] [--dir DIR]

Starts, each as its own process:
- Mosquitto with the shipped config and ACL (headoffice/mosquitto/) on a free port, TLS with a
  client certificate per client from a throwaway CA (tests/mqtt_broker.py renders the same
  template the tests use: nothing about the broker is special to the demo);
- a head-office worker (`tablectl-headoffice run`) on a SQLite ledger, pool p1 enrolled with
  tables T1 and T2 (tests/support/link.py writes the config, as the benchmarks do);
- the operators' console (`tablectl-headoffice console`), with one approver, `alice`, whose
  password is made here and printed;
- two UTH tables (`tablectld --simulate --autoplay 0`), T1 and T2, linked to head office on the
  shared progressive pool: simulated players, a step every --pace seconds.

Ctrl-C (or SIGTERM) stops them all: SIGTERM to each (the tables first, a clean close each), then
SIGKILL to whatever has not gone in STOP_S seconds, and removes the throwaway directory (not
--dir). The processes are in sessions of their own, so the terminal's Ctrl-C reaches only this
supervisor, which stops them in order. If one dies early, the others are stopped and the exit
status is 1.
"""

from __future__ import annotations

import argparse
import contextlib
import grp
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests/: the broker and the linked configs

if TYPE_CHECKING:
    from tests.mqtt_broker import Broker

TABLES = ("T1", "T2")
STOP_S = 20.0  # a table's clean close takes well under this (docs/daemon.md)
OPERATOR = "alice"  # tests/support/link.py's head office lists her in [service] operators


def own_group() -> str:
    try:
        return grp.getgrgid(os.getgid()).gr_name
    except KeyError:
        return "root"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Demo:
    def __init__(self, work: Path, listen: str, pace: float) -> None:
        self.work = work
        self.listen = listen
        self.pace = pace
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.broker: Broker | None = None
        self.stopping = False

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        """A child in a session of its own (Ctrl-C reaches only us), its output in a log file."""
        with open(self.work / f"{name}.log", "wb") as log:
            proc = subprocess.Popen(argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append((name, proc))
        return proc

    def start(self) -> str:
        """Everything started; returns the console's password."""
        from headoffice.console.accounts import hash_password, parse_listen
        from headoffice.ledger import Ledger
        from tests.mqtt_broker import Broker, Pki
        from tests.support.link import POOL, headoffice_file, table_toml

        broker = Broker(self.work / "broker", Pki(self.work / "pki"))
        self.broker = broker
        broker.start(new_session=True)  # stopped last, after the tables' clean close
        db = self.work / "ledger.db"
        ho = headoffice_file(broker, self.work / "headoffice.toml", str(db),
                             dict.fromkeys(TABLES, POOL))
        worker = self.spawn("headoffice", [sys.executable, "-m", "headoffice.cli",
                                           "--config", str(ho), "run"])
        deadline = time.monotonic() + 30
        while not self._pool_ready(Ledger, str(db), POOL):
            if worker.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"head office did not start: {self.tail('headoffice')}")
            time.sleep(0.2)
        password = secrets.token_urlsafe(12)
        console = self.work / "headoffice-console.toml"
        console.write_text(f'[console]\nlisten = "{self.listen}"\n[[users]]\n'
                           f'name = "{OPERATOR}"\nrole = "approver"\n'
                           f'password_hash = "{hash_password(password)}"\n')
        proc = self.spawn("console", [sys.executable, "-m", "headoffice.cli", "console",
                                      "--config", str(ho), "--console-config", str(console)])
        host, port = parse_listen(self.listen)
        deadline = time.monotonic() + 60
        while not self._answers(host, port):  # the URL printed is one that answers
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the console did not start: {self.tail('console')}")
            time.sleep(0.1)
        for table in TABLES:
            conf = self.work / f"{table}.toml"
            # The control socket in this user's own group (the tests' configs name root's): a
            # developer's `tablectl status` reaches it without sudo (controller/daemon/build.py
            # does the same for `--simulate` without a config).
            conf.write_text(table_toml(table, self.work / table, broker).replace(
                'socket_group = "root"', f'socket_group = "{own_group()}"'))
            self.spawn(table, [sys.executable, "-m", "controller.daemon", "--config", str(conf),
                               "--simulate", "--autoplay", "0", "--pace", str(self.pace),
                               "--quiet"])
        return password

    @staticmethod
    def _answers(host: str, port: int) -> bool:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        except OSError:
            return False

    @staticmethod
    def _pool_ready(ledger_cls: type, db: str, pool: str) -> bool:
        if not Path(db).exists():
            return False
        try:
            led = ledger_cls.open(db)
        except Exception:  # the worker is still creating the schema
            return False
        try:
            return led.pool(pool) is not None
        except Exception:
            return False
        finally:
            led.close()

    def tail(self, name: str, lines: int = 20) -> str:
        path = self.work / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) \
            if path.exists() else ""

    def dead(self) -> str | None:
        for name, proc in self.procs:
            if proc.poll() is not None:
                return name
        return None

    def stop(self) -> None:
        """Tables first (a clean close, their outboxes in the journal), then the console and
        head office, then the broker; SIGKILL after STOP_S for any that hangs."""
        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + STOP_S
        for name, proc in reversed(self.procs):
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"linked: {name} did not stop in {STOP_S:.0f} s: killed", file=sys.stderr)
                proc.kill()
                proc.wait()
        if self.broker is not None:
            self.broker.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="./dev run --linked", description=__doc__.split("\n\n")[0])
    ap.add_argument("--pace", type=float, default=0.5,
                    help="seconds between the simulated players' and dealer's actions (0.5)")
    ap.add_argument("--listen", default=None,
                    help="the console's HOST:PORT (default 127.0.0.1 and a free port)")
    ap.add_argument("--dir", type=Path, default=None,
                    help="keep every file here (default: a throwaway directory, removed at exit)")
    args = ap.parse_args(argv)
    if args.pace < 0:
        ap.error("--pace: must be 0 or more seconds")
    from headoffice.console.accounts import parse_listen
    from shared.errors import InputError

    if args.listen is not None:
        try:
            parse_listen(args.listen)
        except InputError as exc:
            ap.error(f"--listen: {exc}")
    if not Path("/usr/sbin/mosquitto").exists() and shutil.which("mosquitto") is None:
        print("linked: Mosquitto is not installed (apt install mosquitto; ./dev run --linked "
              "does it)", file=sys.stderr)
        return 69
    work = args.dir or Path(tempfile.mkdtemp(prefix="tablectl-linked-"))
    work.mkdir(parents=True, exist_ok=True)
    listen = args.listen or f"127.0.0.1:{free_port()}"
    demo = Demo(work, listen, args.pace)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        demo.stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    status = 0
    try:
        password = demo.start()
        assert demo.broker is not None
        print(f"""tablectl, linked: two tables, head office and its console (Ctrl-C stops them all)
  console      http://{listen}/   log in as {OPERATOR}, password {password}
  Mosquitto    127.0.0.1:{demo.broker.port} (TLS, a certificate per client; headoffice/mosquitto/)
  head office  one worker, ledger {work / 'ledger.db'}, pool p1
  tables       {', '.join(TABLES)}: UTH (NSW), simulated players on pool p1; for one of them:
               TABLECTL_RUNTIME_DIR={work / TABLES[0] / 'run'} .venv/bin/tablectl status
  files        {work} (each process's output in NAME.log)""", flush=True)
        while not demo.stopping:
            name = demo.dead()
            if name is not None:
                print(f"linked: {name} exited; stopping the rest. Its last lines:\n"
                      f"{demo.tail(name)}", file=sys.stderr)
                status = 1
                break
            time.sleep(0.3)
    except Exception as exc:
        print(f"linked: {exc}", file=sys.stderr)
        status = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut the stop
        demo.stop()
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
        print("linked: stopped: the tables, head office, the console and Mosquitto"
              + ("" if args.dir is None else f"; files kept in {work}"), flush=True)
    return status


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
