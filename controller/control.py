"""The control socket's protocol, shared by tablectld (controller/daemon/control.py serves it)
and the CLI (the client side here): line-delimited JSON over a Unix socket in the runtime
directory.

Request: one line {"cmd": "status", "args": {...}}. Reply: one line {"ok": true, "result": ...} or
{"ok": false, "error": "..."}; `watch` streams one line per event until the client hangs up.

Who may talk (docs/operations.md, "Who may do what"): the socket is mode 0660 and owned by the
configured group, so only members of that group (and root) can connect at all. Each connection's
peer is then named by the kernel (SO_PEERCRED: uid, gid), never by the request: read-only
commands (READ_ONLY) and the service menu's hardware tests (TECHNICIAN) need the technician or
the supervisor group, every other command acts on the table and needs the supervisor group. Root
and the daemon's own account may do everything. The peer of a command is available to its
handler (`current_peer()`) so that what it journals names who asked.

A peer may hold at most MAX_PER_PROCESS connections at once (MAX_PER_USER for all of one uid's
processes) and must send its request within CLIENT_TIMEOUT_S: a flood of idle connections is
cut off, counted and logged, and the others are still served.

Nothing in a request is trusted: at most MAX_REQUEST bytes, nesting at most MAX_DEPTH, strings,
arrays and objects bounded, integers within +-MAX_INT (amounts are integer cents), no floats but
finite ones, known command names with known argument names and types. Anything else is refused
with an error reply, counted (`refused`) and logged; the daemon never falls over a request.
"""

from __future__ import annotations

import contextvars
import json
import math
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.errors import InputError, TablectlError

SOCKET_NAME = "control.sock"
# A Unix socket's path must fit sockaddr_un.sun_path: 108 bytes on Linux, with the final NUL.
SOCKET_PATH_MAX = 107


class SocketPathTooLong(InputError):
    """The control socket's path would not fit a Unix socket address."""


def control_socket(runtime_dir: Path) -> Path:
    """The control socket's path in `runtime_dir`, refused with a clear error when the kernel
    could not bind it (bind() says only "AF_UNIX path too long", without the path)."""
    path = Path(runtime_dir) / SOCKET_NAME
    size = len(str(path).encode())
    if size > SOCKET_PATH_MAX:
        raise SocketPathTooLong(
            f"the control socket's path {path} is {size} bytes; a Unix socket's path holds at "
            f"most {SOCKET_PATH_MAX}: choose a shorter runtime_dir (--runtime-dir)"
        )
    return path


MAX_REQUEST = 64 * 1024  # bytes in one request line
MAX_DEPTH = 6  # nesting of objects/arrays in a request
MAX_STRING = 1024  # characters in any string (and object key)
MAX_ITEMS = 256  # members of any object or array
MAX_INT = 10_000_000_000  # any integer, e.g. a wager in cents ($100,000,000; config.MAX_CENTS)
MAX_REPLY = 16 * 1024 * 1024  # the CLI's bound on one reply line (a journal tail of 1000)
# A connected client has this long to send its whole request line (the CLI sends it at once):
# an idle connection holds a file descriptor and a task, so it is let go after a few seconds.
CLIENT_TIMEOUT_S = 3.0
# Connections open at once from one process and from one user (SO_PEERCRED pid and uid): a
# member of the socket group who floods the socket is answered "too many connections" and cut
# off at once, so that every other client still gets through (a `tablectl watch` or two and a
# few commands at a time is what a person uses).
MAX_PER_PROCESS = 8
MAX_PER_USER = 32
CONNECT_RETRY_S = 0.005  # the client's pause between connects to a socket whose backlog is full

Handler = Callable[[dict[str, Any]], Awaitable[Any]]
Streamer = Callable[[dict[str, Any]], AsyncIterator[Any]]

# What the technician group may use (TECHNICIAN): commands that only read (READ_ONLY), and the
# service menu's hardware
# tests (a lamp walk, the guided button test, a serial loopback), so that a technician can test a
# lamp at 3 a.m. without a supervisor. Those tests move no money and change no configuration: they
# run only between rounds (service_menu refuses them during one), one at a time, a pressed button
# is the test's and never played (devices/tools/buttons.py), and each is logged with who ran it.
# Everything else (dealer actions, wagers, voids, `devices test` self-tests, fault injection and
# injected inputs, an on-demand verification that can take the table out of service, closing a
# shift, and any command this list does not name) needs the supervisor group.
SERVICE_TESTS = frozenset({"device_lamp_walk", "device_buttons", "device_button_wait",
                           "device_loopback"})
