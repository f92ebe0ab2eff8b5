"""Before the extensions have started, the control socket already answers (docs/daemon.md): a
device or service-menu command then gets the one "still starting" refusal (an error reply), from
the one guard in controller/extensions/base.py, never an AttributeError on a missing table."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controller.control import Refused
from controller.extensions.base import STARTING, started
from controller.extensions.devices import DevicesExtension
from controller.extensions.service_menu import ServiceMenu

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("device_list", {}),
    ("device_test", {"device": "shaker"}),
    ("device_lamp_walk", {}),
    ("device_buttons", {}),
    ("device_loopback", {"device": "shaker"}),
]


@pytest.mark.parametrize(("cmd", "args"), CALLS, ids=[c for c, _ in CALLS])
def test_a_command_before_start_is_refused(cmd: str, args: dict[str, Any]) -> None:
    handlers = {**DevicesExtension().handlers(), **ServiceMenu().handlers()}
    with pytest.raises(Refused) as refused:
        asyncio.run(handlers[cmd](args))
    assert str(refused.value) == STARTING


def test_started_passes_the_table_through() -> None:
    table = object()
    assert started(table) is table
    with pytest.raises(Refused, match="still starting"):
        started(None)


class _Table:
    """What the service menu reads of a table: its devices, its phase, and READY."""

    def __init__(self) -> None:
        self.ready = False
        self.devices: dict[str, Any] = {}

    def game_status(self) -> dict[str, Any]:
        return {"state": "closed"}


SERVICE_CALLS = [c for c in CALLS if c[0] in ServiceMenu().handlers()]


@pytest.mark.parametrize(("cmd", "args"), SERVICE_CALLS, ids=[c for c, _ in SERVICE_CALLS])
def test_a_service_test_waits_for_the_start_up_self_test(cmd: str, args: dict[str, Any]) -> None:
    # Between the extensions' start and READY=1 the daemon self-tests its devices: a loopback
    # then let go of the shaker's port under that self-test (and the daemon fell over it).
    menu, table = ServiceMenu(), _Table()

    async def ask() -> str:
        await menu.start(table)  # type: ignore[arg-type]
        try:
            await menu.handlers()[cmd](args)
        except Refused as exc:
            return str(exc)
        return "answered"

    assert asyncio.run(ask()) == STARTING
    table.ready = True
    assert asyncio.run(ask()) != STARTING  # past the guard: the test's own answer
