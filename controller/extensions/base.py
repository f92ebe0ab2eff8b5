"""What an extension may see of the table (`Table`) and what the daemon asks of an extension
(`Extension`). The daemon's `TableService` satisfies `Table`; an extension never reaches past it
(into the round machine or the service's internals)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from controller.control import Refused

if TYPE_CHECKING:
    from controller.config import TableConfig
    from controller.events import Event
    from controller.journal import Journal
    from devices.base import Device

Watcher = asyncio.Queue[dict[str, Any] | None]
T = TypeVar("T")

STARTING = "tablectld is still starting: try again in a moment"


def started(table: T | None) -> T:
    """The table an extension was started with; Refused (an error reply, not a crash) while it
    is None: the control socket answers before the extensions have started."""
    if table is None:
        raise Refused(STARTING)
    return table


def ready(table: Table | None) -> Table:
    """`started`, and past the daemon's start-up self-test (READY=1): a service test that took
    a device then (a loopback lets go of its port) would take it from under that self-test."""
    t = started(table)
    if not t.ready:
        raise Refused(STARTING)
    return t


class Table(Protocol):
    """The running table as an extension sees it."""

    @property
    def ready(self) -> bool:
        """READY=1 sent: the journal replayed, the devices started and self-tested."""
        ...

    @property
    def cfg(self) -> TableConfig: ...

    @property
    def log(self) -> logging.Logger: ...

    @property
    def devices(self) -> Mapping[str, Device]: ...

    @property
    def journal(self) -> Journal | None:
        """None when the journal could not be opened (the table is then out of service)."""
        ...

    @property
    def out_of_service(self) -> str | None:
        """Why the table does not play, or None while it does."""
        ...

    def game_status(self) -> dict[str, Any]:
        """The round machine's status of the current state ({} before the journal replayed):
        round, state, and for UTH the jackpot's link state and pool with its pending hits."""
        ...

    def emit(self, event: Event) -> None:
        """Queue an event for the round machine (call on the loop)."""
        ...

    def subscribe(self) -> Watcher:
        """A queue of every processed event with its effects; None when it fell behind."""
        ...

    def unsubscribe(self, q: Watcher) -> None: ...

    def go_out_of_service(self, reason: str, code: str = "E501") -> None:
        """Stop the table playing; `code` names why (controller/codes.py)."""
        ...

    def hold(self, reason: str | None) -> None:
        """Hold the dealer's keys (they do nothing; devices, link and ticks go on), saying
        why; None releases them."""
        ...


class Extension(Protocol):
    """A part of the daemon beside the round machine (the head-office link, software
    verification, device test commands): started after the journal and devices, stopped before
    them. It may emit events (`table.emit`), read the journal, watch processed events
    (`table.subscribe()`), add control-socket commands and take the table out of service.
    The tasks it creates in `start()` are supervised: one that raises is logged CRITICAL with
    its traceback and the extension is stopped and started again (daemon/supervisor.py);
    a control command's peer is `control.current_peer()`. An extension may also have a
    `begin()`, called before the journal opens, for work its `start()` then awaits (software
    verification's child process)."""

    name: str

    async def start(self, table: Table) -> None: ...

    async def stop(self) -> None: ...

    def handlers(self) -> dict[str, Any]:
        """Control-socket commands this extension answers: {cmd: async handler(args)}."""
        ...

    def status(self) -> dict[str, Any]:
        """Shown by `tablectl status` under the extension's name."""
        ...