READ_ONLY = frozenset(
    {
        "status",
        "watch",
        "journal_tail",
        "journal_summary",
        "round_show",
        "devices",
        "device_list",
        "device_watch",
        "verify_hmac",
        "link_status",
        "meters",
        "logs",
        "errors",
        "alarms",
    }
)
# A technician acknowledges a technician alarm (one a person has seen to); a surveillance alarm
# needs the supervisor group, which the handler checks (controller/daemon/attention.py).
# READ_ONLY alone goes unlogged; a test or an acknowledgement is an action.
TECHNICIAN = READ_ONLY | SERVICE_TESTS | {"alarms_ack"}

_STR, _INT, _BOOL, _OBJ, _LIST = str, int, bool, dict, list
_SCALAR = (str, int, float, bool, type(None))
# Known commands' arguments: name -> (accepted types, required). A command not listed here (an
# extension's) gets the generic bounds only; its handler checks its own arguments.
ARGS: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    "status": {},
    "watch": {},
    "journal_summary": {},
    "selftest": {},
    "devices": {},
    "device_list": {},
    "verify_run": {},
    "link_status": {},
    "meters": {},
    "meters_close_shift": {},
    "logs": {"level": ((_STR,), False), "device": ((_STR,), False), "round": ((_INT,), False),
             "n": ((_INT,), False), "after": ((_INT,), False), "since": ((_STR,), False)},
    "errors": {"days": ((_INT,), False)},
    "alarms": {},
    "alarms_ack": {"ids": ((_LIST,), False), "note": ((_STR,), False)},
    "journal_tail": {"n": ((_INT,), False)},
    "round_show": {"number": ((_INT,), True)},
    "dealer": {"action": ((_STR,), True), "data": ((_OBJ,), False)},
    "table": {"action": ((_STR,), True)},
    "verify_hmac": {"seed": ((_STR,), True)},
    "device_test": {"device": ((_STR,), True)},
    "device_watch": {"since": ((_INT,), False)},
    "device_fault": {
        "device": ((_STR,), True),
        "fault": ((_STR,), True),
        "value": (_SCALAR, False),
    },
    "device_input": {"input": ((_STR,), True), "active": ((_BOOL, _STR, _INT), False)},
}


class NotRunning(TablectlError):
    """The daemon is not there to answer."""


class SocketDenied(TablectlError):
    """This user may not connect to the control socket (not in its group): not "not running",
    and no reason to try another source (the CLI exits 77, EX_NOPERM, naming the groups)."""


class Refused(InputError):
    """A request the daemon will not act on; the message is the error reply."""


class RequestRefused(TablectlError, RuntimeError):
    """The daemon's error reply to a request, on the client side (the message is the reply)."""


@dataclass(frozen=True)
class Peer:
    """The process at the other end of a connection, as the kernel names it (SO_PEERCRED)."""

    pid: int
    uid: int
    gid: int
    user: str
    groups: frozenset[str]

    def as_json(self) -> dict[str, Any]:
        """What is journaled with a command that changes the table: `operator: {uid, user}`."""
        return {"uid": self.uid, "user": self.user}


_PEER: contextvars.ContextVar[Peer | None] = contextvars.ContextVar("control_peer", default=None)


def current_peer() -> Peer | None:
    """The peer of the control-socket command being handled (None outside a command)."""
    return _PEER.get()


def set_current_peer(peer: Peer) -> None:
    """The server names the peer of the command it is about to hand to a handler."""
    _PEER.set(peer)


def _no_constant(name: str) -> Any:
    raise Refused(f"request holds {name}: numbers must be finite")


