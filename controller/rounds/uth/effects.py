"""Effect constructors for the UTH round machine (event fields are read by rounds/fields.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.rounds.base import Effect


def log(text: str, *, refused: bool = False) -> Effect:
    return Effect("log", {"text": text, "refused": True} if refused else {"text": text})


def alarm(severity: str, text: str, rule: str | None = None) -> Effect:
    data: dict[str, Any] = {"severity": severity, "text": text}
    if rule:
        data["rule"] = rule
    return Effect("alarm", data)


def lamp(box: int, state: str) -> Effect:
    args = {"box": box, "state": state}
    return Effect("device", {"device": "sensors", "command": "lamps", "args": args})


def shuffle(deck: str) -> Effect:
    return Effect("device", {"device": "shuffler", "command": "shuffle", "args": {"deck": deck}})


def dispense(count: int, deck: str) -> Effect:
    args = {"count": count, "deck": deck}
    return Effect("device", {"device": "shuffler", "command": "dispense", "args": args})


def display(data: Mapping[str, Any]) -> Effect:
    return Effect("display", dict(data))


def outbox(kind: str, payload: Mapping[str, Any]) -> Effect:
    return Effect("outbox", {"type": kind, "payload": dict(payload)})
