"""Fixtures shared by several test modules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import mqtt_broker


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[mqtt_broker.Broker]:
    """A Mosquitto of our own on a free port, with TLS, the ACL and persistence."""
    pki = mqtt_broker.Pki(tmp_path / "pki")
    b = mqtt_broker.Broker(tmp_path / "broker", pki)
    b.start()
    yield b
    b.stop()
