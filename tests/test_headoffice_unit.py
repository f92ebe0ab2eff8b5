"""systemd/tablectl-headoffice.service's ExecStart, run as written against a real Mosquitto: the
argv the unit gives must parse and the worker must come online (its retained status reaches a
table), so the unit can start. docs/headoffice.md documents the same spelling."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from headoffice.cli import parse_args
from tests import mqtt_broker

REPO = Path(__file__).resolve().parent.parent
UNIT = REPO / "systemd/tablectl-headoffice.service"
VENV_BIN = Path(sys.executable).parent
INSTALLED = "/opt/tablectl/bin/tablectl-headoffice"
CONFIG = "/etc/tablectl/headoffice.toml"


def exec_start() -> list[str]:
    lines = [
        line.partition("=")[2]
        for line in UNIT.read_text().splitlines()
        if line.startswith("ExecStart=")
    ]
    assert len(lines) == 1, lines
    return shlex.split(lines[0])


def test_the_unit_runs_the_installed_worker_with_the_etc_config() -> None:
    argv = exec_start()
    assert argv[0] == INSTALLED and CONFIG in argv
    args = parse_args(argv[1:])
    assert args.cmd == "run" and str(args.config) == CONFIG


@pytest.mark.parametrize(
    "argv",
    [["run", "--config", "F"], ["--config", "F", "run"]],
    ids=["after the command", "before it"],
)
def test_both_spellings_of_config_parse(argv: list[str]) -> None:
    args = parse_args(argv)
    assert args.cmd == "run" and str(args.config) == "F"


def test_the_documented_command_lines_parse() -> None:
    """Every `tablectl-headoffice ...` line in docs/headoffice.md's first example parses."""
    doc = (REPO / "docs/headoffice.md").read_text()
    block = re.search(r"```sh\n(.*?)```", doc, re.S)
    assert block is not None
    lines = [
        shlex.split(line.split("#")[0])  # a quoted reason is one word
        for line in block.group(1).splitlines()
        if "tablectl-headoffice" in line
    ]
    assert lines
    for words in lines:
        words = [w for w in words if w != "sudo"][1:]
        # Optional parts in [brackets] are left out; a choice `A | B` takes its first.
        plain = [w for w in words if not w.startswith("[") and not w.endswith("]")]
        parse_args(plain)


@pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")
@pytest.mark.skipif(
    subprocess.run(["which", "mosquitto_sub"], capture_output=True).returncode != 0,
    reason="mosquitto_sub not installed",
)
def test_the_unit_execstart_serves_against_a_real_broker(tmp_path: Path) -> None:
    pki = mqtt_broker.Pki(tmp_path / "pki")
    broker = mqtt_broker.Broker(tmp_path / "broker", pki)
    broker.start()
    config = tmp_path / "headoffice.toml"
    config.write_text(
        broker.headoffice_toml(str(tmp_path / "ledger.db"), "ho-unit")
        + '[service]\noperators = ["alice"]\n[[pools]]\nid = "p1"\nseed = 500000\n'
        "increment_bp = 2500\nhidden_bp = 500\n"
    )
    # The unit's argv, with this checkout's entry point and the test's config in their places.
    argv = [
        str(VENV_BIN / "tablectl-headoffice") if a == INSTALLED else str(config) if a == CONFIG
        else a
        for a in exec_start()
    ]
    worker = subprocess.Popen(
        argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=(tmp_path / "ho.err").open("w")
    )
    tls = pki.client("T1")
    try:
        # A table reads head office's retained status: the worker published it once connected,
        # subscribed and serving its pools.
        sub = subprocess.run(
            [
                "mosquitto_sub", "-h", "127.0.0.1", "-p", str(broker.port), "-V", "mqttv5",
                "--cafile", str(tls.ca), "--cert", str(tls.cert), "--key", str(tls.key),
                "-i", "T1", "-t", "tablectl/v1/ho/status", "-C", "1", "-W", "30",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert worker.poll() is None, (tmp_path / "ho.err").read_text()
        assert sub.returncode == 0, sub.stderr + (tmp_path / "ho.err").read_text()
        status = json.loads(sub.stdout)
        assert status["state"] == "online" and status["worker"] == "ho-unit"
    finally:
        worker.terminate()
        worker.wait(10)
        broker.stop()


def test_importing_the_worker_does_not_build_the_evaluator_tables() -> None:
    """Head office evaluates a hand only for a jackpot hit: its start-up must not pay for the
    UTH evaluator's lookup tables (~0.6 s, issue 17). They are built on the first hand, and
    rank it as the rules do (8.2(a): a royal flush is the top rank)."""
    code = (
        "import headoffice.worker, headoffice.cli\n"
        "import controller.games.uth.evaluator as e\n"
        "print(len(e._FLUSH), len(e._NONFLUSH))\n"
        "from controller.games.uth.cards import parse_cards\n"
        "rank = e.hand_rank(parse_cards('As Ks Qs Js Ts 2d 3c'))\n"
        "print(rank == e.MAX_RANK, e.category_of(rank).name, len(e._FLUSH) == 1 << 13)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split("\n")
    assert out[0] == "0 0"  # imported, not built
    assert out[1] == "True ROYAL_FLUSH True"  # built on the first hand


@pytest.mark.parametrize("expiry", [None, 5])
def test_publish_properties_decode_as_paho_does(expiry: int | None) -> None:
    """The receive path's cheap `Properties` (shared/link/transport.py, asked for by head
    office's worker): a PUBLISH with no properties (a table's message) and one with a message
    expiry (a retained pool value) decode to what paho's own class gives, and setting a
    property is still checked."""
    import struct

    from paho.mqtt import _packet
    from paho.mqtt.enums import MQTTProtocolVersion
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    from shared.link import transport

    shipped = _packet.Properties  # paho's own, unless another test's worker asked already
    assert transport.share_paho_properties() and _packet.Properties is transport._SharedProperties
    props = b"\x00"
    if expiry is not None:
        wanted = Properties(PacketTypes.PUBLISH)
        wanted.MessageExpiryInterval = expiry
        props = wanted.pack()
    topic = b"tablectl/v1/table/T1/outbox"
    packet = struct.pack("!H", len(topic)) + topic + struct.pack("!H", 9) + props + b'{"v":1}'
    got = _packet.decode_publish(0x32, packet, MQTTProtocolVersion.MQTTv5)
    _packet.Properties = Properties  # paho's own, for the reference
    try:
        ref = _packet.decode_publish(0x32, packet, MQTTProtocolVersion.MQTTv5)
    finally:
        _packet.Properties = shipped
    assert (got.topic, got.mid, got.payload) == (ref.topic, ref.mid, ref.payload) == (
        topic, 9, b'{"v":1}')
    assert got.properties.json() == ref.properties.json()
    assert getattr(got.properties, "MessageExpiryInterval", None) == expiry
    with pytest.raises(Exception, match="Property name must be one of"):
        got.properties.NoSuchProperty = 1
