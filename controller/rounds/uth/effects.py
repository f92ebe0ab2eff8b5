"""Effect constructors for the UTH round machine (event fields are read by rounds/fields.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.events import EffectKind, OutboxType
from controller.rounds.base import Effect


def log(text: str, *, refused: bool = False) -> Effect:
    return Effect(EffectKind.LOG, {"text": text, "refused": True} if refused else {"text": text})


def alarm(severity: str, text: str, rule: str | None = None) -> Effect:
    data: dict[str, Any] = {"severity": severity, "text": text}
    if rule:
        data["rule"] = rule
    return Effect(EffectKind.ALARM, data)


def lamp(box: int, state: str) -> Effect:
    args = {"box": box, "state": state}
    return Effect(EffectKind.DEVICE, {"device": "sensors", "command": "lamps", "args": args})


def shuffle(deck: str) -> Effect:
    args = {"deck": deck}
    return Effect(EffectKind.DEVICE, {"device": "shuffler", "command": "shuffle", "args": args})


def dispense(count: int, deck: str) -> Effect:
    args = {"count": count, "deck": deck}
    return Effect(EffectKind.DEVICE, {"device": "shuffler", "command": "dispense", "args": args})


def display(data: Mapping[str, Any]) -> Effect:
    return Effect(EffectKind.DISPLAY, dict(data))


def outbox(type_: OutboxType, payload: Mapping[str, Any]) -> Effect:
    return Effect(EffectKind.OUTBOX, {"type": type_, "payload": dict(payload)})
