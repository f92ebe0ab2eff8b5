"""`python -m devices.pty_sim` on a host (the VM's emulated adapters open its ptys, image/vm/):
the links it makes lead the real driver to the simulator, and SIGTERM ends it cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from devices.base import DeviceEvent as Event
from devices.proto.serial_config import SerialConfig
from devices.shaker.driver import SerialShaker

REPO = Path(__file__).resolve().parents[2]


def test_host_entry_point_serves_the_real_driver_through_its_links(tmp_path: Path) -> None:
    links = {name: tmp_path / f"{name}.pty" for name in ("shaker", "meter")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "devices.pty_sim", "--cut-die",
         "--shaker", str(links["shaker"]), "--meter", str(links["meter"])],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 20
        while not all(p.is_symlink() for p in links.values()):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout
            time.sleep(0.05)
        assert os.readlink(links["shaker"]).startswith("/dev/pts/")

        async def shake() -> list[Event]:
            events: list[Event] = []
            dev = SerialShaker(SerialConfig(port=str(links["shaker"]), baud=115200,
                                            answer_timeout_ms=2000), cut_die=True, poll_s=0)
            await dev.start(events.append)
            try:
                await dev.command("shake")
                while not events:
                    await asyncio.sleep(0.01)
            finally:
                await dev.stop()
            return events

        events = asyncio.run(asyncio.wait_for(shake(), 20))
        assert events[0].kind == "dice.result", events
        assert len(events[0].data["box_dice"]) == 3 and 1 <= events[0].data["cut_die"] <= 6
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0, out
    assert "pty_sim: shaker counters" in out
