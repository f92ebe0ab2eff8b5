"""transport._BufferedTLS: paho's many small reads served from one TLS read (issue 17).

The end-to-end proof is tests/test_link_transport.py (a 3,000-message backlog through real TLS,
whole and in order); this checks the buffer's own contract with a socket that hands out fixed
chunks: bytes in order whatever the read sizes, `pending` counting what is buffered (the reader
reads on while it is not zero), and EOF and would-block passed through untouched.
"""

from __future__ import annotations

import ssl

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.link.transport import _BufferedTLS


class FakeTLS:
    def __init__(self, chunks: list[bytes], tls_pending: int = 0) -> None:
        self.chunks = chunks
        self.tls_pending = tls_pending
        self.reads = 0

    def recv(self, n: int) -> bytes:
        self.reads += 1
        if not self.chunks:
            raise ssl.SSLWantReadError("nothing yet")
        return self.chunks.pop(0)

    def pending(self) -> int:
        return self.tls_pending

    def fileno(self) -> int:
        return 7


@given(st.lists(st.binary(min_size=1, max_size=50), min_size=1, max_size=10),
       st.lists(st.integers(1, 40), min_size=1, max_size=200))
def test_bytes_come_out_in_order_whatever_the_read_sizes(chunks: list[bytes],
                                                          sizes: list[int]) -> None:
    fake = FakeTLS(list(chunks))
    buf = _BufferedTLS(fake)  # type: ignore[arg-type]
    got = b""
    for n in sizes:
        try:
            part = buf.recv(n)
        except ssl.SSLWantReadError:
            break
        assert 0 < len(part) <= n
        got += part
    assert b"".join(chunks).startswith(got)
    assert buf.pending() == len(b"".join(chunks)) - len(got) - sum(map(len, fake.chunks))
    assert fake.reads <= len(chunks) + 1  # one TLS read per chunk, not one per recv


def test_pending_eof_and_delegation() -> None:
    fake = FakeTLS([b"\x30\x05hello", b""], tls_pending=3)
    buf = _BufferedTLS(fake)  # type: ignore[arg-type]
    assert buf.pending() == 3  # nothing buffered yet: TLS's own count
    assert buf.recv(1) == b"\x30"
    assert buf.pending() == 6 + 3
    assert buf.recv(1) == b"\x05"
    assert buf.recv(100) == b"hello"
    assert buf.pending() == 3
    assert buf.recv(1) == b""  # EOF reaches paho as EOF
    assert buf.fileno() == 7 and buf.tls_pending == 3  # the rest is the socket's
    with pytest.raises(ssl.SSLWantReadError):
        buf.recv(1)
