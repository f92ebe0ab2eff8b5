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
