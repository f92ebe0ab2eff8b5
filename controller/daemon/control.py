"""tablectld's side of the control socket (the protocol and the client: controller/control.py).

`ControlServer` serves the socket (mode 0660, the configured group), names each peer by
SO_PEERCRED (`peer_of`), lets `Access` decide what that peer may run, and answers each request
with its handler. A request the protocol refuses, a handler's refusal (a `TablectlError`) and a
handler's bug all get an error reply, are counted and logged; the daemon never falls over one.
A peer's connections are capped (per process and per user) and an idle one is let go after
CLIENT_TIMEOUT_S, so that a flood from one member of the socket group leaves the others served.
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
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.control import (
    CLIENT_TIMEOUT_S,
    MAX_PER_PROCESS,
    MAX_PER_USER,
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
from devices.errors import DevicesError
from shared.errors import TablectlError

# Refusals a flood repeats (a connection too many, one that sent nothing in time) are logged at
# most once every LOG_EVERY_S for each reason and user, with how many the line stands for; each
# is counted (`status`: control.refused_by_reason).
FLOOD_REASONS = frozenset({"too_many", "timeout", "accept_failed"})
LOG_EVERY_S = 10.0
BACKLOG = 128  # connections the kernel holds until they are accepted
ACCEPT_RETRY_S = 0.1  # after an accept failed (out of descriptors)


def creds_of(sock: socket.socket) -> tuple[int, int, int]:
    """SO_PEERCRED of a connected Unix socket: (pid, uid, gid), without the user database."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", creds)
    return pid, uid, gid


def peer_of(sock: socket.socket, creds: tuple[int, int, int] | None = None) -> Peer:
    """SO_PEERCRED of a connected Unix socket (`creds`, if read already); groups from the user
    database (getgrouplist) plus the peer's own gid, by name."""
    pid, uid, gid = creds or creds_of(sock)
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


