"""The control socket: line-delimited JSON over a Unix socket in the runtime directory.

Request: one line {"cmd": "status", "args": {...}}. Reply: one line {"ok": true, "result": ...} or
{"ok": false, "error": "..."}; `watch` streams one line per event until the client hangs up.
The socket is mode 0660 and owned by the configured group, so only technicians in that group
(and root) can talk to the daemon; the CLI never opens hardware itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import grp
import json
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

SOCKET_NAME = "control.sock"
MAX_REQUEST = 64 * 1024

Handler = Callable[[dict[str, Any]], Awaitable[Any]]
Streamer = Callable[[dict[str, Any]], AsyncIterator[Any]]


class NotRunning(Exception):
    """The daemon is not there to answer."""


class ControlServer:
    def __init__(
        self,
        path: Path,
        handlers: dict[str, Handler],
        streams: dict[str, Streamer],
        group: str | None = None,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.handlers = handlers
        self.streams = streams
        self.group = group
        self.on_error = on_error or (lambda _msg: None)
        self._server: asyncio.AbstractServer | None = None
        self.requests = 0
        self.bad_requests = 0

    async def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a stale socket from a previous run
        old = os.umask(0o117)  # created 0660, never briefly wider
        try:
            self._server = await asyncio.start_unix_server(
                self._client, path=str(self.path), limit=MAX_REQUEST
            )
        finally:
            os.umask(old)
        os.chmod(self.path, 0o660)
        if self.group:
            try:
                os.chown(self.path, -1, grp.getgrnam(self.group).gr_gid)
            except (KeyError, PermissionError) as exc:
                self.on_error(f"control socket left in the daemon's group: {self.group}: {exc}")

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            request = _parse_request(line)
            cmd, args = request["cmd"], request.get("args") or {}
            self.requests += 1
            if cmd in self.streams:
                async for item in self.streams[cmd](args):
                    writer.write(_line({"ok": True, "result": item}))
                    await writer.drain()
            elif cmd in self.handlers:
                writer.write(_line({"ok": True, "result": await self.handlers[cmd](args)}))
            else:
                known = ", ".join(sorted([*self.handlers, *self.streams]))
                raise ValueError(f"unknown command {cmd!r} (known: {known})")
        except (ValueError, KeyError, TypeError) as exc:
            self.bad_requests += 1
            writer.write(_line({"ok": False, "error": str(exc)}))
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            self.bad_requests += 1
        except Exception as exc:  # a handler's bug must not cost the daemon or a silent client
            self.bad_requests += 1
            self.on_error(f"control command failed: {type(exc).__name__}: {exc}")
            writer.write(_line({"ok": False, "error": f"internal error: {type(exc).__name__}"}))
        finally:
            with contextlib.suppress(ConnectionError, OSError):
                await writer.drain()
                writer.close()


def _parse_request(line: bytes) -> dict[str, Any]:
    try:
        request = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"request is not JSON: {exc}") from None
    if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
        raise ValueError('request must be {"cmd": "...", "args": {...}}')
    if not isinstance(request.get("args", {}), dict):
        raise ValueError("args must be an object")
    return request


def _line(obj: Any) -> bytes:
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


# -- client side (the CLI) ---------------------------------------------------------------------


def _connect(path: Path, timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except FileNotFoundError:
        sock.close()
        raise NotRunning(f"tablectld is not running (no control socket at {path})") from None
    except ConnectionRefusedError:
        sock.close()
        raise NotRunning(f"tablectld is not running (stale control socket at {path})") from None
    except PermissionError:
        sock.close()
        raise NotRunning(
            f"permission denied on {path}: run as a member of the tablectl group"
        ) from None
    return sock


def request(path: Path, cmd: str, args: dict[str, Any] | None = None, timeout: float = 10) -> Any:
    """One request, one answer; NotRunning when the daemon is not there, RuntimeError on refusal."""
    with _connect(path, timeout) as sock:
        sock.sendall(_line({"cmd": cmd, "args": args or {}}))
        reply = next(_lines(sock), None)
    if reply is None:
        raise NotRunning(f"tablectld closed the connection on {path} without answering")
    if not reply.get("ok"):
        raise RuntimeError(reply.get("error", "refused"))
    return reply["result"]


def stream(path: Path, cmd: str, args: dict[str, Any] | None = None) -> Iterator[Any]:
    """A streaming request (watch): yields each result until the daemon closes the stream."""
    with _connect(path, timeout=None) as sock:  # type: ignore[arg-type]
        sock.sendall(_line({"cmd": cmd, "args": args or {}}))
        for reply in _lines(sock):
            if not reply.get("ok"):
                raise RuntimeError(reply.get("error", "refused"))
            yield reply["result"]


def _lines(sock: socket.socket) -> Iterator[dict[str, Any]]:
    buffer = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)
