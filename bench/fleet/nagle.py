"""Nagle's algorithm back on the link's sockets: the fleet benchmark's "before TCP_NODELAY".

The link sets TCP_NODELAY on every MQTT socket it opens (shared/link/transport.py) and the
shipped broker config says `set_tcp_nodelay true`; `bench.fleet.run --nagle` measures the
fleet without both, in the same run as with them. Run as a module, this is head office with
Nagle: `python -m bench.fleet.nagle --config FILE run`.
"""

from __future__ import annotations

import socket
import sys
from typing import Any


def allow_nagle() -> None:
    """From now on, sockets the link opens in this process keep Nagle's algorithm."""
    from shared.link import transport

    opened = transport._Client._on_socket_open

    def on_socket_open(self: Any, client: Any, userdata: Any, sock: Any) -> None:
        opened(self, client, userdata, sock)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)

    transport._Client._on_socket_open = on_socket_open  # type: ignore[method-assign]


if __name__ == "__main__":
    allow_nagle()
    from headoffice.cli import main

    sys.exit(main())
