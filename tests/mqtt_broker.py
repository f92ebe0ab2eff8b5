"""A real Mosquitto for the link and head-office tests: TLS with a client certificate per
client, the repo's ACL (headoffice/mosquitto/acl) and persistence, on a free port, started and
killed at will. Never touches the machine's own broker on 1883.

    pki = Pki(tmp_path / "pki"); pki.client("T1")
    broker = Broker(tmp_path / "broker", pki); broker.start()
    broker.kill(); broker.start()          # SIGKILL and restart, same port and state
    broker.settings("T1")                  # BrokerSettings for a client with T1's certificate
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from controller.link.transport import BrokerSettings, Tls, Will

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "headoffice" / "mosquitto" / "mosquitto.conf"
ACL = REPO / "headoffice" / "mosquitto" / "acl"


def available() -> bool:
    return Path(MOSQUITTO).exists() and shutil.which("openssl") is not None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


class Pki:
    """A throwaway CA, a server certificate for 127.0.0.1/localhost, and client certificates
    whose CN is the MQTT user name and client id (a table id, or headoffice-1 ... -8)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.ca = root / "ca.crt"
        if not self.ca.exists():
            _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                     "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
                     "-subj", "/CN=tablectl test CA", cwd=root)
        self.server_cert, self.server_key = self._issue("server", "localhost",
                                                        "subjectAltName=IP:127.0.0.1,DNS:localhost")

    def _issue(self, name: str, cn: str, ext: str | None = None) -> tuple[Path, Path]:
        crt, key = self.root / f"{name}.crt", self.root / f"{name}.key"
        if crt.exists():
            return crt, key
        _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-nodes", "-keyout", key.name, "-out", f"{name}.csr", "-subj", f"/CN={cn}",
                 cwd=self.root)
        args = ["x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", crt.name, "-days", "2"]
        if ext:
            (self.root / f"{name}.ext").write_text(ext + "\n")
            args += ["-extfile", f"{name}.ext"]
        _openssl(*args, cwd=self.root)
        return crt, key

    def client(self, cn: str) -> Tls:
        crt, key = self._issue(f"client-{cn}", cn)
        return Tls(self.ca, crt, key)


class Broker:
    def __init__(self, root: Path, pki: Pki, port: int | None = None,
                 acl: Path = ACL, nodelay: bool = True) -> None:
        self.root = root
        self.pki = pki
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.nodelay = nodelay
        root.mkdir(parents=True, exist_ok=True)
        self.conf = root / "mosquitto.conf"
        text = TEMPLATE.read_text()
        for key, value in {
            "@STATE_DIR@": str(root), "@ACL@": str(acl), "@PORT@": str(self.port),
            "@BIND@": "127.0.0.1", "@CA@": str(pki.ca), "@CERT@": str(pki.server_cert),
            "@KEY@": str(pki.server_key),
        }.items():
            text = text.replace(key, value)
        if not nodelay:  # Nagle's algorithm on: the benchmark's "before" (bench/fleet/nagle.py)
            text = text.replace("set_tcp_nodelay true", "set_tcp_nodelay false")
        # Running as root, mosquitto would drop to the "mosquitto" user and lose our files.
        if os.geteuid() == 0:
            text = "user root\n" + text
        self.conf.write_text(text)

    def start(self, timeout: float = 10.0) -> None:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.proc = subprocess.Popen([MOSQUITTO, "-c", str(self.conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"mosquitto exited: {err} {self.log()[-2000:]}")
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
