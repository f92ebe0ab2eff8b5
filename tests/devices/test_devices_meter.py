"""SimMeter: what it shows, and the pool never shown decreasing except after a win."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devices.base import DeviceError
from devices.meter import display_command, format_cents
from devices.meter.sim import SimMeter


def run(script) -> SimMeter:  # type: ignore[no-untyped-def]
    meter = SimMeter()

    async def main() -> None:
        await meter.start(lambda e: None)
        await script(meter)

    asyncio.run(main())
    return meter


def test_format_cents() -> None:
    assert format_cents(0) == "$0.00"
    assert format_cents(5) == "$0.05"
    assert format_cents(1234567) == "$12,345.67"


def test_format_cents_puts_the_sign_before_the_dollar_sign() -> None:
    # The meter's formatter is the table's and head office's (issue 30): a negative amount is
    # "-$2.50", never "$-3.50" (divmod rounding towards minus infinity).
    assert format_cents(-250) == "-$2.50"
    assert format_cents(-5) == "-$0.05"
    assert format_cents(-1234567) == "-$12,345.67"


def test_modes_and_history() -> None:
    async def script(m: SimMeter) -> None:
        await m.command("pool", {"amount": 5_000_000})
        await m.command("announce", {"text": "FIRST BOX 5 / CUT TIGER"})
        await m.command("offline", {})
        await m.command("closed", {})

    meter = run(script)
    assert meter.shown == ["$50,000.00", "FIRST BOX 5 / CUT TIGER", "OFFLINE", "CLOSED"]
    assert meter.text == "CLOSED"
    assert meter.health().counters["updates"] == 4


def test_pool_never_decreases_without_a_win() -> None:
    async def script(m: SimMeter) -> None:
        await m.command("pool", {"amount": 1000})
        await m.command("pool", {"amount": 1200})
        await m.command("pool", {"amount": 900})  # refused: keeps $12.00
        await m.command("offline", {})
        await m.command("pool", {"amount": 1100})  # after OFFLINE still not lower

    meter = run(script)
    assert meter.shown == ["$10.00", "$12.00", "$12.00", "OFFLINE", "$12.00"]
    health = meter.health()
    assert health.counters["decrease_refused"] == 2
    assert "without a win" in (health.last_error or "")
    assert meter.pool_shown == 1200


def test_pool_may_decrease_once_after_a_win() -> None:
    async def script(m: SimMeter) -> None:
        await m.command("pool", {"amount": 6_000_000})
        await m.command("win", {"amount": 6_000_000, "box": 3})
        await m.command("pool", {"amount": 5_000_000})  # reset to the seed after the win
        await m.command("pool", {"amount": 4_000_000})  # the win is spent: refused

    meter = run(script)
    assert meter.shown == ["$60,000.00", "WIN $60,000.00 BOX 3", "$50,000.00", "$50,000.00"]
    assert meter.health().counters["decrease_refused"] == 1


def test_pool_after_a_logged_award_elsewhere() -> None:
    async def script(m: SimMeter) -> None:
        await m.command("pool", {"amount": 900_000})
        await m.command("pool", {"amount": 500_000, "after_award": True})

    assert run(script).shown == ["$9,000.00", "$5,000.00"]


def test_bad_arguments_and_unknown_command() -> None:
    async def script(m: SimMeter) -> None:
        with pytest.raises(DeviceError, match="missing argument 'amount'"):
            await m.command("pool", {})
        with pytest.raises(DeviceError, match="amount must be an integer"):
            await m.command("pool", {"amount": 12.5})
        with pytest.raises(DeviceError, match=r"box 9 outside 1..8"):
            await m.command("win", {"amount": 100, "box": 9})
        with pytest.raises(DeviceError, match="empty text"):
            await m.command("announce", {"text": "  "})
        with pytest.raises(DeviceError, match="unknown command 'flash'"):
            await m.command("flash", {})
        await m.command("announce", {"text": "X" * 200})

    meter = run(script)
    assert meter.text == "X" * 80
    assert meter.health().counters["truncated"] == 1


def test_display_effect_to_command() -> None:
    data: dict[str, Any] = {"mode": "win", "text": "WIN", "amount": 500, "box": 2}
    assert display_command(data) == ("win", {"text": "WIN", "amount": 500, "box": 2})
    with pytest.raises(DeviceError):
        display_command({"text": "x"})

    async def script(m: SimMeter) -> None:
        await m.command(*display_command({"mode": "announce", "text": "CUT TIGER"}))

    assert run(script).text == "CUT TIGER"


def test_pending_closed_text_and_text_only_modes() -> None:
    async def script(m: SimMeter) -> None:
        await m.command("pending", {"box": 4})
        await m.command("closed", {"text": "TABLE CLOSED"})
        await m.command("offline", {"pool": "p1"})
        await m.command(*display_command({"mode": "betting", "text": "ROUND 3 PLACE YOUR BETS"}))

    meter = run(script)
    assert meter.shown == [
        "JACKPOT BOX 4 PENDING",
        "TABLE CLOSED",
        "OFFLINE",
        "ROUND 3 PLACE YOUR BETS",
    ]
    assert display_command({"mode": "betting"}) == ("betting", {})  # no text: unknown command


def test_the_meter_takes_display_effects_through_its_own_command() -> None:
    # The daemon hands a display effect over as it is (controller/daemon/effects.py); the
    # mapping of its mode is the meter's (issue 30: no `display_command` in the daemon).
    async def script(m: SimMeter) -> None:
        await m.command("display", {"mode": "win", "text": "WIN", "amount": 500, "box": 2})
        await m.command("display", {"mode": "betting", "text": "ROUND 3 PLACE YOUR BETS"})
        with pytest.raises(DeviceError, match="unknown display mode 'betting'"):
            await m.command("display", {"mode": "betting"})  # no text to announce
        with pytest.raises(DeviceError, match="unknown display mode 'display'"):
            await m.command("display", {"mode": "display", "text": "x"})
        with pytest.raises(DeviceError, match="without a mode"):
            await m.command("display", {"text": "x"})

    meter = run(script)
    assert meter.shown == ["WIN $5.00 BOX 2", "ROUND 3 PLACE YOUR BETS"]
    assert meter.health().counters["commands"] == 5
