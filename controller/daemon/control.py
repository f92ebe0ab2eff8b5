"""tablectld's side of the control socket (the protocol and the client: controller/control.py).

`ControlServer` serves the socket (mode 0660, the configured group), names each peer by
SO_PEERCRED (`peer_of`), lets `Access` decide what that peer may run, and answers each request
with its handler. A request the protocol refuses, a handler's refusal (a `TablectlError`) and a
handler's bug all get an error reply, are counted and logged; the daemon never falls over one.
"""

from __future__ import annotations

import asyncio
import contextlib
import grp
import json
import os
import pwd
import socket
import struct
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.control import (
    CLIENT_TIMEOUT_S,
    MAX_REQUEST,
    READ_ONLY,
    TECHNICIAN,
    Handler,
    Peer,
    Refused,
    Streamer,
    check_args,
    clip,
    line_of,
    parse_request,
    set_current_peer,
)
from controller.errors import TablectlError
from devices.errors import DevicesError


def peer_of(sock: socket.socket) -> Peer:
    """SO_PEERCRED of a connected Unix socket; groups from the user database (getgrouplist)
    plus the peer's own gid, by name."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", creds)
    try:
        user = pwd.getpwuid(uid).pw_name
        gids = set(os.getgrouplist(user, gid))
    except KeyError:  # a uid with no account: only its own gid counts
        user, gids = str(uid), {gid}
    names: set[str] = set()
    for g in gids | {gid}:
        with contextlib.suppress(KeyError):
            names.add(grp.getgrgid(g).gr_name)
    return Peer(pid=pid, uid=uid, gid=gid, user=user, groups=frozenset(names))


@dataclass(frozen=True)
class Access:
    """Who may run which command (docs/operations.md): root and the daemon's own account
    everything; the supervisor group everything; the technician group TECHNICIAN."""

    tech_group: str = "tablectl-tech"
    super_group: str = "tablectl-super"
    owner_uid: int = os.getuid()

    def role(self, peer: Peer) -> str | None:
        if peer.uid in (0, self.owner_uid) or self.super_group in peer.groups:
            return "supervisor"
        if self.tech_group in peer.groups:
            return "technician"
        return None

    def check(self, peer: Peer, cmd: str) -> None:
        role = self.role(peer)
        if role == "supervisor" or (role == "technician" and cmd in TECHNICIAN):
            return
        need = f"{self.tech_group} or {self.super_group}" if cmd in TECHNICIAN else self.super_group
        raise Refused(
            f"permission denied: {cmd!r} needs group {need}; user {peer.user} (uid {peer.uid})"
            f" is {'a technician (read-only)' if role else 'in neither group'}"
        )


class ControlServer:
    def __init__(
        self,
        path: Path,
        handlers: dict[str, Handler],
        streams: dict[str, Streamer],
        group: str | None = None,
        on_error: Callable[[str], None] | None = None,
        access: Access | None = None,
        on_refused: Callable[[str], None] | None = None,
        on_action: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.handlers = handlers
        self.streams = streams
        self.group = group
        self.access = access or Access()
        self.on_error = on_error or (lambda _msg: None)
        self.on_refused = on_refused or self.on_error
        self.on_action = on_action or (lambda _msg: None)  # every acting command, with who
        self._server: asyncio.AbstractServer | None = None
        self.requests = 0
        self.bad_requests = 0
        self.refused: Counter[str] = Counter()  # reason -> requests refused for it

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
                gid = grp.getgrnam(self.group).gr_gid
                # Only when it differs: under the unit (SystemCallFilter=~@privileged) chown is
                # refused even as a no-op, and the socket already has the daemon's group.
                if os.stat(self.path).st_gid != gid:
                    os.chown(self.path, -1, gid)
            except (KeyError, PermissionError) as exc:
                self.on_error(f"control socket left in the daemon's group: {self.group}: {exc}")

    def serving(self) -> bool:
        return self._server is not None and self._server.is_serving()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def stats(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "bad_requests": self.bad_requests,
            "refused": sum(self.refused.values()),
            "refused_by_reason": dict(self.refused),
        }

    def _refuse(self, writer: asyncio.StreamWriter, reason: str, detail: str, who: str) -> None:
        self.bad_requests += 1
        self.refused[reason] += 1
        self.on_refused(f"control request refused ({reason}) from {who}: {detail}")
        writer.write(line_of({"ok": False, "error": detail}))

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        who = "unknown peer"
        try:
            sock = writer.get_extra_info("socket")
            peer = peer_of(sock)
            who = f"user {peer.user} (uid {peer.uid}, pid {peer.pid})"
            try:
                line = await asyncio.wait_for(reader.readline(), CLIENT_TIMEOUT_S)
            except (ValueError, asyncio.LimitOverrunError):  # longer than MAX_REQUEST
                self._refuse(writer, "too_large", f"request longer than {MAX_REQUEST} bytes", who)
                return
            except TimeoutError:
                self._refuse(writer, "timeout", f"no request within {CLIENT_TIMEOUT_S} s", who)
                return
            if not line.endswith(b"\n"):  # the client hung up mid-line (or sent nothing)
                if line:
                    self._refuse(writer, "truncated", "request line not terminated", who)
                return
            try:
                cmd, args = self._parse(line)
                self.access.check(peer, cmd)
            except Refused as exc:
                reason = "permission" if str(exc).startswith("permission denied") else "malformed"
                self._refuse(writer, reason, str(exc), who)
                return
            self.requests += 1
            set_current_peer(peer)
            if cmd not in READ_ONLY:
                self.on_action(f"control command {cmd} {clip(json.dumps(args), 200)} by {who}")
            if cmd in self.streams:
                async for item in self.streams[cmd](args):
                    writer.write(line_of({"ok": True, "result": item}))
                    await writer.drain()
            else:
                writer.write(line_of({"ok": True, "result": await self.handlers[cmd](args)}))
        except (TablectlError, DevicesError) as exc:  # a handler's answer: refused
            self.bad_requests += 1
            writer.write(line_of({"ok": False, "error": str(exc)}))
        except (ConnectionError, asyncio.IncompleteReadError):
            self.bad_requests += 1
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is None or task.cancelling():  # this request is being cancelled: let it go
                raise
            self._failed(writer, exc)  # a cancelled future a handler awaited: a bug, answered
        except Exception as exc:  # a handler's bug must not cost the daemon or a silent client
            self._failed(writer, exc)
        finally:
            with contextlib.suppress(ConnectionError, OSError):
                await writer.drain()
                writer.close()

    def _failed(self, writer: asyncio.StreamWriter, exc: BaseException) -> None:
        self.bad_requests += 1
        self.on_error(f"control command failed: {type(exc).__name__}: {exc}")
        writer.write(line_of({"ok": False, "error": f"internal error: {type(exc).__name__}"}))

    def _parse(self, line: bytes) -> tuple[str, dict[str, Any]]:
        request = parse_request(line)
        cmd, args = request["cmd"], request.get("args") or {}
        if cmd not in self.handlers and cmd not in self.streams:
            known = ", ".join(sorted([*self.handlers, *self.streams]))
            raise Refused(f"unknown command {clip(cmd)!r} (known: {known})")
        check_args(cmd, args)
        return cmd, args
