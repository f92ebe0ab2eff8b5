"""A stand-in for journald's native socket, for the logging tests (there is no journald here).

`run_with_journald(argv)` runs a command in a private mount namespace whose /run is a fresh
tmpfs holding a datagram socket at /run/systemd/journal/socket, the fixed path libsystemd's
sd_journal_send() writes to, and its stderr in a file whose device:inode is in JOURNAL_STREAM,
as systemd gives a service. It returns the journal entries received (the native protocol,
parsed) and the bytes written to stderr. Needs root and unshare(1).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

SOCKET = "/run/systemd/journal/socket"

# Runs inside the namespace: bind the socket, run the command, collect what arrives.
_SINK = r"""
import json, os, socket, struct, subprocess, sys
sock_path, err_path, argv = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
os.makedirs(os.path.dirname(sock_path), exist_ok=True)
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(sock_path)
sock.setblocking(False)
err = open(err_path, "wb")
st = os.fstat(err.fileno())
env = dict(os.environ, JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}")
proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env)
datagrams = []
def drain():
    while True:
        try:
            datagrams.append(sock.recv(1 << 20).hex())
        except BlockingIOError:
            return
while proc.poll() is None:
    drain()
    try:
        proc.wait(0.05)
    except subprocess.TimeoutExpired:
        pass
drain()
print(json.dumps({"rc": proc.returncode, "datagrams": datagrams}))
"""


def parse_native(data: bytes) -> dict[str, str]:
    """One datagram of journald's native protocol: KEY=value lines, or KEY\\n, a little-endian
    64-bit length, the value and \\n (values with newlines)."""
    fields: dict[str, str] = {}
    i = 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            key, _, value = line.partition(b"=")
            i = nl + 1
        else:
            key = line
            (size,) = struct.unpack_from("<Q", data, nl + 1)
            start = nl + 9
            value = data[start:start + size]
            i = start + size + 1
        fields[key.decode()] = value.decode("utf-8", "replace")
    return fields


def available() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", "mount -t tmpfs t /run"],
        capture_output=True,
    )
    return probe.returncode == 0


def run_with_journald(
    argv: list[str], tmp: Path, timeout: float = 120, env: dict[str, str] | None = None
) -> tuple[int, list[dict[str, str]], bytes]:
    """(exit status, journal entries, stderr bytes) of `argv` run as a journald-logged
    service would be."""
    err = tmp / "stderr.bin"
    result = subprocess.run(
        [
            "unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount -t tmpfs tmpfs /run && exec "$0" -c "$1" "$2" "$3" "$4"',
            sys.executable, _SINK, SOCKET, str(err), json.dumps(argv),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, **(env or {})},
    )
    assert result.returncode == 0, result.stderr
    out: dict[str, Any] = json.loads(result.stdout)
    entries = [parse_native(bytes.fromhex(d)) for d in out["datagrams"]]
    return out["rc"], entries, err.read_bytes()