def parse_request(line: bytes) -> dict[str, Any]:
    """One request line -> {"cmd": str, "args": dict}, every value within the bounds."""
    if len(line) > MAX_REQUEST:
        raise Refused(f"request longer than {MAX_REQUEST} bytes")
    try:
        request = json.loads(line, parse_constant=_no_constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise Refused(f"request is not JSON: {exc}") from None
    except RecursionError:
        raise Refused(f"request nested deeper than {MAX_DEPTH}") from None
    if not isinstance(request, dict) or not isinstance(request.get("cmd"), str):
        raise Refused('request must be {"cmd": "...", "args": {...}}')
    if unknown := sorted(set(request) - {"cmd", "args"}):
        raise Refused(f"unknown request member {clip(unknown[0])!r}: only cmd and args")
    if not isinstance(request.get("args", {}), dict):
        raise Refused("args must be an object")
    _bounded(request, "request", 0)
    return request


def _bounded(value: Any, where: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise Refused(f"{where}: nested deeper than {MAX_DEPTH}")
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        if not -MAX_INT <= value <= MAX_INT:
            raise Refused(f"{where}: integer outside +-{MAX_INT}")
    elif isinstance(value, float):
        if not math.isfinite(value) or abs(value) > MAX_INT:
            raise Refused(f"{where}: number outside +-{MAX_INT}")
    elif isinstance(value, str):
        if len(value) > MAX_STRING:
            raise Refused(f"{where}: string longer than {MAX_STRING} characters")
    elif isinstance(value, list):
        if len(value) > MAX_ITEMS:
            raise Refused(f"{where}: more than {MAX_ITEMS} items")
        for i, item in enumerate(value):
            _bounded(item, f"{where}[{i}]", depth + 1)
    elif isinstance(value, dict):
        if len(value) > MAX_ITEMS:
            raise Refused(f"{where}: more than {MAX_ITEMS} members")
        for key, item in value.items():
            _bounded(key, f"{where} key", depth + 1)
            _bounded(item, f"{where}.{clip(key)}", depth + 1)


def check_args(cmd: str, args: dict[str, Any]) -> None:
    """A known command's arguments: known names, expected types, required ones present."""
    spec = ARGS.get(cmd)
    if spec is None:
        return
    for name, value in args.items():
        if name not in spec:
            expected = ", ".join(spec) or "none"
            raise Refused(f"{cmd}: unknown argument {clip(name)!r} (arguments: {expected})")
        types, _ = spec[name]
        if isinstance(value, bool) and bool not in types:  # bool is an int to Python
            raise Refused(f"{cmd}: {name} must be {_names(types)}, got a boolean")
        if not isinstance(value, types):
            raise Refused(f"{cmd}: {name} must be {_names(types)}, got {type(value).__name__}")
    for name, (_, required) in spec.items():
        if required and name not in args:
            raise Refused(f"{cmd}: argument {name!r} is required")


def _names(types: tuple[type, ...]) -> str:
    words = {str: "a string", int: "an integer", bool: "a boolean", dict: "an object",
             float: "a number", list: "a list", type(None): "null"}  # fmt: skip
    return " or ".join(words[t] for t in types)


def clip(text: str, n: int = 40) -> str:
    return text if len(text) <= n else f"{text[:n]}..."


def line_of(obj: Any) -> bytes:
    return (json.dumps(obj, separators=(",", ":")) + "\n").encode()


# -- client side (the CLI) ---------------------------------------------------------------------


def _connect(path: Path, timeout: float | None) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    # A Unix socket whose backlog is full refuses a connect with a timeout at once (EAGAIN)
    # instead of waiting: tried again until `timeout`, so that a busy socket (someone flooding
    # it) delays a command rather than failing it.
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            try:
                sock.connect(str(path))
                break
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(f"tablectld did not accept a connection on {path} "
                                       f"within {timeout} s (its socket is busy)") from None
                time.sleep(CONNECT_RETRY_S)
    except FileNotFoundError:
        sock.close()
        from controller.unit_state import not_running_hint  # the CLI's path only

        raise NotRunning(f"tablectld is not running (no control socket at {path})"
                         + not_running_hint(path)) from None
    except ConnectionRefusedError:
        sock.close()
        from controller.unit_state import not_running_hint

        raise NotRunning(f"tablectld is not running (stale control socket at {path})"
                         + not_running_hint(path)) from None
    except PermissionError:
        sock.close()
        raise SocketDenied(
            f"permission denied on {path}: run as a member of the socket's group"
            f" ({_group_of(path)}) and of the technician or supervisor group (tablectl-tech,"
            " tablectl-super unless [service] names others; docs/operations.md)"
        ) from None
    return sock


def _group_of(path: Path) -> str:
    """The socket's group by name, as the kernel checks it ("tablectl" when it cannot be seen)."""
    import grp

    try:
        return grp.getgrgid(path.stat().st_gid).gr_name
    except (OSError, KeyError):
        return "tablectl"


def request(path: Path, cmd: str, args: dict[str, Any] | None = None, timeout: float = 10) -> Any:
    """One request, one answer; NotRunning when the daemon is not there, RequestRefused when
    it refuses."""
    with _connect(path, timeout) as sock:
        sock.sendall(line_of({"cmd": cmd, "args": args or {}}))
        reply = next(_lines(sock), None)
    if reply is None:
        raise NotRunning(f"tablectld closed the connection on {path} without answering")
    if not reply.get("ok"):
        raise RequestRefused(reply.get("error", "refused"))
    return reply["result"]


def stream(path: Path, cmd: str, args: dict[str, Any] | None = None) -> Iterator[Any]:
    """A streaming request (watch): yields each result until the daemon closes the stream."""
    with _connect(path, timeout=None) as sock:  # type: ignore[arg-type]
        sock.sendall(line_of({"cmd": cmd, "args": args or {}}))
        for reply in _lines(sock):
            if not reply.get("ok"):
                raise RequestRefused(reply.get("error", "refused"))
            yield reply["result"]


def _lines(sock: socket.socket) -> Iterator[dict[str, Any]]:
    buffer = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return
        buffer += chunk
        if len(buffer) > MAX_REPLY and b"\n" not in buffer:
            raise RequestRefused(f"reply from tablectld longer than {MAX_REPLY} bytes: refused")
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)
