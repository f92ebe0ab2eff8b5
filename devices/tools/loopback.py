"""The serial loopback test: a loopback plug (TX wired to RX) in place of a device, a pattern
sent through the port and read back, byte for byte.

With a device named, its driver lets go of the port for the test (`Device.released`) and
takes it back after, so the plug goes where the device's cable was. The port is opened as the
driver opens it (`devices/proto/serial_port.py`: the same baud rate, 7E1 for the Alpha sign).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from devices.base import Device
from devices.errors import DeviceError
from devices.proto import serial_port
from devices.proto.serial_line import SerialLine

# Every 7-bit byte value (an Alpha sign's line carries 7 data bits), then a readable tail.
PATTERN = bytes(range(128)) + b"TABLECTL LOOPBACK 0123456789\r\n"
TIMEOUT_S = (0.1, 30.0)
SHOWN = 32  # bytes of what was sent/received shown in hex in the answer


def line_of(device: Device) -> SerialLine:
    """The serial line a driver holds (the framed drivers' channel, or the meter's own)."""
    line = getattr(device, "line", None) or getattr(getattr(device, "channel", None), "line", None)
    if not isinstance(line, SerialLine):
        raise DeviceError(f"{device.name}: not a serial device (a loopback needs a serial port)")
    return line


async def loopback(
    port: str, baud: int, timeout_s: float, *, seven_e1: bool = False, pattern: bytes = PATTERN
) -> dict[str, Any]:
    """Send `pattern` through `port` and read it back within `timeout_s`."""
    if not TIMEOUT_S[0] <= timeout_s <= TIMEOUT_S[1]:
        raise DeviceError(f"loopback: timeout {timeout_s} s outside {TIMEOUT_S[0]}..{TIMEOUT_S[1]}")
    received = bytearray()
    complete = asyncio.Event()
    lost: list[str] = []

    def on_data(data: bytes) -> None:
        received.extend(data[: len(pattern) + 64 - len(received)])  # bounded: a babbling line
        if len(received) >= len(pattern):
            complete.set()

    def on_lost(reason: str) -> None:
        lost.append(reason)
        complete.set()

    result: dict[str, Any] = {"port": port, "baud": baud}
    try:
        transport = await serial_port.open_serial(
            "loopback", port, baud, on_data, on_lost, seven_e1=seven_e1
        )
    except DeviceError as exc:  # nothing was sent: say so, in the same shape
        return {**result, **compare(b"", b"", timeout_s, []), "ok": False, "error": str(exc)}
    try:
        transport.write(pattern)
        with contextlib.suppress(TimeoutError):  # a short answer is reported, not raised
            await asyncio.wait_for(complete.wait(), timeout_s)
        await asyncio.sleep(0.05)  # anything still arriving: a line that echoes twice shows it
    finally:
        transport.close()
    return {**result, **compare(pattern, bytes(received), timeout_s, lost)}


def compare(sent: bytes, got: bytes, timeout_s: float, lost: list[str]) -> dict[str, Any]:
    """What came back against what was sent: counts, the first difference, both ends in hex."""
    same = next((i for i, (a, b) in enumerate(zip(sent, got, strict=False)) if a != b), None)
    out: dict[str, Any] = {
        "sent": len(sent),
        "received": len(got),
        "sent_hex": sent[:SHOWN].hex(" "),
        "received_hex": got[:SHOWN].hex(" "),
        "first_mismatch": same,
    }
    if lost:
        error = f"port lost: {lost[0]}"
    elif same is not None:
        error = f"byte {same} differs: sent {sent[same]:#04x}, received {got[same]:#04x}"
    elif len(got) < len(sent):
        error = (
            f"{len(got)} of {len(sent)} bytes came back within {timeout_s} s"
            + (" (nothing: no loopback plug, or a broken wire?)" if not got else "")
        )
    elif len(got) > len(sent):
        error = f"{len(got) - len(sent)} bytes more came back than were sent"
    else:
        error = None
    return {**out, "ok": error is None, "error": error}
