"""SimSensors: every simulated touch emits its event; lamps; repeated edges; threads."""

from __future__ import annotations

import asyncio
import threading

import pytest

from devices.base import DeviceError
from devices.base import DeviceEvent as Event
from devices.sensors.sim import SimSensors


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def run(sensors: SimSensors, script) -> list[Event]:  # type: ignore[no-untyped-def]
    async def main() -> list[Event]:
        events: list[Event] = []
        await sensors.start(events.append)
        await script(sensors)
        await settle()
        return events

    return asyncio.run(main())


def test_chung_moves_from_box_to_box() -> None:
    async def script(s: SimSensors) -> None:
        s.place_chung(1)
        s.place_chung(4)
        s.place_chung(4)  # already there: nothing
        s.remove_chung()

    s = SimSensors(boxes=8)
    assert run(s, script) == [
        Event("chung.on", {"box": 1}),
        Event("chung.off", {"box": 1}),
        Event("chung.on", {"box": 4}),
        Event("chung.off", {"box": 4}),
    ]
    assert s.inputs()["chung"] == []


def test_off_bet_keys_and_key_switch() -> None:
    async def script(s: SimSensors) -> None:
        s.key_switch(True)
        s.press_off(3)
        s.release_off(3)
        s.bet(2, True)
        s.bet(2, False)
        s.press_key("shake")
        s.press_key("decision", box=2, action="play", multiple=4)
        s.key_switch(False)

    assert run(SimSensors(boxes=7), script) == [
        Event("table.open", {}),
        Event("off.pressed", {"box": 3}),
        Event("off.released", {"box": 3}),
        Event("bet.on", {"box": 2}),
        Event("bet.off", {"box": 2}),
        Event("dealer.shake", {}),
        Event("dealer.decision", {"box": 2, "action": "play", "multiple": 4}),
        Event("table.close", {}),
    ]


def test_repeated_edges_are_dropped_and_counted() -> None:
    async def script(s: SimSensors) -> None:
        s.bet(1, True)
        s.bet(1, True)
        s.press_off(5)
        s.press_off(5)
        s.key_switch(True)
        s.key_switch(True)

    s = SimSensors(boxes=7)
    events = run(s, script)
    assert [e.kind for e in events] == ["bet.on", "off.pressed", "table.open"]
    health = s.health()
    assert health.counters["repeated_edges"] == 3
    assert health.counters["inputs"] == 3 and health.counters["events"] == 3
    assert s.inputs() == {"chung": [], "off": [5], "bet": [1], "table_open": True}


def test_input_from_another_thread_goes_through_the_loop() -> None:
    async def script(s: SimSensors) -> None:
        seen: list[bool] = []

        def callback() -> None:  # a gpiozero callback thread
            s.bet(3, True)
            seen.append(True)

        thread = threading.Thread(target=callback)
        thread.start()
        await asyncio.to_thread(thread.join)
        assert seen

    assert run(SimSensors(boxes=7), script) == [Event("bet.on", {"box": 3})]


def test_bad_box_and_bad_action() -> None:
    async def script(s: SimSensors) -> None:
        with pytest.raises(DeviceError, match=r"box 9 outside 1..8"):
            s.place_chung(9)
        with pytest.raises(DeviceError, match="bad keypad action"):
            s.press_key("New Round")

    run(SimSensors(boxes=8), script)

    async def wired(s: SimSensors) -> None:
        s.press_key("confirm")
        with pytest.raises(DeviceError, match="no keypad button 'shake'"):
            s.press_key("shake")

    assert run(SimSensors(boxes=8, keypad=["confirm"]), wired) == [Event("dealer.confirm", {})]


def test_lamps_command() -> None:
    async def script(s: SimSensors) -> None:
        await s.command("lamps", {"box": 2, "state": "bet"})
        await s.command("lamps", {"state": "locked"})
        await s.command("lamps", {"box": 5, "state": "win"})
        with pytest.raises(DeviceError, match="state must be one of idle, bet, locked, win"):
            await s.command("lamps", {"box": 1, "state": "blink"})
        with pytest.raises(DeviceError, match=r"box 8 outside 1..7"):
            await s.command("lamps", {"box": 8, "state": "bet"})
        with pytest.raises(DeviceError, match="unknown command 'set'"):
            await s.command("set", {})

    s = SimSensors(boxes=7)
    assert run(s, script) == []
    assert s.lamps == {
        1: "locked",
        2: "locked",
        3: "locked",
        4: "locked",
        5: "win",
        6: "locked",
        7: "locked",
    }
    assert s.lamp_history[0] == (2, "bet")
    assert s.health().counters["lamp_writes"] == 3


def test_not_started_and_selftest() -> None:
    s = SimSensors(boxes=8)
    with pytest.raises(DeviceError, match="not started"):
        s.press_off(1)

    async def script(s: SimSensors) -> None:
        s.place_chung(2)
        await settle()
        result = await s.selftest()
        assert result["ok"] and result["inputs"]["chung"] == [2]

    run(s, script)
