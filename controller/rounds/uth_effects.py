"""Effect constructors and event-field readers for the UTH round machine.

Readers raise `InputError` naming the field, so `step` turns any malformed event into a log line
with the state unchanged. Amounts must be ints (cents): a float or a bool is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.errors import InputError
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


def integer(data: Mapping[str, Any], key: str, *, default: int | None = None) -> int:
    value = data.get(key, default)
    if value is None:
        raise InputError(f"missing field {key!r}")
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(f"field {key!r} must be a whole number, got {value!r}")
    return value


def cents(data: Mapping[str, Any], key: str, *, default: int | None = None) -> int:
    value = integer(data, key, default=default)
    if value < 0:
        raise InputError(f"field {key!r} must be cents >= 0, got {value}")
    return value


def box_of(data: Mapping[str, Any], boxes: int) -> int:
    box = integer(data, "box")
    if not 1 <= box <= boxes:
        raise InputError(f"bad box {box}: this table has boxes 1..{boxes}")
    return box


def text(data: Mapping[str, Any], key: str, *, default: str | None = None) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise InputError(f"field {key!r} must be text, got {value!r}")
    return value
