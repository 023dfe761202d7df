"""The gzip inflater behind bundle intake: ISA-L's igzip when `isal` is importable, zlib otherwise.

Both expose zlib's decompressobj interface (`decompress(data, max_length)`, `unconsumed_tail`,
`unused_data`, `eof`), so the verifier drives either the same way. ISA-L inflates about twice as
fast as zlib on x86-64 and, like zlib, releases the GIL while it works. `ASIBENCH_INFLATE=zlib`
forces the fallback (for comparison and for the tests that prove both give the same verdicts).
"""

from __future__ import annotations

import os
import zlib
from typing import Any

isal_zlib: Any
try:  # optional: the client works without it, the Portal pins it
    from isal import isal_zlib
except ImportError:  # pragma: no cover - exercised where isal is not installed
    isal_zlib = None

GZIP_WBITS = 31  # a gzip header and trailer around one deflate stream


class InflateError(Exception):
    """Invalid deflate data, or a bad gzip header or trailer (CRC, length)."""


def inflate_backend() -> str:
    """Which library `gzip_inflater` uses here: "isal" or "zlib"."""
    if isal_zlib is not None and os.environ.get("ASIBENCH_INFLATE", "").strip().lower() != "zlib":
        return "isal"
    return "zlib"


class _Inflater:
    """zlib's decompressobj interface, with both libraries' errors raised as InflateError."""

    __slots__ = ("_obj", "_errors")

    def __init__(self, backend: str):
        module: Any = isal_zlib if backend == "isal" else zlib
        self._obj = module.decompressobj(wbits=GZIP_WBITS)
        self._errors = (zlib.error, module.error)

    def decompress(self, data: bytes | memoryview, max_length: int = 0) -> bytes:
        try:
            return self._obj.decompress(data, max_length)
        except self._errors as exc:
            raise InflateError(str(exc)) from None

    @property
    def unconsumed_tail(self) -> bytes:
        return self._obj.unconsumed_tail

    @property
    def unused_data(self) -> bytes:
        return self._obj.unused_data

    @property
    def eof(self) -> bool:
        return self._obj.eof


def gzip_inflater(backend: str | None = None) -> _Inflater:
    """A fresh inflater for one gzip member (`backend`: "isal", "zlib", or None for the best here)."""
    return _Inflater(backend or inflate_backend())
