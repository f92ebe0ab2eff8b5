"""The fleet benchmark (bench/fleet/run.py) end to end at a tiny size, so that it keeps
working: every increment of the burst is acknowledged, every meter sees every sample, and it
prints its measurements beside Mosquitto's own rate. No speed is asserted here (the numbers
are the benchmark's to print, docs/headoffice.md)."""

from __future__ import annotations

import pstats
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.fleet import cpuquota
from tests import mqtt_broker

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    not mqtt_broker.available() or shutil.which("mosquitto_pub") is None,
    reason="mosquitto and mosquitto-clients (./dev installs them) are needed")


def test_the_fleet_benchmark_runs_and_reports(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bench.fleet.run", "--tables", "6", "--procs", "2",
         "--samples", "4", "--increments", "300", "--raw", "500",
         "--profile-worker", str(tmp_path / "prof")],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = dict(line.strip().split(": ", 1) for line in out.stdout.splitlines()
                  if ": " in line)
    assert report["tables"] == "6"
    assert report["increments"] == str(300 // 6 * 6)
    for key in ("latency_p50_ms", "latency_p99_ms", "increments_per_s",
                "mosquitto_raw_publish_per_s", "python_client_raw_per_s",
                "ledger_alone_increments_per_s"):
        assert float(report[key]) > 0, key
    assert float(report["latency_p50_ms"]) <= float(report["latency_p99_ms"])
    # the ledger's mean transaction: at least one message, at most batch_max (500)
    assert 1 <= float(report["messages_per_transaction"]) <= 500
    assert "publishers(6)" in report["cpu_cores_burst_phase"]
    # --profile-worker: the worker's profile, written when the bench stopped it, holds every
    # increment it parsed.
    [profile] = tmp_path.glob("prof.*")
    calls = {fn[2]: stat[1] for fn, stat in pstats.Stats(str(profile)).stats.items()}  # type: ignore[attr-defined]
    assert calls.get("parse_outbox_messages", 0) >= 300  # one call per message (no packs)


def test_the_ledger_alone_applies_every_increment_once() -> None:
    # bench/fleet/ledger_alone.py: what callgrind counts (docs/headoffice.md) is real work
    def run(*extra: str) -> dict[str, str]:
        out = subprocess.run(
            [sys.executable, "-m", "bench.fleet.ledger_alone", "--increments", "120",
             "--batch", "50", "--tables", "7", *extra],
            cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
        assert out.returncode == 0, out.stderr[-3000:]
        return dict(line.split(": ", 1) for line in out.stdout.splitlines())

    applied = run()
    assert applied["increments_applied"] == "120"
    assert applied["pool_wagers_in"] == str(120 * 100)  # each increment's wager, once
    built = run("--build-only")
    assert built["increments_applied"] == "0" and built["pool_wagers_in"] == "0"


@pytest.mark.skipif(cpuquota.unavailable_reason() is not None,
                    reason=f"--worker-cpu needs cgroups: {cpuquota.unavailable_reason()}")
def test_worker_cpu_holds_each_worker_in_a_quota_cgroup_of_its_own() -> None:
    # bench.fleet.run --worker-cpu: both workers ran, every thread of each, in a cgroup held to
    # 0.5 of a core; the run reports their cores, throttling and verdict; the cgroups are gone.
    def ours() -> set[str]:
        return {p.name for p in cpuquota.V1_CPU.glob("tablectl-bench-*")} if \
            cpuquota.V1_CPU.exists() else set()

    before = ours()
    out = subprocess.run(
        [sys.executable, "-m", "bench.fleet.run", "--tables", "6", "--procs", "2",
         "--samples", "4", "--increments", "300", "--raw", "500", "--workers", "2",
         "--worker-cpu", "0.5"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = dict(line.strip().split(": ", 1) for line in out.stdout.splitlines()
                  if ": " in line)
    assert report["headoffice_workers"] == "2"
    assert report["worker_cpu_quota"] == "0.5"
    assert report["workers_in_their_cgroups"] == "True"
    assert len(report["worker_throttled_periods"].strip("[]").split(",")) == 2
    assert "at quota" in report["workers_at_quota"]  # a verdict either way
    assert float(report["increments_per_worker_core"]) > 0
    assert ours() == before


def test_worker_cpu_out_of_range_is_refused_with_a_reason() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bench.fleet.run", "--worker-cpu", "999"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 2
    assert "--worker-cpu 999.0: a fraction of a core" in out.stderr
