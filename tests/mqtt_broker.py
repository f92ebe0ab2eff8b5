"""A real Mosquitto for the link and head-office tests: TLS with a client certificate per
client, the repo's ACL (headoffice/mosquitto/acl) and persistence, on a free port, started and
killed at will. Never touches the machine's own broker on 1883.

    pki = Pki(tmp_path / "pki"); pki.client("T1")
    broker = Broker(tmp_path / "broker", pki); broker.start()
    broker.kill(); broker.start()          # SIGKILL and restart, same port and state
    broker.settings("T1")                  # BrokerSettings for a client with T1's certificate
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from shared.link.transport import BrokerSettings, Tls, Will

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "headoffice" / "mosquitto" / "mosquitto.conf"
ACL = REPO / "headoffice" / "mosquitto" / "acl"


def available() -> bool:
    return Path(MOSQUITTO).exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Issuer:
    """The session's CA and every certificate issued under it, once per CN per process.

    Issued in-process (`cryptography`, a dependency of the table) rather than by two `openssl`
    processes per certificate: `Broker.settings` is called from inside async tests, and a
    blocking subprocess there held the event loop for seconds under load (the cause of a flaky
    lease test, tests/test_headoffice_scale.py). Now a first certificate for a CN costs one EC
    key and one signature (~1 ms), and every later one a copy of two small files."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="tablectl-test-pki-"))
        atexit.register(shutil.rmtree, self.dir, True)
        self.lock = threading.Lock()
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        self.ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tablectl test CA")])
        self.ca_cert = (
            _builder(self.ca_name, self.ca_name, self.ca_key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .sign(self.ca_key, hashes.SHA256())
        )
        (self.dir / "ca.crt").write_bytes(self.ca_cert.public_bytes(serialization.Encoding.PEM))
        (self.dir / "ca.key").write_bytes(_pem_key(self.ca_key))

    def issue(self, name: str, cn: str, server_ips: tuple[str, ...] = ()
              ) -> tuple[Path, Path]:
        """`name`.crt and `name`.key in the session's directory (made the first time); with
        `server_ips`, a server certificate for those addresses and localhost."""
        crt, key = self.dir / f"{name}.crt", self.dir / f"{name}.key"
        with self.lock:
            if crt.exists():
                return crt, key
            private = ec.generate_private_key(ec.SECP256R1())
            builder = (
                _builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]),
                         self.ca_name, private.public_key())
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                    self.ca_key.public_key()), critical=False)
            )
            if server_ips:
                builder = builder.add_extension(x509.SubjectAlternativeName([
                    *(x509.IPAddress(ipaddress.ip_address(ip)) for ip in server_ips),
                    x509.DNSName("localhost")]), critical=False)
            cert = builder.sign(self.ca_key, hashes.SHA256())
            key.write_bytes(_pem_key(private))
            crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
            return crt, key


def _builder(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
             ) -> x509.CertificateBuilder:
    """Valid from an hour ago (a clock a little behind) for two days, as `openssl -days 2`."""
    now = datetime.datetime.now(datetime.UTC)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
            .public_key(public_key).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False))


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


_SESSION: _Issuer | None = None
_SESSION_LOCK = threading.Lock()


def _issuer() -> _Issuer:
    global _SESSION
    with _SESSION_LOCK:
        if _SESSION is None:
            _SESSION = _Issuer()
        return _SESSION


