"""Each head-office worker in a CPU-limited cgroup of its own: `bench.fleet.run --worker-cpu F`.

On a machine whose cores the broker, the load generators and the meters already fill, a second
worker only splits the same CPU; with every worker held to F of a core (CFS bandwidth control:
F × 100 ms of CPU per 100 ms period), N workers get N × F cores while the rest of the fleet has
the remainder, so whether the workers' rates add up shows as long as each worker sits at its
quota (a worker below it was waiting for something: the run then says nothing about scaling).

cgroup v1's `cpu` controller (`/sys/fs/cgroup/cpu`: cpu.cfs_period_us, cpu.cfs_quota_us, and
cpu.shares 10× the default) is tried first, then any cgroup v2 hierarchy whose root offers
`cpu` (cpu.max, cpu.weight 1000). A worker joins its
group before it runs a line of its own: it is started as `sh -c 'echo $$ > cgroup.procs; exec
worker...'`, so every thread it later starts is in the group. The groups are removed on exit.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

PERIOD_US = 100_000
V1_CPU = Path("/sys/fs/cgroup/cpu")


class QuotaUnavailable(RuntimeError):
    """No writable cgroup with a cpu controller on this machine."""


@dataclass
class CpuGroup:
    path: Path
    version: int  # 1 or 2
    root: Path  # the hierarchy's mount point

    def holds(self, pid: int) -> bool:
        """Every thread of `pid` is in this group (/proc/PID/task/*/cgroup)."""
        want = "/" + str(self.path.relative_to(self.root))
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
        for task in tasks:
            lines = (task / "cgroup").read_text().splitlines()
            # v1: "N:cpu[,cpuacct]:/path"; v2: "0::/path"
            found = [line.split(":", 2)[2] for line in lines
                     if (self.version == 1 and "cpu" in line.split(":")[1].split(","))
                     or (self.version == 2 and line.startswith("0::"))]
            if found != [want]:
                return False
        return bool(tasks)

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` started inside this group: the shell writes its own pid, then execs (the same
        pid), so the worker never runs outside it."""
        procs = shlex.quote(str(self.path / "cgroup.procs"))
        return ["sh", "-c", f'echo $$ > {procs} && exec "$@"', "cpu-quota", *argv]

    def throttling(self) -> tuple[int, int]:
        """(periods with the group runnable, periods it ran out of quota in), so far."""
        stat = dict(line.split() for line in (self.path / "cpu.stat").read_text().splitlines()
                    if line.strip())
        return int(stat.get("nr_periods", 0)), int(stat.get("nr_throttled", 0))


def _v2_roots() -> list[Path]:
    roots = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/mounts").read_text().splitlines():
            parts = line.split()
            if len(parts) > 2 and parts[2] == "cgroup2":
                roots.append(Path(parts[1]))
    return roots


def _find() -> tuple[Path, int]:
    """A writable hierarchy with the cpu controller: (its root, version)."""
    tried = []
    if (V1_CPU / "cpu.cfs_quota_us").exists():
        if os.access(V1_CPU, os.W_OK):
            return V1_CPU, 1
        tried.append(f"{V1_CPU} (cgroup v1 cpu) is not writable by uid {os.getuid()}")
    else:
        tried.append(f"{V1_CPU}: no cgroup v1 cpu controller mounted")
    for root in _v2_roots():
        try:
            offered = (root / "cgroup.controllers").read_text().split()
        except OSError:
            offered = []
        if "cpu" not in offered:
            tried.append(f"{root} (cgroup v2) offers no cpu controller"
                         " (it may be bound to a v1 hierarchy)")
        elif not os.access(root, os.W_OK):
            tried.append(f"{root} (cgroup v2) is not writable by uid {os.getuid()}")
        else:
            return root, 2
    raise QuotaUnavailable("--worker-cpu needs a writable cgroup with the cpu controller"
                           " (run as root on a machine that has one): " + "; ".join(tried))


def unavailable_reason() -> str | None:
    """None where --worker-cpu can work here, else why not."""
    try:
        _find()
    except QuotaUnavailable as e:
        return str(e)
    return None


@dataclass
class CpuQuotas:
    """Makes groups of `fraction` of a core each; `close` removes them (the processes in them
    must have ended: a cgroup with a live member cannot be removed)."""

    fraction: float
    tag: str
    groups: list[CpuGroup] = field(default_factory=list)
    _enabled_v2: Path | None = None

    def __post_init__(self) -> None:
        if not 0.01 <= self.fraction <= (os.cpu_count() or 1):
            raise QuotaUnavailable(f"--worker-cpu {self.fraction}: a fraction of a core between"
                                   f" 0.01 and {os.cpu_count()}")
        self.root, self.version = _find()

    def new(self, name: str) -> CpuGroup:
        path = self.root / f"tablectl-bench-{self.tag}-{name}"
        quota = round(self.fraction * PERIOD_US)
        if self.version == 2:
            control = self.root / "cgroup.subtree_control"
            if "cpu" not in control.read_text().split():
                control.write_text("+cpu")  # undone in close()
                self._enabled_v2 = control
        try:
            path.mkdir()
        except OSError as e:
            raise QuotaUnavailable(f"cannot make the cgroup {path}: {e}") from e
        group = CpuGroup(path, self.version, self.root)
        self.groups.append(group)
        # The quota caps the worker; the weight (10× a plain process's) lets it have that
        # much first when other processes (other people's, on a shared machine) want the
        # cores too: F of a core of its own, as far as the scheduler can give it.
        if self.version == 1:
            (path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (path / "cpu.cfs_quota_us").write_text(str(quota))
            (path / "cpu.shares").write_text(str(10 * 1024))
        else:
            (path / "cpu.max").write_text(f"{quota} {PERIOD_US}")
            (path / "cpu.weight").write_text("1000")
        return group

    def close(self) -> None:
        left = []
        for group in self.groups:
            # A process just reaped can stay a member for a moment: retry for a second.
            for _ in range(50):
                try:
                    group.path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
            else:
                left.append(str(group.path))
        self.groups.clear()
        if self._enabled_v2 is not None:
            # Another child may use the controller meanwhile: then it stays on (EBUSY).
            with contextlib.suppress(OSError):
                self._enabled_v2.write_text("-cpu")
            self._enabled_v2 = None
        if left:
            raise RuntimeError(f"cgroups left behind (a process still in them?): {left}")

    def __enter__(self) -> CpuQuotas:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def verdict(fraction: float, cores: list[float], throttled: list[float]) -> str:
    """Whether the run says anything: every worker used ≥ 90 % of its quota over the burst.
    One that did not was waiting (for the broker, the publishers, the database, a lock), so
    its rate was not its quota's."""
    # cores come rounded to 0.01: half of that is the benefit of the doubt
    low = [f"headoffice{w} {c:.2f}" for w, c in enumerate(cores)
           if c + 0.005 < 0.9 * fraction]
    if not low:
        return (f"at quota (each >= 0.9 x {fraction:g} core; throttled in {_pct(throttled)}"
                " of periods)")
    return (f"NOT at quota ({', '.join(low)} of {fraction:g}; throttled in {_pct(throttled)} of"
            " periods): the workers waited for something else, this run says nothing about"
            " their scaling")


def _pct(values: list[float]) -> str:
    return "/".join(f"{v:.0%}" for v in values)
