"""The round tests run the machines strict: a step that leads to a phase its route does not
declare raises (`UndeclaredTransition`) instead of becoming a technician alarm."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.rounds.base import Guarded


@pytest.fixture(autouse=True)
def strict_transitions(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(Guarded, "strict", True)
    yield
