"""Commit bodies as stored: raw deflate with the journal's preset dictionary (dicts.py), and
the parse of a body back into its records' exact hashed texts (chain.py)."""

from __future__ import annotations

import json
import zlib
from typing import Any

from controller.journal.errors import RecordDamaged

DEFLATE_LEVEL = 9


class Codec:
    """Commit bodies: raw deflate (RFC 1951) with the journal's preset dictionary (meta
    `deflate_dict`, UTF-8; empty: none). Inflate with any zlib: `zlib.decompressobj(-15,
    zdict=dict)`."""

    def __init__(self, zdict: str) -> None:
        self.zdict = zdict.encode("utf-8")
        # Made by the first pack: a level-9 deflate state is ~0.4 MB and most codecs only read
        # (the daemon's start makes several; issue 31).
        self._deflate: Any = None

    def pack(self, text: str) -> bytes:
        if self._deflate is None:
            args: tuple[bytes, ...] = (self.zdict,) if self.zdict else ()
            # Primed once: a copy per commit does not hash the dictionary again.
            self._deflate = zlib.compressobj(DEFLATE_LEVEL, zlib.DEFLATED, -15, 9,
                                             zlib.Z_DEFAULT_STRATEGY, *args)
        c = self._deflate.copy()
        return c.compress(text.encode("utf-8")) + c.flush()

    def unpack(self, body: Any) -> str:
        """The body's text; ValueError if it is not one complete deflate stream of UTF-8."""
        if not isinstance(body, bytes):
            raise RecordDamaged("commit body is not a blob")
        d = zlib.decompressobj(-15, zdict=self.zdict) if self.zdict else zlib.decompressobj(-15)
        try:
            out = d.decompress(body) + d.flush()
        except zlib.error as exc:
            raise RecordDamaged(f"commit body does not inflate: {exc}") from exc
        if not d.eof or d.unused_data:
            raise RecordDamaged("commit body is not one complete deflate stream")
        try:
            return out.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordDamaged(f"commit body is not UTF-8: {exc}") from exc


_DECODER = json.JSONDecoder()


def parse_body(text: str) -> list[tuple[str, list[Any]]]:
    """A commit body's records: each one's exact stored text (what is hashed) and its value.
    ValueError unless it is `[element,element,...]` with nothing else, each a well-formed record."""
    if len(text) < 3 or text[0] != "[" or text[-1] != "]":
        raise RecordDamaged("commit body is not a non-empty JSON array")
    out = []
    i, end = 1, len(text) - 1
    while True:
        try:
            value, j = _DECODER.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            raise RecordDamaged(f"commit body is not JSON: {exc}") from exc
        if not (isinstance(value, list) and len(value) == 6 and isinstance(value[0], str)
                and type(value[1]) is int and isinstance(value[2], str)
                and type(value[3]) is int and isinstance(value[4], dict)
                and (value[5] is None or isinstance(value[5], dict))):
            raise RecordDamaged("commit body holds a malformed record")
        out.append((text[i:j], value))
        if j == end:
            return out
        if text[j] != "," or j + 1 >= end:
            raise RecordDamaged("commit body is not a JSON array of records")
        i = j + 1


def snapshot_text(state: Any) -> str:
    """A stored snapshot's JSON text: TEXT, or (schema 2) a raw-deflated BLOB of it."""
    if isinstance(state, bytes):
        return Codec("").unpack(state)
    return str(state)
