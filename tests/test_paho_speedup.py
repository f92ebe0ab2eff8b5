"""paho's receive-path speed-up (`share_paho_properties`, shared/link/transport.py) is head
office's, asked for by its worker: importing the table's link, or making its MQTT client, leaves
paho's packet decoder as paho ships it; a head-office worker changes it when it is made (never
when headoffice/worker.py is imported). Each case runs in a fresh interpreter: paho's decoder is
one per process, and this suite's own head-office tests change it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

DECODER = """
def decoder():
    from paho.mqtt import _packet
    from paho.mqtt.properties import Properties
    current = _packet.Properties
    return "paho" if current is Properties else current.__qualname__
"""


def run_python(body: str) -> list[str]:
    """The lines `body` prints, run by this Python from the repository's root."""
    done = subprocess.run(
        [sys.executable, "-c", DECODER + body],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_tables_link_leaves_paho_as_it_ships() -> None:
    # The daemon's imports with the link (as tablectld loads it when [link] enabled), then the
    # table's MQTT client made as its link makes it (no broker needed to make one).
    assert run_python("""
import controller.daemon.main
import controller.link.extension
from shared.link import transport
print(decoder())
import asyncio
async def make():
    return transport._client(transport.BrokerSettings("127.0.0.1", 1, "T1"))
client = asyncio.run(make())
print(type(client).__name__, decoder())
""") == ["paho", "_Client", "paho"]


def test_a_head_office_worker_asks_for_it(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    assert run_python(f"""
import headoffice.worker
print(decoder())  # importing the worker changes nothing either
from headoffice.ledger import Ledger
from shared.link.transport import BrokerSettings
from tests.support.link import ho_config
settings = BrokerSettings("127.0.0.1", 1, "headoffice-1")
worker = headoffice.worker.Worker(ho_config({str(db)!r}, settings), Ledger.open({str(db)!r}))
print(decoder())
worker.ledger.close()
""") == ["paho", "_SharedProperties"]


def test_asking_again_changes_nothing_more() -> None:
    # Two workers in one process (the console's and the CLI's, or a test's several): the second
    # ask finds the decoder already sped up and says so.
    assert run_python("""
from shared.link import transport
print(transport.share_paho_properties(), decoder())
print(transport.share_paho_properties(), decoder())
""") == ["True", "_SharedProperties", "True", "_SharedProperties"]
