"""The hardware end of a pseudo-terminal pair, for the wire-level simulators.

`PtyPort` opens `os.openpty()`, puts the slave in raw mode (no echo, no line editing, 8 bits)
and hands its path (`/dev/pts/N`) to the driver, which opens it with pyserial exactly as it
opens `/dev/tablectl-shaker`. The simulator reads and writes the master fd on the loop. It keeps
its own slave fd open, so the master never sees EIO while the driver reopens the port.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tty
from collections.abc import Callable


class PtyPort:
    def __init__(self, on_data: Callable[[bytes], None]) -> None:
        self.on_data = on_data
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)
        os.set_blocking(self._master, False)
        self.path = os.ttyname(self._slave)
        self._out = bytearray()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.bytes_in = 0
        self.bytes_out = 0

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._master, self._readable)

    def close(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._master)
            self._loop.remove_writer(self._master)
        self._loop = None
        for fd in (self._master, self._slave):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._master = self._slave = -1

    def _readable(self) -> None:
        try:
            data = os.read(self._master, 4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return  # the driver side closed; it may reopen
        if data:
            self.bytes_in += len(data)
            self.on_data(data)

    def write(self, data: bytes) -> None:
        if self._master < 0:
            raise OSError("simulator closed")
        self._out += data
        self._flush()

    def _flush(self) -> None:
        while self._out:
            try:
                n = os.write(self._master, self._out)
            except BlockingIOError:
                break
            except OSError:
                self._out.clear()  # nobody reads the other end: the line drops it
                break
            self.bytes_out += n
            del self._out[:n]
        if self._loop is not None and not self._loop.is_closed():
            if self._out:
                self._loop.add_writer(self._master, self._flush)
            else:
                self._loop.remove_writer(self._master)
