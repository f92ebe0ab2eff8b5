"""What the two byte-stream parsers share (the framed codec in framing.py, the Alpha sign
protocol in alpha.py): a bounded buffer, resynchronisation on a start byte, and the counters.

A subclass's `feed` loops: `_to_start()` drops noise before the next start byte (counted as
`bytes_skipped`), then it parses one unit or waits for more bytes. A unit that fails its checks
is `_reject`ed: only its start byte is dropped, since a real unit may begin inside what looked
like this one. `flush` forgets a partial unit (the line went quiet mid-unit: `truncated`).
Nothing here raises on input.
"""

from __future__ import annotations

from collections import Counter


class StreamDecoder:
    START: int  # the byte every unit begins with
    BAD: str  # the counter of units that failed their checks

    def __init__(self, counters: Counter[str] | None = None) -> None:
        self.buffer = bytearray()
        self.counters: Counter[str] = counters if counters is not None else Counter()

    def _to_start(self) -> bool:
        """Skip to the next start byte; False (buffer emptied) when there is none."""
        buf = self.buffer
        start = buf.find(self.START)
        if start < 0:
            self.counters["bytes_skipped"] += len(buf)
            buf.clear()
            return False
        if start:
            self.counters["bytes_skipped"] += start
            del buf[:start]
        return True

    def _reject(self) -> None:
        self.counters[self.BAD] += 1
        del self.buffer[:1]

    def flush(self) -> None:
        """Forget a partial unit (the line went quiet mid-unit: it was truncated)."""
        if self.buffer:
            self.counters["truncated"] += 1
            self.buffer.clear()

    @property
    def pending(self) -> int:
        return len(self.buffer)
