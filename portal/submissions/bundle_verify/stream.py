"""The three overlapping stages of a bundle's way in: read and copy, inflate, hand the tar stream on."""

from __future__ import annotations

import hashlib
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from contracts.inflate import InflateError, gzip_inflater
from portal.submissions.bundle_verify.types import BundleLimits, BundleRejected, ByteSink, ByteSource, MiB

_READ_CHUNK = 1 * MiB
_INFLATE_SLICE = 256 * 1024
_INFLATE_OUT = 1 * MiB
_QUEUE_DEPTH = 8
_POLL = 0.1
_GZIP_MAGIC = b"\x1f\x8b"
_END = object()


class Pipeline:
    def __init__(self, source: ByteSource, sink: ByteSink, limits: BundleLimits):
        self.source, self.sink, self.limits = source, sink, limits
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.raw_q: queue.Queue[Any] = queue.Queue(maxsize=_QUEUE_DEPTH)
        self.out_q: queue.Queue[Any] = queue.Queue(maxsize=_QUEUE_DEPTH)
        self.archive_hash = hashlib.sha256()
        self.archive_bytes = 0
        self.inflated_bytes = 0
        self.threads = [
            threading.Thread(target=self._guard, args=(self._read_raw,), name="bundle-reader", daemon=True),
            threading.Thread(target=self._guard, args=(self._inflate,), name="bundle-inflater", daemon=True),
        ]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            # The reader may sit in source.read() on a slow client; it exits after that read returns.
            thread.join(timeout=30)

    def _guard(self, stage: Callable[[], None]) -> None:
        try:
            stage()
        except BaseException as exc:  # handed to the caller's thread, which re-raises it
            if self.error is None:
                self.error = exc
            self.stop.set()

    def put(self, q: queue.Queue[Any], item: Any) -> bool:
        while not self.stop.is_set():
            try:
                q.put(item, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    def get(self, q: queue.Queue[Any]) -> Any:
        while True:
            try:
                return q.get(timeout=_POLL)
            except queue.Empty:
                if self.error is not None:
                    raise self.error from None
                if self.stop.is_set():
                    raise BundleRejected("corrupt_tar", "verification was interrupted") from None

    def _read_raw(self) -> None:
        cap = self.limits.max_compressed_bytes
        read, write, update = self.source.read, self.sink.write, self.archive_hash.update
        while not self.stop.is_set():
            chunk = read(_READ_CHUNK)
            if not chunk:
                break
            self.archive_bytes += len(chunk)
            if self.archive_bytes > cap:
                raise BundleRejected(
                    "too_large", f"the upload exceeds the {cap // MiB} MB limit for a compressed bundle")
            write(chunk)
            update(chunk)
            if not self.put(self.raw_q, chunk):
                return
        self.put(self.raw_q, _END)

    def _inflate(self) -> None:
        limits = self.limits
        fed = 0
        decomp: Any = None
        pending = b""  # too few bytes yet to tell a gzip header (or what follows the member)
        started = False
        emit = self.out_q
        while True:
            chunk = self.get(self.raw_q)
            if chunk is _END:
                break
            fed += len(chunk)
            data = memoryview(pending + chunk if pending else chunk)
            pending = b""
            while data:
                if decomp is None:
                    if started:  # after the gzip member only zero padding may follow
                        rest = bytes(data).lstrip(b"\0")
                        if len(rest) < 2:
                            pending = rest
                            break
                        if rest[:2] == _GZIP_MAGIC:
                            # tarfile's stream reader, the extraction for scoring, stops after the first member.
                            raise BundleRejected("multi_member_gzip", "the upload holds more than one gzip stream "
                                                 "(e.g. two .gz files joined); compress the tar archive once")
                        raise BundleRejected("corrupt_gzip", "unexpected data after the end of the gzip stream")
                    if len(data) < 2:
                        pending = bytes(data)
                        break
                    if data[:2] != _GZIP_MAGIC:
                        raise BundleRejected("not_gzip", "the upload is not a gzip-compressed tar archive (.tar.gz)")
                    decomp = gzip_inflater()
                    started = True
                piece, data = data[:_INFLATE_SLICE], data[_INFLATE_SLICE:]
                while piece:
                    try:
                        out = decomp.decompress(piece, _INFLATE_OUT)
                    except InflateError as exc:
                        raise BundleRejected("corrupt_gzip", f"the gzip stream is damaged ({exc})") from None
                    piece = decomp.unconsumed_tail
                    if out:
                        self.inflated_bytes += len(out)
                        if self.inflated_bytes > limits.max_uncompressed_bytes:
                            raise BundleRejected(
                                "uncompressed_too_large",
                                f"the bundle inflates to more than {limits.max_uncompressed_bytes // MiB} MB")
                        if (self.inflated_bytes > limits.ratio_grace_bytes
                                and self.inflated_bytes > limits.max_ratio * fed):
                            raise BundleRejected(
                                "ratio_exceeded",
                                f"the bundle inflates more than {limits.max_ratio:g}x its compressed size "
                                "(refused as a possible gzip bomb)")
                        if not self.put(emit, out):
                            return
                    if decomp.eof:
                        data = memoryview(decomp.unused_data + bytes(piece) + bytes(data))
                        decomp = None
                        break
        if not started:
            raise BundleRejected("not_gzip", "the upload is empty" if fed == 0 else
                                 "the upload is not a gzip-compressed tar archive (.tar.gz)")
        if pending:
            raise BundleRejected("corrupt_gzip", "unexpected data after the end of the gzip stream")
        if decomp is not None:
            raise BundleRejected("truncated", "the gzip stream ends early: the upload was cut off, send it again")
        self.put(emit, _END)


class TarFeed:
    """A forward-only reader over the inflated chunks: exact reads for headers, zero-copy for file data."""

    def __init__(self, pipeline: Pipeline):
        self._pipeline = pipeline
        self._chunks: deque[memoryview] = deque()
        self._eof = False

    def _fill(self) -> bool:
        if self._eof:
            return False
        item = self._pipeline.get(self._pipeline.out_q)
        if item is _END:
            self._eof = True
            return False
        self._chunks.append(memoryview(item))
        return True

    def consume(self, size: int, sink: Callable[[memoryview], Any] | None) -> int:
        """Pass the next `size` bytes to `sink` chunk by chunk (no copies); return how many there were."""
        left = size
        chunks = self._chunks
        while left > 0:
            if not chunks and not self._fill():
                break
            head = chunks[0]
            if len(head) <= left:
                chunks.popleft()
                piece = head
            else:
                piece, chunks[0] = head[:left], head[left:]
            if sink is not None:
                sink(piece)
            left -= len(piece)
        return size - left

    def read(self, size: int) -> bytes:
        """Up to `size` bytes (fewer only at the end of the stream)."""
        parts: list[memoryview] = []
        self.consume(size, parts.append)
        return b"".join(parts)

    def drain_zeros(self) -> None:
        while self._chunks or self._fill():
            chunk = self._chunks.popleft()
            if chunk.nbytes and bytes(chunk).count(0) != len(chunk):
                raise BundleRejected("corrupt_tar", "there is data after the end of the tar archive")
