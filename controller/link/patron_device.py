"""`PatronDevice`: the round machine's questions about Player Cards, asked of head office.

The machine's `patron` device effects (`card_check`, `card_reserve`; controller/rounds/cards.py)
become requests on `tablectl/v1/table/{table}/patron` (shared/link/patron.py); head office's
answer on `tablectl/v1/ho/table/{table}/patron` comes back to the machine as `ho.card`. No answer
within `[cards] answer_s` (the link down, head office silent) is `ho.card {offline: true}`: the
machine decides what that means (strict: the wager is refused, UTH 13.1). A command never waits
for the answer (the effect runner would stall the table): a timer per request does.

A device (devices/base.py) so the daemon's effect runner needs nothing new; the head-office link
(controller/link/extension.py) hands it the connection's publish and each answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, ClassVar

from controller.events import Kind
from devices.base import Device, DeviceError
from shared.clock import utc_now
from shared.link import contract, patron

Publish = Callable[[str, bytes], Awaitable[None]]
log = logging.getLogger("tablectl.patron")


class PatronDevice(Device):
    COMMANDS: ClassVar[tuple[str, ...]] = patron.REQUEST_TYPES
    # Its answers are the link's `ho.card` (controller/events.py: source link), not events of a
    # device: none is listed here.
    EVENTS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, table_id: str, answer_s: float, name: str = "patron") -> None:
        super().__init__(name)
        self.table_id = table_id
        self.answer_s = answer_s
        self.publish: Publish | None = None  # set by the link while it is connected
        self._waiting: dict[str, tuple[str, asyncio.Task[None]]] = {}  # wire req -> (req, timer)

    async def _close(self) -> None:
        for _, timer in self._waiting.values():
            timer.cancel()
        self._waiting.clear()

    async def _cmd_card_check(self, args: Mapping[str, Any]) -> None:
        await self._ask("card_check", args)

    async def _cmd_card_reserve(self, args: Mapping[str, Any]) -> None:
        await self._ask("card_reserve", args)

    async def _ask(self, type_: str, args: Mapping[str, Any]) -> None:
        req, card = str(args.get("req", "")), args.get("card")
        wire = f"{self.table_id}/{req}"
        if not isinstance(card, str) or not patron.CARD_ID.fullmatch(card) or (
                not patron.REQ_ID.fullmatch(wire)):
            raise DeviceError(f"patron.{type_}: bad card or req {args!r}")
        old = self._waiting.pop(wire, None)
        if old is not None:
            old[1].cancel()  # a re-issued request (a restart): one timer
        timer = asyncio.get_running_loop().create_task(self._expire(wire, req, card))
        self._waiting[wire] = (req, timer)
        body = patron.card_request(self.table_id, wire, type_, card, round=args.get("round"),
                                   amount=args.get("amount"), utc=utc_now())
        publish = self.publish
        if publish is None:
            self.counters["asked_offline"] += 1
            return  # the link is down: the timer answers "offline"
        try:
            await publish(patron.request_topic(self.table_id), contract.dumps(body))
            self.counters["asked"] += 1
        except Exception as exc:  # the link's trouble: the timer answers "offline"
            self.counters["publish_failures"] += 1
            self.last_error = f"cannot ask head office: {exc}"

    async def _expire(self, wire: str, req: str, card: str) -> None:
        await asyncio.sleep(self.answer_s)
        if self._waiting.pop(wire, None) is not None:
            self.counters["unanswered"] += 1
            self._post(Kind.HO_CARD, {"req": req, "card": card, "offline": True})

    def on_answer(self, payload: bytes) -> None:
        """Head office's answer (the link calls it); SchemaError for a bad one."""
        data = patron.parse_card_answer(payload, self.table_id)
        waiting = self._waiting.pop(data["req"], None)
        if waiting is None:
            # After its timer (the machine heard "offline") or a redelivery: still the machine's
            # to judge (a wager taken under the offline allowance waits for it; UTH 11.17).
            self.counters["answers_late"] += 1
            req = data["req"].removeprefix(f"{self.table_id}/")
        else:
            req, timer = waiting
            timer.cancel()
            self.counters["answers"] += 1
        keys = ("card", "valid", "reason", "limit", "remaining", "restricted", "granted")
        self._post(Kind.HO_CARD, {"req": req, **{k: data[k] for k in keys if k in data}})

    async def selftest(self) -> dict[str, Any]:
        return {"ok": True, "link": self.publish is not None, "waiting": len(self._waiting)}


def _device(table: Any) -> PatronDevice | None:
    device = None if table is None else table.devices.get("patron")
    return device if isinstance(device, PatronDevice) else None


@contextlib.contextmanager
def cards_on(table: Any, publish: Publish) -> Iterator[None]:
    """While the link's session lasts, the table's card requests go out on it."""
    device = _device(table)
    if device is not None:
        device.publish = publish
    try:
        yield
    finally:
        if device is not None:
            device.publish = None


def card_answer(table: Any, payload: bytes) -> None:
    """Head office's answer on the table's patron topic, to its PatronDevice."""
    device = _device(table)
    if device is None:
        raise contract.SchemaError("a Player Card answer, but this table asks none")
    device.on_answer(payload)
