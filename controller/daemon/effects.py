"""Carrying out the round machine's effects once their event is durable: device commands, the
meter's display, round results, alarms and log lines. A device that fails is logged and
counted; the table goes on (the machine decides what a missing answer means)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from controller.daemon.attention import Alarms
from controller.daemon.stats import Stats
from controller.events import EffectKind
from controller.logs import event as log_event
from controller.rounds.base import Effect
from devices.base import Device, DeviceError


class Effects:
    def __init__(
        self,
        devices: Mapping[str, Device],
        log: logging.Logger,
        stats: Stats,
        on_round: Callable[[dict[str, Any]], None],
    ) -> None:
        self.devices = devices
        self.log = log
        self.stats = stats
        self.on_round = on_round  # each round's result, after it is counted and logged
        self.alarms = Alarms()  # the active ones, for `tablectl status` (attention.py)

    async def run(self, effect: Effect, *, round_no: int | None = None, source: str = "",
                  utc: str = "") -> None:
        """Carry out `effect`. `round_no`: the round of the event that made it; `source`: that
        event's kind (`shuffler.fault`): an alarm's log line carries both as ROUND= and
        DEVICE=, so `tablectl logs --round N` and `--device shuffler` find it."""
        data = dict(effect.data)
        try:
            if effect.kind == EffectKind.DEVICE:
                await self._device(str(data.get("device"))).command(
                    str(data.get("command")), data.get("args") or {}
                )
            elif effect.kind == EffectKind.DISPLAY:
                if "meter" in self.devices:  # the meter maps the effect (its `display` command)
                    await self.devices["meter"].command("display", data)
            elif effect.kind == EffectKind.ROUND:
                self.stats.rounds[str(data.get("status"))] += 1
                log_event(
                    self.log, logging.INFO, f"round {data.get('number')} {data.get('status')}",
                    round=data.get("number"), status=data.get("status"),
                )
                self.alarms.round_ended(data.get("number"))
                self.on_round(data)
            elif effect.kind == EffectKind.ALARM:
                level = (
                    logging.CRITICAL if data.get("severity") == "surveillance" else logging.WARNING
                )
                code = "E602" if level == logging.CRITICAL else "E601"
                about: dict[str, Any] = {} if round_no is None else {"round": round_no}
                device = source.split(".")[0]
                if device in self.devices:
                    about["device"] = device
                # A refused action's alarm answers whoever acted (`tablectl dealer` prints it);
                # it leaves nothing open, so it is not an active alarm.
                times = 1 if data.get("refused") else self.alarms.raised(
                    data, round_no, utc, about.get("device"),
                    device_ok=bool(about.get("device") is None
                                   or self.devices[device].status().get("ok")))
                if times > 1:
                    # The same alarm again in the same round (a device that stays unplugged
                    # fails each retry): one warning is enough; the repeats are counted
                    # (`tablectl status`) and logged at info.
                    log_event(self.log, logging.INFO,
                              f"alarm repeated ({times} times): {data.get('text')}",
                              **{**_scalars(data), **about})
                else:
                    log_event(self.log, level, f"ALARM {data.get('text')}",
                              **{**_scalars(data), **about}, code=code)
            elif effect.kind == EffectKind.LOG:
                log_event(self.log, logging.INFO, str(data.get("text", data)))
        except DeviceError as exc:
            self.stats.effect_errors += 1
            device = {"device": str(data.get("device", "meter"))} if effect.kind in (
                EffectKind.DEVICE, EffectKind.DISPLAY) else {}  # the display effect is the meter's
            log_event(self.log, logging.ERROR, f"effect failed: {exc}", kind=effect.kind,
                      **device, code="E202")

    async def announce(self, text: str) -> None:
        """The meter shows `text` until play shows something else."""
        await self.run(Effect(EffectKind.DISPLAY, {"mode": "announce", "text": text}))

    async def show_closed(self) -> None:
        """The meter says CLOSED (the table went out of service)."""
        await self.run(Effect(EffectKind.DISPLAY, {"mode": "closed"}))

    def _device(self, name: str) -> Device:
        if name not in self.devices:
            raise DeviceError(f"no device {name!r} on this table")
        return self.devices[name]


def _scalars(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items()
            if isinstance(v, str | int | bool) and k not in ("text", "code")}
