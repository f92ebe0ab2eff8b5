"""Reading an event's `data` fields: one set of readers, one wording, for every round machine.

Each reader raises `InputError` naming the field, so `step` turns a malformed event into a
refusal with the state unchanged. A field given as JSON null counts as absent. Whole numbers
(and cents) must be ints: a float or a bool is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.errors import InputError


class _Missing:
    pass


REQUIRED: Any = _Missing()  # the default that makes a field required


def _get(data: Mapping[str, Any], key: str, default: Any) -> tuple[Any, bool]:
    """(value, given): `given` False when the field is absent and the default stands."""
    value = data.get(key)
    if value is None:
        if default is REQUIRED:
            raise InputError(f"{key} is required")
        return default, False
    return value, True


def integer(data: Mapping[str, Any], key: str, default: Any = REQUIRED) -> Any:
    value, given = _get(data, key, default)
    if given and (isinstance(value, bool) or not isinstance(value, int)):
        raise InputError(f"{key} must be a whole number, got {value!r}")
    return value


def cents(data: Mapping[str, Any], key: str, default: Any = REQUIRED) -> Any:
    value = integer(data, key, default)
    if isinstance(value, int) and value < 0:
        raise InputError(f"{key} must be cents >= 0, got {value}")
    return value


def box(data: Mapping[str, Any], n_boxes: int, key: str = "box") -> int:
    value: int = integer(data, key)
    if not 1 <= value <= n_boxes:
        raise InputError(f"{key} {value} outside 1..{n_boxes} (this table has boxes 1..{n_boxes})")
    return value


def boxes(data: Mapping[str, Any], key: str, n_boxes: int) -> list[int] | None:
    """A list of boxes, sorted and without repeats; None when absent."""
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        raise InputError(f"{key} must be a list of boxes, got {value!r}")
    return sorted({box({key: v}, n_boxes, key) for v in value})


def text(data: Mapping[str, Any], key: str, default: Any = REQUIRED) -> Any:
    """Non-empty text, stripped."""
    value, given = _get(data, key, default)
    if not given:
        return value
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{key} must be non-empty text, got {value!r}")
    return value.strip()


def flag(data: Mapping[str, Any], key: str, default: bool) -> bool:
    value, _ = _get(data, key, default)
    if not isinstance(value, bool):
        raise InputError(f"{key} must be true or false, got {value!r}")
    return value


def reason(data: Mapping[str, Any], default: str) -> str:
    """A device's or dealer's free-text reason, bounded for logs and alarms."""
    value = data.get("reason", default)
    return str(value)[:200]


def operator(data: Mapping[str, Any], required: str | None = None) -> dict[str, Any] | None:
    """Who sent the event through the control socket (`operator: {uid, user}`, added by the
    daemon: a keypad press names nobody). `required`: the refusal's words when nobody is named;
    None: absent is None."""
    who = data.get("operator")
    if (isinstance(who, Mapping) and isinstance(who.get("user"), str)
            and isinstance(who.get("uid"), int) and not isinstance(who.get("uid"), bool)):
        return {"uid": who["uid"], "user": who["user"]}
    if required is not None:
        raise InputError(required)
    return None
