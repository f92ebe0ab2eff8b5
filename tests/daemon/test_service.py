"""TableService in-process: the watchdog stops when the loop stalls; effects and journal order."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from controller.config.machine import build_machine
from controller.daemon.build import build_devices, simulation_config
from controller.daemon.service import STALL_S, TableService
from controller.journal import verify_dir
from controller.rounds.base import Event, Now


class StallingMachine:
    """The Pai Gow machine, but `stall` blocks the loop the way a hung call would."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.game = inner.game

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def step(self, state: Any, event: Event, now: Now) -> Any:
        if event.kind == "stall":
            time.sleep(1.0)
        return self.inner.step(state, event, now)


def make_service(tmp_path: Path, machine: Any = None) -> TableService:
    cfg = simulation_config("paigow", "nsw", tmp_path / "state", tmp_path / "run")
    return TableService(
        cfg,
        machine or build_machine(cfg),
        build_devices(cfg, None),
        logging.getLogger("test"),
    )


def test_consumer_stuck_behind_an_old_event_is_unhealthy(tmp_path: Path) -> None:
    svc = make_service(tmp_path)
    assert svc._healthy()
    svc.queue.put_nowait((0.0, Event("table.open")))
    svc._last_progress = time.monotonic() - STALL_S - 1
    assert not svc._healthy()
    svc._last_progress = time.monotonic()
    assert svc._healthy()


def test_a_stalled_loop_sends_no_watchdog_pings(tmp_path: Path, monkeypatch) -> None:
    addr = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(addr)
    sock.setblocking(False)
    monkeypatch.setenv("NOTIFY_SOCKET", addr)
    monkeypatch.setenv("WATCHDOG_USEC", "100000")  # ping every 50 ms
    cfg = simulation_config("paigow", "nsw", tmp_path / "state", tmp_path / "run")
    svc = make_service(tmp_path, StallingMachine(build_machine(cfg)))

    def pings() -> list[float]:
        seen = []
        while True:
            try:
                if b"WATCHDOG=1" in sock.recv(4096):
                    seen.append(time.monotonic())
            except BlockingIOError:
                return seen

    async def scenario() -> tuple[list[float], float, float]:
        runner = asyncio.create_task(svc.run())
        # Until it is READY and pinging: 0.5 s was not always enough beside a second test worker
        # on a loaded machine (the start had not reached READY: no ping before the stall).
        before: list[float] = []
        deadline = time.monotonic() + 60
        while not before and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            before += pings()
        stall_start = time.monotonic()
        svc.emit(Event("stall"))
        await asyncio.sleep(0.01)  # the consumer takes it and blocks the loop for 1 s
        stall_end = time.monotonic()
        await asyncio.sleep(0.3)
        after = pings()
        svc.stop()
        await runner
        return before + after, stall_start, stall_end

    times, start, end = asyncio.run(scenario())
    sock.close()
    assert any(t < start for t in times), "pings before the stall"
    # No ping was sent while the loop was blocked (datagrams carry no timestamps, so each ping
    # is timed when read: none may be read, i.e. sent, between stall start + 1 interval and end).
    during = [t for t in times if start + 0.1 < t < end - 0.05]
    assert during == []
    assert end - start >= 0.95  # the loop really was blocked
    assert verify_dir(tmp_path / "state").ok


def test_effects_run_after_the_event_is_journaled(tmp_path: Path) -> None:
    svc = make_service(tmp_path)
    seen: list[int] = []

    async def scenario() -> None:
        runner = asyncio.create_task(svc.run())
        await asyncio.sleep(0.3)
        assert svc.journal is not None
        original = svc.effects.run

        async def spy(effect: Any, **about: Any) -> None:  # round_no, source, utc
            seen.append(svc.journal.last_seq)  # what is durable when the effect runs
            await original(effect, **about)

        svc.effects.run = spy  # type: ignore[method-assign]
        seq = await svc.process(Event("table.open"))
        assert seq is not None and seen and all(s >= seq for s in seen)
        svc.stop()
        await runner

    asyncio.run(scenario())


@pytest.mark.parametrize("bad", [Event("chung.on", {"box": "nine"}), Event("dealer.result", {})])
def test_bad_input_is_journaled_answered_and_survived(tmp_path: Path, bad: Event) -> None:
    svc = make_service(tmp_path)

    async def scenario() -> None:
        runner = asyncio.create_task(svc.run())
        await asyncio.sleep(0.3)
        seq = await svc.process(bad)
        assert seq is not None
        assert svc.recent[-1]["effects"], "a refusal is answered with a log/alarm effect"
        assert svc.out_of_service is None
        svc.stop()
        await runner

    asyncio.run(scenario())


def test_an_entry_the_journal_refuses_takes_the_table_out_of_service(tmp_path: Path) -> None:
    # The journal's EntryRefused (a JournalError, no longer caught as a bare ValueError):
    # nothing acted on, the table out of service with the journal's reason.
    svc = make_service(tmp_path)

    async def scenario() -> None:
        runner = asyncio.create_task(svc.run())
        await asyncio.sleep(0.3)
        assert svc.journal is not None
        last = svc.journal.last_seq
        seq = await svc.process(Event("table.open", {"x": float("nan")}))
        assert seq is None and svc.journal.last_seq == last
        assert "journal write failed" in (svc.out_of_service or "")
        assert "not JSON" in (svc.out_of_service or "")
        svc.stop()
        await runner

    asyncio.run(scenario())
