"""`tablectld` as a real process with a [link] config, against a real Mosquitto and a
`tablectl-headoffice run` process: the daemon wires the link (build_extensions), `tablectl
status` shows it, and what head office applied is exactly the head of the table's journal
outbox."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.journal import Journal
from headoffice.ledger import Ledger
from tests import mqtt_broker
from tests.support.daemon import REPO, ask
from tests.support.link import table_config

pytestmark = [
    pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed"),
    pytest.mark.slow,
]


def test_tablectld_with_a_link_config_relays_to_a_headoffice_process(tmp_path: Path) -> None:
    pki = mqtt_broker.Pki(tmp_path / "pki")
    broker = mqtt_broker.Broker(tmp_path / "broker", pki)
    broker.start()
    (tmp_path / "ho.toml").write_text(broker.headoffice_toml(str(tmp_path / "ledger.db"))
                                      + """[service]
operators = ["alice"]
[[pools]]
id = "p1"
seed = 500000
increment_bp = 2500
hidden_bp = 500
[[tables]]
id = "D1"
pool = "p1"
""")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ho = subprocess.Popen([sys.executable, "-m", "headoffice.cli", "--config",
                           str(tmp_path / "ho.toml"), "run"], cwd=REPO, env=env,
                          stdout=subprocess.DEVNULL, stderr=(tmp_path / "ho.err").open("w"))
    cfg = table_config("D1", tmp_path / "D1", broker)
    toml = tmp_path / "D1.toml"
    # The harness's config as a file for the daemon.
    lines = [f'table_id = "{cfg.table_id}"', 'game = "uth"', "[service]",
             f'state_dir = "{cfg.service.state_dir}"', f'runtime_dir = "{cfg.service.runtime_dir}"',
             'socket_group = "root"', "watchdog = false", "[uth]", "[uth.limits]",
             "ante_min = 500", "ante_max = 500000", "trips_min = 500", "trips_max = 100000",
             "[uth.jackpot]", "enabled = true", 'pool_id = "p1"', "increment_bp = 2500",
             "hidden_bp = 500", "seed = 500000", "[devices]", "simulate = true", "[link]",
             "enabled = true", 'host = "127.0.0.1"', f"port = {broker.port}", "[link.tls]",
             f'ca = "{cfg.link.tls.ca}"', f'cert = "{cfg.link.tls.cert}"',  # type: ignore[union-attr]
             f'key = "{cfg.link.tls.key}"',  # type: ignore[union-attr]
             "[cards]", "required = false"]  # uncarded: carded play is test_link_patron.py
    toml.write_text("\n".join(lines) + "\n")
    state = cfg.service.state_dir
    daemon = subprocess.Popen(
        [sys.executable, "-X", "faulthandler", "-m", "controller.daemon", "--config", str(toml),
         "--simulate", "--autoplay", "0", "--pace", "0.005", "--quiet"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=(tmp_path / "d1.err").open("w"))
    try:
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline:
            try:
                status = ask(cfg.service.runtime_dir.parent, "status")
            except Exception:
                status = None
            if status and status.get("link", {}).get("acked", 0) >= 20:
                break
            time.sleep(0.2)
        assert status is not None, (tmp_path / "d1.err").read_text()
        link = status["link"]
        assert link["connected"] and link["acked"] >= 20, link
        assert status["machine"]["pool"]["mode"] == "linked"
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(20)
        except subprocess.TimeoutExpired:
            daemon.send_signal(signal.SIGABRT)
            daemon.wait(5)
            raise AssertionError("tablectld did not stop on SIGTERM: "
                                 + (tmp_path / "d1.err").read_text()) from None
        ho.terminate()
        ho.wait(10)
        broker.stop()
    with Journal.open(state, table_id="D1", game="uth") as j:
        sent = [(m.id, m.type) for e in j.iter_events() for m in e.outbox]
        acked = j.summary()["outbox_acked_upto"]
    ledger = Ledger.open(str(tmp_path / "ledger.db"))
    rows = ledger.db.execute("SELECT seq, type, status FROM messages WHERE table_id = 'D1'"
                             " ORDER BY seq")
    applied = [(r["seq"], r["type"]) for r in rows]
    assert all(r["status"] == "applied" for r in rows)
    assert applied == sent[: len(applied)] and len(applied) >= acked >= 20
