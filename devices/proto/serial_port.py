"""Opening a serial port on the daemon's loop (pyserial + pyserial-asyncio-fast).

`open_serial` returns the asyncio transport; bytes arrive through `on_data`, a lost port
through `on_lost`. Both run on the loop. Opening happens in pyserial-asyncio-fast's executor
thread, so a slow USB adapter never blocks the loop; an unusable port is a DeviceError naming
the port and the reason. The drivers open ports through `devices/proto/serial_line.py`, which turns
that error, and a port lost later, into the `disconnected` state and reopens the port.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from devices.base import DeviceError


class _Protocol(asyncio.Protocol):
    def __init__(self, on_data: Callable[[bytes], None], on_lost: Callable[[str], None]) -> None:
        self.on_data = on_data
        self.on_lost = on_lost

    def data_received(self, data: bytes) -> None:
        self.on_data(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.on_lost(f"port closed: {exc}" if exc else "port closed")


async def open_serial(
    name: str,
    port: str,
    baud: int,
    on_data: Callable[[bytes], None],
    on_lost: Callable[[str], None],
    *,
    seven_e1: bool = False,
) -> asyncio.Transport:
    """8N1 by default; `seven_e1` for the Alpha sign (7 data bits, even parity, 1 stop bit).

    A pseudo-terminal (the simulators) refuses 7-bit and parity settings (EINVAL) and has no
    line to frame them on, so it stays 8N1; the Alpha bytes are 7-bit either way."""
    # Here, not at import: only a table that opens a port needs pyserial (issue 31: an in-process
    # simulation, the service menu's import, `tablectl` commands never do).
    import serial
    import serial_asyncio_fast

    kwargs: dict[str, Any] = {"baudrate": baud}
    if seven_e1 and not is_pty(port):
        kwargs.update(bytesize=serial.SEVENBITS, parity=serial.PARITY_EVEN, stopbits=1)
    try:
        transport, _ = await serial_asyncio_fast.create_serial_connection(
            asyncio.get_running_loop(), lambda: _Protocol(on_data, on_lost), port, **kwargs
        )
    except (serial.SerialException, OSError, ValueError) as exc:
        raise DeviceError(f"{name}: cannot open {port}: {exc}") from None
    return transport


def is_pty(port: str) -> bool:
    return os.path.realpath(port).startswith("/dev/pts/")


def write(transport: asyncio.Transport | None, data: bytes) -> None:
    """Write or raise OSError (the link counts it and its timer reports the device)."""
    if transport is None or transport.is_closing():
        raise OSError("port not open")
    transport.write(data)
