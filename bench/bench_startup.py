"""Time from exec to READY=1 (sd_notify) of `python -m controller.daemon --simulate`, for one or
more source trees run alternately in the same session (docs/daemon.md "Start-up").

    .venv/bin/python bench/bench_startup.py [--game paigow] [--runs 7] TREE [TREE ...]

Each TREE is a checkout (e.g. `git archive 38ec508 | tar -x -C /tmp/base`), run with
PYTHONPATH=TREE and the working directory TREE, by --python (default: this interpreter). Run it
with an image root's interpreter inside a chroot of that root (qemu-user) to see the start-up as
the VM's TCG magnifies it; there the installed program's verification runs too.

Two figures per start: the wall time, and the CPU time (user + system) the daemon and the
children it waited for (the verification) spent until READY, from /proc/PID/stat: on a shared
machine the CPU time hardly moves with the load, the wall time does.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """utime + stime + cutime + cstime of `pid` (its reaped children's too), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / TICK


def time_to_ready(tree: Path, game: str, python: str, timeout: float) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        addr = str(Path(tmp) / "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(addr)
        sock.settimeout(timeout)
        start = time.perf_counter()
        proc = subprocess.Popen(
            [python, "-m", "controller.daemon", "--simulate", "--game", game, "--autoplay", "0",
             "--quiet", "--state-dir", f"{tmp}/state"],
            env={**os.environ, "NOTIFY_SOCKET": addr, "PYTHONPATH": str(tree)},
            cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            while "READY=1" not in sock.recv(4096).decode():
                pass
            return time.perf_counter() - start, cpu_s(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout)
            sock.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", type=Path, nargs="+")
    ap.add_argument("--game", choices=["paigow", "uth"], default="paigow")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds for one start")
    args = ap.parse_args()
    times: dict[Path, list[float]] = {t: [] for t in args.trees}
    cpu: dict[Path, list[float]] = {t: [] for t in args.trees}
    load = [os.getloadavg()[0]]
    for _ in range(args.runs):
        for tree in args.trees:  # alternately: the machine's load hits every tree alike
            wall, used = time_to_ready(tree.resolve(), args.game, args.python, args.timeout)
            times[tree].append(wall)
            cpu[tree].append(used)
        load.append(os.getloadavg()[0])
    print(f"{args.game}, {args.runs} runs each, load average (1 min) {min(load):.1f}-"
          f"{max(load):.1f}")
    for tree, ts in times.items():
        cs = cpu[tree]
        print(f"{tree}: wall median {statistics.median(ts):.2f} s, min {min(ts):.2f}, "
              f"max {max(ts):.2f}  ({' '.join(f'{t:.2f}' for t in ts)});  CPU median "
              f"{statistics.median(cs):.2f} s, min {min(cs):.2f}, max {max(cs):.2f}")


if __name__ == "__main__":
    main()