class Listener:
    """The listening socket and the task that accepts on it (in place of asyncio's Server):
    each connection's peer is named (SO_PEERCRED) before anything else is made for it, so that
    one a peer has too many of is refused for a few system calls, with no task or streams."""

    def __init__(self, sock: socket.socket, task: asyncio.Task[None]) -> None:
        self.sock, self.task = sock, task
        self._closed = False

    def is_serving(self) -> bool:
        return not self._closed and not self.task.done()

    def close(self) -> None:
        self._closed = True
        self.task.cancel()

    async def wait_closed(self) -> None:
        await asyncio.wait([self.task])
        self.sock.close()


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
        self._server: Listener | None = None
        self._clients: set[asyncio.Task[None]] = set()
        self.requests = 0
        self.bad_requests = 0
        self.refused: Counter[str] = Counter()  # reason -> requests refused for it
        self._open_by_pid: Counter[int] = Counter()  # connections open now, by peer pid
        self._open_by_uid: Counter[int] = Counter()  # and by peer uid
        self._quiet: dict[tuple[str, int], tuple[float, int]] = {}  # (reason, uid) -> (t, n)

    async def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # a stale socket from a previous run
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o117)  # created 0660, never briefly wider
        try:
            sock.bind(str(self.path))
            sock.listen(BACKLOG)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        finally:
            os.umask(old)
        self._server = Listener(sock, asyncio.create_task(self._accept(sock)))
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

    def _refuse(self, writer: asyncio.StreamWriter, reason: str, detail: str, who: str,
                uid: int = -1) -> None:
        self.bad_requests += 1
        writer.write(line_of({"ok": False, "error": detail}))
        self._refuse_count(reason, detail, who, uid)

    def _refuse_count(self, reason: str, detail: str, who: str, uid: int) -> None:
        """Counted, and logged (a flood's kind at most once every LOG_EVERY_S a user)."""
        self.refused[reason] += 1
        more = ""
        if reason in FLOOD_REASONS:
            now = time.monotonic()
            last, unsaid = self._quiet.get((reason, uid), (-LOG_EVERY_S, 0))
            if now - last < LOG_EVERY_S:
                self._quiet[(reason, uid)] = (last, unsaid + 1)
                return
            self._quiet[(reason, uid)] = (now, 0)
            if unsaid:
                more = f" (and {unsaid} more for this user since the last such line)"
        self.on_refused(f"control request refused ({reason}) from {who}: {detail}{more}")

    async def _accept(self, sock: socket.socket) -> None:
        """Accept connections for as long as the socket serves: a peer with too many open is
        refused here (`_refuse_now`) and the rest of the daemon runs before the next one; any
        other gets its streams and a task (`_client`)."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(sock)
            except OSError as exc:  # out of descriptors (EMFILE): the backlog waits meanwhile
                self._refuse_count("accept_failed", f"accept failed: {exc}", "the kernel", -1)
                await asyncio.sleep(ACCEPT_RETRY_S)
                continue
            try:
                creds = creds_of(conn)
            except OSError:
                conn.close()
                continue
            pid, uid, _gid = creds
            if (why := self._too_many(pid, uid)) is not None:
                self._refuse_now(conn, why, pid, uid)
                await asyncio.sleep(0)  # a flood's refusals take turns with the table's work
                continue
            self._open_by_pid[pid] += 1
            self._open_by_uid[uid] += 1
            try:
                reader, writer = await asyncio.open_unix_connection(sock=conn,
                                                                    limit=MAX_REQUEST)
            except OSError:
                self._closed_one(pid, uid)
                conn.close()
                continue
            task = asyncio.create_task(self._client(reader, writer, creds))
            self._clients.add(task)
            task.add_done_callback(self._clients.discard)

    def _refuse_now(self, conn: socket.socket, why: str, pid: int, uid: int) -> None:
        """One connection too many: its one-line answer (it fits the socket's buffer: sent
        without waiting, or not at all if the peer is gone), closed, counted and logged."""
        with contextlib.suppress(OSError):
            conn.send(line_of({"ok": False, "error": why}))
        conn.close()
        self.bad_requests += 1
        self._refuse_count("too_many", why, f"uid {uid}, pid {pid}", uid)

    def _closed_one(self, pid: int, uid: int) -> None:
        for open_now, key in ((self._open_by_pid, pid), (self._open_by_uid, uid)):
            open_now[key] -= 1
            if open_now[key] <= 0:
                del open_now[key]

    def _too_many(self, pid: int, uid: int) -> str | None:
        """Why a new connection from process `pid` of user `uid` is one too many, or None
        (checked before the user database is read: a refusal costs the flood's peer little)."""
        if self._open_by_pid[pid] >= MAX_PER_PROCESS:
            return (f"too many connections: process {pid} has {MAX_PER_PROCESS} open "
                    f"(at most {MAX_PER_PROCESS} at once from one process)")
        if self._open_by_uid[uid] >= MAX_PER_USER:
            return (f"too many connections: uid {uid} has {MAX_PER_USER} open "
                    f"(at most {MAX_PER_USER} at once from one user)")
        return None

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      creds: tuple[int, int, int]) -> None:
        """One connection `_accept` counted as open for its peer (`creds`): one request, its
        answer (or a stream), then closed."""
        who = f"uid {creds[1]}, pid {creds[0]}"
        try:
            peer = peer_of(writer.get_extra_info("socket"), creds)
            who = f"user {peer.user} (uid {peer.uid}, pid {peer.pid})"
            try:
                line = await asyncio.wait_for(reader.readline(), CLIENT_TIMEOUT_S)
            except (ValueError, asyncio.LimitOverrunError):  # longer than MAX_REQUEST
                self._refuse(writer, "too_large", f"request longer than {MAX_REQUEST} bytes", who)
                return
            except TimeoutError:
                self._refuse(writer, "timeout", f"no complete request within {CLIENT_TIMEOUT_S}"
                             " s", who, creds[1])
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
            self._closed_one(creds[0], creds[1])
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