class Pki:
    """The session's CA (one per test process), a server certificate for 127.0.0.1/localhost,
    and client certificates whose CN is the MQTT user name and client id (a table id, or
    headoffice-1 ... -8), copied into `root` so each broker's files are its own."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.issuer = _issuer()
        self.ca = self._copy(self.issuer.dir / "ca.crt")
        self.server_cert, self.server_key = self._issue("server", "localhost", ("127.0.0.1",))

    def _copy(self, src: Path) -> Path:
        dst = self.root / src.name
        if not dst.exists():
            shutil.copyfile(src, dst)
        return dst

    def _issue(self, name: str, cn: str, server_ips: tuple[str, ...] = ()
               ) -> tuple[Path, Path]:
        crt, key = self.issuer.issue(name, cn, server_ips)
        return self._copy(crt), self._copy(key)

    def client(self, cn: str) -> Tls:
        crt, key = self._issue(f"client-{cn}", cn)
        return Tls(self.ca, crt, key)


class PortTaken(RuntimeError):
    """Mosquitto could not bind the port chosen for it: someone took it meanwhile."""


class Broker:
    def __init__(self, root: Path, pki: Pki, port: int | None = None,
                 acl: Path = ACL, nodelay: bool = True) -> None:
        self.root = root
        self.pki = pki
        self.port = port or free_port()
        # A port of our choosing may be taken between free_port() and mosquitto's bind (by a
        # parallel test worker's broker or client): the first start then moves to another.
        self._may_move = port is None
        self.proc: subprocess.Popen[bytes] | None = None
        self.nodelay = nodelay
        self.acl = acl
        root.mkdir(parents=True, exist_ok=True)
        self.conf = root / "mosquitto.conf"
        self._write_conf()

    def _write_conf(self) -> None:
        root, acl, pki = self.root, self.acl, self.pki
        text = TEMPLATE.read_text()
        for key, value in {
            "@STATE_DIR@": str(root), "@ACL@": str(acl), "@PORT@": str(self.port),
            "@BIND@": "127.0.0.1", "@CA@": str(pki.ca), "@CERT@": str(pki.server_cert),
            "@KEY@": str(pki.server_key),
        }.items():
            text = text.replace(key, value)
        if not self.nodelay:  # Nagle on: the benchmark's "before" (bench/fleet/nagle.py)
            text = text.replace("set_tcp_nodelay true", "set_tcp_nodelay false")
        # Running as root, mosquitto would drop to the "mosquitto" user and lose our files.
        if os.geteuid() == 0:
            text = "user root\n" + text
        self.conf.write_text(text)

    def start(self, timeout: float = 10.0, new_session: bool = False) -> None:
        """`new_session`: out of the caller's process group, so a terminal's Ctrl-C reaches
        only the caller, which stops the broker when it chooses (demo/linked.py)."""
        for _ in range(5):
            try:
                self._start(timeout, new_session)
                break
            except PortTaken:
                self.port = free_port()
                self._write_conf()
        else:
            self._start(timeout, new_session)
        self._may_move = False  # clients know this port now: a restart keeps it

    def _start(self, timeout: float, new_session: bool) -> None:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.proc = subprocess.Popen([MOSQUITTO, "-c", str(self.conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=new_session)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                said = f"{err} {self.log()[-2000:]}"
                if self._may_move and "in use" in said:
                    raise PortTaken(said)
                raise RuntimeError(f"mosquitto exited: {said}")
            with contextlib.suppress(OSError), socket.create_connection(
                ("127.0.0.1", self.port), timeout=0.2
            ):
                return
            time.sleep(0.02)
        raise RuntimeError("mosquitto did not open its port")

    def kill(self) -> None:
        """SIGKILL: what a power cut or an OOM kill looks like to the clients."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(5)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        path = self.root / "mosquitto.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def headoffice_toml(self, database: str, client_id: str = "headoffice-1",
                        cn: str = "headoffice-1") -> str:
        """The [database] and [broker] sections of a head-office config for this broker: TLS
        with a certificate whose CN is `cn`, a head-office worker's name in the ACL
        (headoffice-1 ... headoffice-8; the broker makes the CN the client id, `client_id` is a
        label). The caller adds [service], [[pools]] and [[tables]]."""
        tls = self.pki.client(cn)
        return f"""[database]
url = "{database}"
[broker]
host = "127.0.0.1"
port = {self.port}
client_id = "{client_id}"
[broker.tls]
ca = "{tls.ca}"
cert = "{tls.cert}"
key = "{tls.key}"
"""

    def settings(self, cn: str, client_id: str | None = None, *, will: Will | None = None,
                 session_expiry_s: int = 3600) -> BrokerSettings:
        return BrokerSettings(
            host="127.0.0.1", port=self.port, client_id=client_id or f"c-{cn}",
            tls=self.pki.client(cn), will=will, session_expiry_s=session_expiry_s,
            keepalive_s=5,
        )


class TcpProxy:
    """127.0.0.1:<port> -> the broker: `cut()` drops every connection through it and refuses
    new ones (a table's network cable pulled); `restore()` plugs it back."""

    def __init__(self, target_port: int) -> None:
        import asyncio

        self.target_port = target_port
        self.port = 0
        self.is_cut = False
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> TcpProxy:
        import asyncio

        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _handle(self, reader, writer) -> None:  # type: ignore[no-untyped-def]
        import asyncio

        if self.is_cut:
            writer.transport.abort()
            return
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_w}

        async def pipe(src, dst) -> None:  # type: ignore[no-untyped-def]
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.transport.abort()

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))
        self._writers -= {writer, up_w}

    def cut(self) -> None:
        self.is_cut = True
        for w in list(self._writers):
            w.transport.abort()

    def restore(self) -> None:
        self.is_cut = False

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
