"""Time from exec to READY=1 (sd_notify) of `python -m controller.daemon --simulate`, and its
memory at READY, for one or more source trees run alternately in the same session
(docs/daemon.md "Start-up").

    .venv/bin/python bench/bench_startup.py [--game uth --game paigow] [--runs 7] TREE [TREE ...]

Each TREE is a checkout (e.g. `git archive 38ec508 | tar -x -C /tmp/base`), run with
PYTHONPATH=TREE and the working directory TREE, by --python (default: this interpreter). A tree
at or after issue 31 loads the UTH evaluator's tables from the file its build writes: make it
with `python -m controller.games.uth.tables_file TREE/controller/games/uth/evaluator_tables.bin`
(./dev setup does, for the checkout itself); without it the daemon computes them, as before.
Run it with an image root's interpreter inside a chroot of that root (qemu-user) to see the
start-up as the VM's TCG magnifies it; there the installed program's verification runs too.

Each tree is compiled first (compileall: the image's .pyc files, which pip writes when it
installs, whereas PYTHONDONTWRITEBYTECODE would otherwise have every start compile its source).

`--game uth-linked`: a UTH table with a [link] over TLS to a Mosquitto this bench starts
(tests/mqtt_broker.py; the config is tests/support/link.py's, head office absent: READY comes
before the link connects), so each tree's linked start is measured against the same baseline.

Three figures per start: the wall time, the CPU time (user + system) the daemon and the
children it waited for (the verification) spent until READY, from /proc/PID/stat (on a shared
machine the CPU time hardly moves with the load, the wall time does), and the daemon's resident
memory at READY (VmRSS) and its peak until then (VmHWM), from /proc/PID/status.

The closing lines are ratios measured in this run: each tree's medians to the first TREE's
(the named baseline, e.g. main before a change) for the same game, and with two games, each
game's to the last --game's in the same tree (e.g. UTH to Pai Gow).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LINKED = "uth-linked"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """utime + stime + cutime + cstime of `pid` (its reaped children's too), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / TICK


def memory_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of `pid` in MB (MiB), from /proc/PID/status."""
    found: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) / 1024
    return found["VmRSS"], found["VmHWM"]


Start = tuple[float, float, float, float]  # wall s, CPU s, RSS MB, peak RSS MB at READY


def daemon_args(game: str, tmp: str, broker: Any) -> list[str]:
    if game != LINKED:
        return ["--simulate", "--game", game, "--autoplay", "0", "--quiet", "--state-dir",
                f"{tmp}/state"]
    from tests.support.link import table_toml

    config = Path(tmp) / "T1.toml"
    # Without its [cards] section (carded play by default): trees before it refuse the key.
    text = table_toml("T1", Path(tmp) / "T1", broker)
    config.write_text(text[: text.index("[cards]")])
    return ["--config", str(config), "--simulate", "--autoplay", "0", "--quiet"]


def time_to_ready(tree: Path, game: str, python: str, timeout: float, broker: Any = None
                  ) -> Start:
    with tempfile.TemporaryDirectory() as tmp:
        addr = str(Path(tmp) / "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(addr)
        sock.settimeout(timeout)
        args = daemon_args(game, tmp, broker)
        start = time.perf_counter()
        proc = subprocess.Popen(
            [python, "-m", "controller.daemon", *args],
            env={**os.environ, "NOTIFY_SOCKET": addr, "PYTHONPATH": str(tree)},
            cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            while "READY=1" not in sock.recv(4096).decode():
                pass
            wall = time.perf_counter() - start
            return (wall, cpu_s(proc.pid), *memory_mb(proc.pid))
        finally:
            proc.terminate()
            proc.wait(timeout)
            sock.close()


def _median(starts: list[Start], i: int) -> float:
    return statistics.median(x[i] for x in starts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", type=Path, nargs="+")
    ap.add_argument("--game", choices=["paigow", "uth", LINKED], action="append",
                    help="repeatable (default: paigow); the last is the other games' baseline")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds for one start")
    args = ap.parse_args()
    games: list[str] = args.game or ["paigow"]
    for tree in args.trees:  # .pyc as the image has them (module docstring)
        subprocess.run([args.python, "-m", "compileall", "-q", "controller", "devices", "shared"],
                       cwd=tree, check=True, stdout=subprocess.DEVNULL)
    runs: dict[tuple[str, Path], list[Start]] = {(g, t): [] for g in games for t in args.trees}
    load = [os.getloadavg()[0]]
    with contextlib.ExitStack() as stack:
        broker = stack.enter_context(_broker()) if LINKED in games else None
        for _ in range(args.runs):
            for game in games:  # alternately: the machine's load hits every tree and game alike
                for tree in args.trees:
                    runs[game, tree].append(time_to_ready(tree.resolve(), game, args.python,
                                                          args.timeout, broker))
            load.append(os.getloadavg()[0])
    print(f"{', '.join(games)}: {args.runs} runs each, load average (1 min) {min(load):.1f}-"
          f"{max(load):.1f}")
    for (game, tree), starts in runs.items():
        ts = [x[0] for x in starts]
        cs = [x[1] for x in starts]
        print(f"{game} {tree}: wall median {statistics.median(ts):.2f} s, min {min(ts):.2f}, "
              f"max {max(ts):.2f}  ({' '.join(f'{t:.2f}' for t in ts)});  CPU median "
              f"{statistics.median(cs):.2f} s, min {min(cs):.2f}, max {max(cs):.2f};  RSS at "
              f"READY median {_median(starts, 2):.1f} MB (peak {_median(starts, 3):.1f})")
    base = args.trees[0]
    for game in games:
        for tree in args.trees[1:]:
            print(f"ratio {game} {tree} / {base}: " + _ratios(runs[game, tree], runs[game, base]))
    for tree in args.trees:
        for game in games[:-1]:
            print(f"ratio {tree} {game} / {games[-1]}: "
                  + _ratios(runs[game, tree], runs[games[-1], tree]))


@contextlib.contextmanager
def _broker() -> Iterator[Any]:
    """A Mosquitto with TLS for the linked tables (tests/mqtt_broker.py), stopped at the end."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests import mqtt_broker

    with tempfile.TemporaryDirectory() as tmp:
        broker = mqtt_broker.Broker(Path(tmp) / "broker", mqtt_broker.Pki(Path(tmp) / "pki"))
        broker.start()
        try:
            yield broker
        finally:
            broker.stop()


def _ratios(these: list[Start], baseline: list[Start]) -> str:
    """Medians' ratios: wall, CPU and RSS at READY."""
    return ", ".join(f"{name} x{_median(these, i) / _median(baseline, i):.2f}"
                     for i, name in ((0, "READY wall"), (1, "CPU"), (2, "RSS")))


if __name__ == "__main__":
    main()
