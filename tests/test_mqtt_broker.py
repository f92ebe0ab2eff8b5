"""tests/mqtt_broker.py's certificates: `Broker.settings` is called from inside async tests, so
issuing a client certificate must start no process (two `openssl` runs per certificate held
the event loop for seconds under load); one CA per test process, whose certificates a real
Mosquitto and the table's TLS client accept."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from shared.link import contract
from shared.link.transport import connect
from tests import mqtt_broker

pytestmark = pytest.mark.skipif(not mqtt_broker.available(), reason="mosquitto not installed")

_started: list[str] = []
_watching = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # An audit hook sees every process the interpreter starts (subprocess, os.exec*, os.spawn*,
    # os.system), whichever module starts it; it cannot be removed, so it watches only while
    # `_watching` is set.
    if _watching and event in ("subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn",
                               "os.system", "os.fork"):
        _started.append(event)


sys.addaudithook(_audit)


def test_a_new_clients_certificate_starts_no_process_on_the_loop(tmp_path: Path) -> None:
    global _watching
    broker = mqtt_broker.Broker(tmp_path / "broker", mqtt_broker.Pki(tmp_path / "pki"))
    broker.start()
    try:
        async def main() -> None:
            global _watching
            _watching = True
            try:  # a CN no other test uses: its certificate is issued here, on the loop
                settings = broker.settings("headoffice-7", "fresh-cn-client")
            finally:
                _watching = False
            assert _started == []
            async with connect(settings) as client:  # Mosquitto takes it (TLS, ACL by CN)
                await client.subscribe([contract.outbox_topic("+")], qos=1)

        asyncio.run(asyncio.wait_for(main(), 60))
    finally:
        _watching = False
        broker.stop()


def test_one_ca_per_session_and_each_pki_has_its_own_files(tmp_path: Path) -> None:
    a, b = mqtt_broker.Pki(tmp_path / "a"), mqtt_broker.Pki(tmp_path / "b")
    assert a.ca != b.ca and a.ca.read_bytes() == b.ca.read_bytes()
    ta, tb = a.client("T3"), b.client("T3")
    assert ta.cert is not None and tb.cert is not None and ta.cert.parent == tmp_path / "a"
    assert ta.cert.read_bytes() == tb.cert.read_bytes()
    cert = x509.load_pem_x509_certificate(ta.cert.read_bytes())
    ca = x509.load_pem_x509_certificate(a.ca.read_bytes())
    cert.verify_directly_issued_by(ca)
    assert cert.subject.rfc4514_string() == "CN=T3"


def test_a_server_certificate_names_the_addresses_asked_for(tmp_path: Path) -> None:
    # The VM test's broker is reached from the guest as 10.0.2.2 (image/vm/test_vm.py): a
    # certificate without that address fails the guest's hostname check.
    pki = mqtt_broker.Pki(tmp_path / "pki")
    crt, _key = pki._issue("server-vm", "10.0.2.2", ("10.0.2.2", "127.0.0.1"))
    cert = x509.load_pem_x509_certificate(crt.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(ip) for ip in san.get_values_for_type(x509.IPAddress)} == {"10.0.2.2",
                                                                          "127.0.0.1"}
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
