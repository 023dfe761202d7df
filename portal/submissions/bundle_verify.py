"""Streaming verification of an uploaded schema-v1 result bundle (client contract §3.6, §3.9).

Pure Python, no Django: the Portal's upload endpoint hands over the request stream and a temp file.
`verify_bundle_stream` reads the raw gzip body exactly once, copies every byte to the sink, and in the
same pass inflates and parses the tar stream, hashing each member as it goes by. Memory is bounded by
the caps (per-file index entries and small parsed fields), never by the bundle's byte size.

Three stages overlap on separate threads, because hashlib, zlib and file writes release the GIL:
  reader    source.read -> sink.write + sha256(archive)   (compressed-size cap)
  inflater  gzip inflate (ISA-L or zlib: inflate.py) in slices (uncompressed cap, ratio cap)
  caller    tar headers, member rules, sha256 per file      (member, per-file and size caps)
Every cap is checked before the bytes that would cross it are accepted, so a violation stops the
upload at that point. Scores the submitter wrote into result.json (`final_score`, `score_results`)
are never read. What the agent did (`agent_output.log`, `trajectory_summary`, `file_versions`, status,
timings, and `timeout_seconds` from a small framework_task_info.json) is kept per entry as
`evidence`, cut and cleaned by portal.submissions.evidence; it never refuses a bundle.

Reason codes of `BundleRejected` (`code`, plus a message naming the offending path or field):

  not_gzip                the body is empty or does not start with a gzip header
  corrupt_gzip            invalid deflate data, a bad CRC/length trailer, or garbage after the stream
  multi_member_gzip       a second gzip member after the first (tar readers that stop at the first one
                          would see another archive)
  truncated               the gzip stream ends before its trailer (an interrupted upload)
  too_large               the compressed body exceeds `max_compressed_bytes`
  uncompressed_too_large  the inflated tar (or the sum of member sizes) exceeds `max_uncompressed_bytes`
  ratio_exceeded          inflated/compressed exceeds `max_ratio` past `ratio_grace_bytes` (a gzip bomb)
  file_too_large          one member exceeds `max_file_bytes` (or a JSON file its own, smaller cap), or the
                          result.json files together exceed `max_results_bytes`
  too_many_members        more than `max_members` tar members
  corrupt_tar             the inflated data is not a well-formed tar stream, ends inside a member, or
                          has a negative size, a malformed or oversized PAX header, or a global PAX header
  ambiguous_name          a GNU or old-style tar header with a ustar `prefix` field, which tar readers
                          disagree about (Python's tarfile prepends it, POSIX readers do not)
  name_too_long           a member path over `max_name_bytes`, or a path component over 255 bytes
  path_too_deep           a member path with more than `max_path_depth` components
  non_utf8_name           a member name that is not valid UTF-8
  absolute_path           a member name starting with `/` or a drive letter
  path_traversal          a member name with a `..` component
  bad_path                empty or `.` components, a backslash, a NUL, a file used as a directory, or a file where
                          an earlier member put a directory
  link_member             a symbolic or hard link member
  special_member          a device, FIFO, sparse (GNU.sparse PAX keys) or other non-regular, non-directory member
  duplicate_member        the same path twice in the archive
  multiple_top_dirs       members outside the single top-level directory (or files at the root)
  no_manifest             no `<top>/manifest.json`
  bad_manifest            manifest.json is not a JSON object of the schema-v1 shape (a field of the wrong type,
                          or a string holding U+0000 or an unpaired surrogate, which the database cannot store)
  bad_schema_version      `submission_schema_version` is not 1
  bad_benchmark_repo      `benchmark_repo` is neither null nor a seed42 dataset name
  missing_file            a path the manifest indexes (files[], result_file, output_files) is not shipped
  size_mismatch           a shipped file's byte count differs from the manifest
  hash_mismatch           a shipped file's sha256 differs from the manifest
  unindexed_file          a shipped file the manifest does not list (files[], or output_files for files
                          named manifest.json)
  unexpected_file         a shipped file outside the bundle layout (§3.4), e.g. in an undeclared instance dir
  bad_identity            a malformed base_name, instance_id, attempt (1 to 1000000), or task_id not equal to the part
                          of instance_id before `__`
  wrong_seed              an instance id without a seed suffix, or with a seed other than seed42
  unknown_instance        an instance id that is not in the dataset
  bad_prompt_level        prompt_level outside b1-b4
  bad_base_name           base_name is not `<instance_id>__<level>[__attempt<N>]` with N == attempt
  duplicate_instance      two instances[] entries with one base_name
  duplicate_result        two instances[] entries with one (instance_id, prompt_level, attempt) under two base
                          names (`x__b1` and `x__b1__attempt1`): one result would count twice
  sandbox_policy          provenance.sandbox missing, its effective_mode not accepted, or `os` mode
                          without verification_status docker_container and an image_identity
  bad_result_json         a declared instance's result.json is not a JSON object (or nests too deeply, or has
                          a string holding U+0000 or an unpaired surrogate)
  result_mismatch         result.json disagrees with the manifest entry (identity, level, attempt, status,
                          or a persisted output's sha256)
"""

from __future__ import annotations

import hashlib
import json
import queue
import re
import threading
from collections import deque
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from contracts import PROMPT_LEVELS
from contracts.bundle import (
    FRAMEWORK_TASK_INFO_NAME,
    INSTANCES_DIR,
    MANIFEST_NAME,
    OUTPUTS_DIR,
    RESULT_NAME,
    RUN_METADATA_NAME,
    SUBMISSION_SCHEMA_VERSION,
    base_name_matches,
    is_seed42_repo,
    safe_relative_path,
    seed_number,
    task_id_of,
)
from contracts.inflate import InflateError, gzip_inflater
from contracts.sandbox_policy import sandbox_refusal
from portal.submissions.evidence import EvidenceLimits, agent_evidence
from scoring.engine.taskdef import mapping_at

MiB = 1 << 20
MAX_ATTEMPT = 1_000_000  # well inside the database's integer column
_READ_CHUNK = 1 * MiB
_INFLATE_SLICE = 256 * 1024
_INFLATE_OUT = 1 * MiB
_QUEUE_DEPTH = 8
_POLL = 0.1
_GZIP_MAGIC = b"\x1f\x8b"


class ByteSource(Protocol):
    """What the verifier reads from: a file, an upload, or the request body itself."""

    def read(self, size: int = -1, /) -> bytes: ...


class ByteSink(Protocol):
    def write(self, data: bytes, /) -> int: ...


@dataclass(frozen=True)
class BundleLimits:
    max_compressed_bytes: int = 512 * MiB
    max_uncompressed_bytes: int = 4096 * MiB
    max_members: int = 20_000
    max_file_bytes: int = 1024 * MiB
    max_ratio: float = 100.0
    ratio_grace_bytes: int = 16 * MiB
    max_manifest_bytes: int = 16 * MiB
    max_result_json_bytes: int = 8 * MiB
    max_results_bytes: int = 256 * MiB  # all result.json files together, held until the manifest is read
    max_name_bytes: int = 1024  # a member path, in UTF-8 bytes
    max_path_depth: int = 32  # components of a member path, the top-level folder included
    evidence_log_tail_chars: int = 16_000  # of each result's agent log, kept for reviewers


class BundleRejected(Exception):
    """The bundle is refused; `code` is one of the module's reason codes, `message` is for the submitter."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class VerifiedOutput:
    path: str  # relative to the instance's outputs/ dir, as the task declares it
    member: str  # relative to the bundle root, e.g. instances/<base>/outputs/<path>
    sha256: str
    bytes: int


@dataclass
class VerifiedEntry:
    base_name: str
    instance_id: str
    task_id: str
    prompt_level: str
    attempt: int
    status: str
    agent_name: str
    provenance: dict[str, Any]
    outputs: list[VerifiedOutput]
    missing_outputs: list[str]
    timed_out_with_outputs: bool
    evidence: dict[str, Any] = field(default_factory=dict)  # portal.submissions.evidence, capped


@dataclass
class VerifiedBundle:
    top_dir: str
    created_at: str | None
    framework_version: str | None
    note: str | None
    benchmark_repo: str | None
    instance_count: int
    run_metadata_included: bool
    entries: list[VerifiedEntry]
    incomplete_instances: list[str]
    archive_sha256: str
    archive_bytes: int
    uncompressed_bytes: int
    member_count: int
    # Any integrity failure is a rejection, so a returned bundle always has integrity_ok True.
    integrity_ok: bool = True


# --- the three-stage pipeline -----------------------------------------------------------------

_END = object()


class _Pipeline:
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


class _TarFeed:
    """A forward-only reader over the inflated chunks: exact reads for headers, zero-copy for file data."""

    def __init__(self, pipeline: _Pipeline):
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


# --- tar headers ------------------------------------------------------------------------------
# The verifier reads tar headers itself instead of through `tarfile`: a strict subset of POSIX
# ustar/pax (what Python's `tarfile` writes, contract §3.6) parsed in one linear pass. tarfile's
# own header code trusts sizes (negative PAX sizes send it backwards), runs regular expressions
# that are quadratic on crafted PAX records (CVE-2024-6232) and reads GNU sparse maps with
# unbounded `buf +=` loops; none of that is needed to read a bundle.

_BLOCK = 512
_ZERO_BLOCK = bytes(_BLOCK)
_PAX_BODY_CAP = 64 * 1024  # a bundle's PAX records hold a path and a few numbers; 64 KB is generous
_REGULAR_TYPES = (b"0", b"\0", b"7")
_LINK_TYPES = {b"1": "hard link", b"2": "symbolic link"}
_PAX_TYPES = (b"x", b"X")
_GNU_LONG_TYPES = (b"L", b"K")
_USTAR_MAGIC = b"ustar\x0000"


@dataclass
class _Header:
    name: str
    typeflag: bytes
    size: int


def _octal_or_base256(field: bytes, what: str) -> int:
    if field[:1] in (b"\x80", b"\xff"):  # GNU base-256, two's complement for 0xff
        value = int.from_bytes(field[1:], "big")
        if field[0] == 0xFF:
            value -= 256 ** (len(field) - 1)
    else:
        text = field.split(b"\0", 1)[0].strip()
        if text.translate(None, b"01234567"):
            raise BundleRejected("corrupt_tar", f"a tar header has an invalid {what} field")
        value = int(text, 8) if text else 0
    if value < 0:
        raise BundleRejected("corrupt_tar", f"a tar header declares a negative {what}")
    return value


def _check_checksum(block: bytes) -> None:
    stored = _octal_or_base256(block[148:156], "checksum")
    unsigned = 256 + sum(block[:148]) + sum(block[156:])
    if stored == unsigned:
        return
    high = sum(1 for b in block[:148] + block[156:] if b > 127)  # some old tars summed signed chars
    if stored != unsigned - 256 * high:
        raise BundleRejected("corrupt_tar", "the archive is not a valid tar stream (bad header checksum)")


def _parse_pax(body: bytes, limits: BundleLimits) -> dict[str, bytes]:
    """PAX records `"<len> <key>=<value>\\n"`, checked record by record (linear in the body)."""
    records: dict[str, bytes] = {}
    pos, end = 0, len(body)
    while pos < end and body[pos] != 0:
        space = body.find(b" ", pos, min(end, pos + 8))
        length = int(body[pos:space]) if space > pos and body[pos:space].isdigit() else 0
        stop = pos + length
        equals = body.find(b"=", space + 1, stop) if length else -1
        if equals <= space + 1 or stop > end or body[stop - 1] != 0x0A:
            raise BundleRejected("corrupt_tar", "a PAX extended header is malformed")
        key = body[space + 1:equals].decode("utf-8", "replace")
        value = body[equals + 1:stop - 1]
        if key.startswith("GNU.sparse."):
            raise BundleRejected("special_member", "sparse files are not allowed in a bundle")
        if key in ("path", "linkpath") and len(value) > limits.max_name_bytes:
            raise BundleRejected("name_too_long", f"a member name is longer than {limits.max_name_bytes} bytes")
        records[key] = value
        pos = stop
    if body.count(0, pos) != end - pos:
        raise BundleRejected("corrupt_tar", "a PAX extended header is malformed")
    return records


def _read_exact(feed: _TarFeed, size: int, what: str) -> bytes:
    data = feed.read(size)
    if len(data) != size:
        raise BundleRejected("corrupt_tar", f"the archive ends inside {what}")
    feed.consume(-size % _BLOCK, None)
    return data


def _next_header(feed: _TarFeed, limits: BundleLimits) -> _Header | None:
    """The next member's header with its PAX / GNU long name applied; None at the end of the archive."""
    pax: dict[str, bytes] | None = None
    long_name: bytes | None = None
    while True:
        block = feed.read(_BLOCK)
        if not block:
            return None  # like tarfile: a stream that stops at a header boundary ends the archive
        if len(block) != _BLOCK:
            raise BundleRejected("corrupt_tar", "the archive ends inside a tar header")
        if block == _ZERO_BLOCK:
            return None
        _check_checksum(block)
        typeflag = block[156:157]
        size = _octal_or_base256(block[124:136], "size")
        if typeflag in _PAX_TYPES or typeflag in _GNU_LONG_TYPES:
            if pax is not None or long_name is not None:
                raise BundleRejected("corrupt_tar", "two extended headers in a row")
            if size > _PAX_BODY_CAP:
                raise BundleRejected("corrupt_tar", f"a tar extended header is larger than {_PAX_BODY_CAP // 1024} KB")
            body = _read_exact(feed, size, "an extended header")
            if typeflag in _PAX_TYPES:
                pax = _parse_pax(body, limits)
            elif size > limits.max_name_bytes + 1:
                raise BundleRejected("name_too_long", f"a member name is longer than {limits.max_name_bytes} bytes")
            else:
                long_name = body.split(b"\0", 1)[0] if typeflag == b"L" else b""
            continue
        if typeflag == b"g":
            raise BundleRejected("corrupt_tar", "global PAX headers are not allowed in a bundle")
        if pax is not None and "size" in pax:
            raw_size = pax["size"]
            if not raw_size.isdigit():
                raise BundleRejected("corrupt_tar", f"a PAX size {raw_size[:40]!r} is not a non-negative integer")
            if len(raw_size) > 20:  # more than 2**64: no archive holds that
                raise BundleRejected("file_too_large", "a member declares a size beyond any limit")
            size = int(raw_size)
        if pax is not None and "path" in pax:
            raw_name = pax["path"]
        elif long_name:
            raw_name = long_name
        else:
            raw_name = block[:100].split(b"\0", 1)[0]
            prefix = block[345:500].split(b"\0", 1)[0]
            if prefix and block[257:265] != _USTAR_MAGIC:
                # POSIX readers ignore these bytes outside ustar; Python's tarfile (the extraction for
                # scoring) prepends them anyway: one member, two names.
                shown = raw_name.decode("utf-8", "replace")
                raise BundleRejected("ambiguous_name", f"{shown}: a GNU or old-style tar header carries a ustar "
                                     "name prefix; write the archive in POSIX (pax) format")
            if prefix:
                raw_name = prefix + b"/" + raw_name
        if len(raw_name) > limits.max_name_bytes:
            raise BundleRejected("name_too_long", f"a member name is longer than {limits.max_name_bytes} bytes")
        name = raw_name.decode("utf-8", "surrogateescape")
        if typeflag == b"\0" and name.endswith("/"):
            typeflag = b"5"
        if typeflag == b"5":
            name = name.rstrip("/")
        return _Header(name=name, typeflag=typeflag, size=size)


# --- member rules -----------------------------------------------------------------------------

@dataclass
class _Shipped:
    sha256: str
    bytes: int


def _check_name(raw: str, limits: BundleLimits) -> list[str]:
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise BundleRejected("non_utf8_name", f"{raw.encode('utf-8', 'surrogateescape')!r}: member names "
                             "must be UTF-8") from None
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":" and raw[0].isalpha()):
        raise BundleRejected("absolute_path", f"{raw}: absolute paths are not allowed in a bundle")
    parts = raw.split("/")
    if len(parts) > limits.max_path_depth:
        raise BundleRejected("path_too_deep", f"{raw[:200]}…: more than {limits.max_path_depth} path components")
    if ".." in parts:
        raise BundleRejected("path_traversal", f"{raw}: '..' is not allowed in a bundle path")
    if "\\" in raw or "" in parts or "." in parts:
        raise BundleRejected("bad_path", f"{raw}: empty or '.' path components and backslashes are not allowed")
    if "\0" in raw:
        raise BundleRejected("bad_path", f"{raw!r}: a NUL character is not allowed in a bundle path")
    if max(map(len, raw.encode("utf-8").split(b"/"))) > _NAME_MAX:
        raise BundleRejected("name_too_long", f"{raw[:200]}: a path component is longer than {_NAME_MAX} bytes")
    return parts


_NAME_MAX = 255


def _check_type(header: _Header) -> None:
    kind = _LINK_TYPES.get(header.typeflag)
    if kind is not None:
        raise BundleRejected("link_member", f"{header.name}: a {kind} is not allowed in a bundle")
    if header.typeflag not in _REGULAR_TYPES and header.typeflag != b"5":
        raise BundleRejected("special_member", f"{header.name}: only regular files and directories are allowed")


class _PathTree:
    """Every member path as a tree of components, so checking a path costs its length, not its depth squared."""

    _IMPLIED, _DIR, _FILE = 0, 1, 2

    def __init__(self) -> None:
        self._child: dict[tuple[int, str], int] = {}
        self._kind: list[int] = [self._DIR]
        self._has_children: list[bool] = [False]
        # Members come grouped by folder: remember where each parent folder's node is.
        self._parent_node: dict[str, int] = {}

    def add(self, name: str, parts: list[str], is_file: bool) -> None:
        parent = name.rpartition("/")[0]
        node = self._parent_node.get(parent, -1)
        if node < 0:
            node = self._walk(name, parts[:-1])
            self._parent_node[parent] = node
        node = self._walk(name, parts[-1:], node)
        if self._kind[node] != self._IMPLIED:
            raise BundleRejected("duplicate_member", f"{name}: appears twice in the archive")
        if is_file and self._has_children[node]:
            raise BundleRejected("bad_path", f"{name}: a regular file where earlier members put a directory")
        self._kind[node] = self._FILE if is_file else self._DIR

    def _walk(self, name: str, parts: list[str], node: int = 0) -> int:
        """The node of `parts` below `node`, creating implied folders; refuses to pass through a file."""
        for part in parts:
            if self._kind[node] == self._FILE:
                raise BundleRejected("bad_path", f"{name}: a parent path is a regular file")
            child = self._child.get((node, part))
            if child is None:
                child = len(self._kind)
                self._child[(node, part)] = child
                self._kind.append(self._IMPLIED)
                self._has_children.append(False)
                self._has_children[node] = True
            node = child
        return node


@dataclass
class _Scan:
    top: str | None = None
    members: int = 0
    declared_bytes: int = 0
    tree: _PathTree = field(default_factory=_PathTree)
    files: dict[str, _Shipped] = field(default_factory=dict)  # bundle-root relative path -> digest
    manifest: bytes | None = None
    # base_name -> raw result.json; parsed only for instances the manifest declares (it comes last).
    raw_results: dict[str, bytes] = field(default_factory=dict)
    raw_results_bytes: int = 0
    # base_name -> raw framework_task_info.json when small: only its timeout is read, for reviewers.
    raw_task_infos: dict[str, bytes] = field(default_factory=dict)


def _load_json(raw: bytes, code: str, what: str) -> Any:
    """json.loads that turns every way hostile JSON can fail (depth, huge ints, bad UTF-8) into `code`,
    and refuses strings the database cannot store."""
    try:
        data = json.loads(raw)
    except RecursionError:
        raise BundleRejected(code, f"{what}: JSON nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, and ints over 4300 digits
        raise BundleRejected(code, f"{what}: not valid JSON ({str(exc)[:120]})") from None
    _check_storable_strings(data, code, what)
    return data


def _check_storable_strings(data: Any, code: str, what: str) -> None:
    """Refuse U+0000 and unpaired surrogates in any key or string: valid JSON escapes that PostgreSQL
    text and jsonb (or the driver's UTF-8 encoding) refuse when the value is stored."""
    # Iterative, with one iterator per open container: memory follows the depth, not the item count.
    path: list[Any] = []
    stack: list[Iterator[tuple[Any, Any]]] = []
    value = data
    while True:
        if isinstance(value, str):
            _check_storable(value, code, what, path)
        elif isinstance(value, dict):
            stack.append(iter(value.items()))
            path.append(None)
        elif isinstance(value, list):
            stack.append(iter(enumerate(value)))
            path.append(None)
        while stack:
            step = next(stack[-1], None)
            if step is None:
                stack.pop()
                path.pop()
                continue
            path[-1], value = step
            if isinstance(path[-1], str):
                _check_storable(path[-1], code, what, path)
            break
        else:
            return


def _check_storable(text: str, code: str, what: str, path: list[Any]) -> None:
    if "\0" in text:
        problem = "a NUL character (U+0000), which cannot be stored"
    elif text.isascii():
        return
    else:
        try:
            text.encode("utf-8")
            return
        except UnicodeEncodeError:
            problem = "an unpaired surrogate escape (\\ud800-\\udfff), which is not valid text"
    where = "".join(f"[{key}]" if isinstance(key, int) else f".{key}" if key.isprintable() else f".{key!r}"
                    for key in path)[:200] or "the top level"
    raise BundleRejected(code, f"{what}: {where.lstrip('.')} holds {problem}")


def _small_result_fields(rel: str, raw: bytes, limits: BundleLimits) -> dict[str, Any]:
    data = _load_json(raw, "bad_result_json", rel)
    if not isinstance(data, dict):
        raise BundleRejected("bad_result_json", f"{rel}: the top level must be a JSON object")
    persisted: dict[str, str] = {}
    agent_output = data.get("agent_output")
    record = agent_output.get("persisted_outputs") if isinstance(agent_output, dict) else None
    files = record.get("files", []) if isinstance(record, dict) else []
    for item in files if isinstance(files, list) else []:
        if isinstance(item, dict) and isinstance(item.get("path"), str) and isinstance(item.get("sha256"), str) \
                and not item.get("missing"):
            persisted[item["path"]] = item["sha256"]
    fields = {key: data.get(key) for key in ("instance_id", "task_id")}
    fields.update(prompt_level=data.get("prompt_level", ""), attempt=data.get("attempt", 1),
                  status=data.get("status", ""), persisted=persisted,
                  evidence=agent_evidence(data, None, EvidenceLimits(log_tail_chars=limits.evidence_log_tail_chars)))
    return fields


def _scan_tar(feed: _TarFeed, limits: BundleLimits) -> _Scan:
    scan = _Scan()
    while True:
        header = _next_header(feed, limits)
        if header is None:
            break
        scan.members += 1
        if scan.members > limits.max_members:
            raise BundleRejected("too_many_members", f"the bundle has more than {limits.max_members} entries")
        name = header.name
        parts = _check_name(name, limits)
        _check_type(header)
        is_file = header.typeflag != b"5"
        scan.tree.add(name, parts, is_file)
        if scan.top is None:
            scan.top = parts[0]
        if parts[0] != scan.top:
            raise BundleRejected("multiple_top_dirs",
                                 f"{name}: the archive must hold exactly one top-level directory ({scan.top}/)")
        if len(parts) == 1:
            if is_file:
                raise BundleRejected("multiple_top_dirs", f"{name}: files at the archive root are not allowed")
            continue
        if not is_file:
            continue
        _scan_file(feed, header.size, "/".join(parts[1:]), scan, limits)
    feed.drain_zeros()
    return scan


def _scan_file(feed: _TarFeed, size: int, rel: str, scan: _Scan, limits: BundleLimits) -> None:
    if size > limits.max_file_bytes:
        raise BundleRejected("file_too_large", f"{rel}: {size} bytes exceeds the {limits.max_file_bytes // MiB} "
                             "MB per-file limit")
    scan.declared_bytes += size
    if scan.declared_bytes > limits.max_uncompressed_bytes:
        raise BundleRejected("uncompressed_too_large",
                             f"the bundle's files exceed {limits.max_uncompressed_bytes // MiB} MB in total")
    parts = rel.split("/")
    keep: list[memoryview] | None = None
    is_result = len(parts) == 3 and parts[0] == INSTANCES_DIR and parts[2] == RESULT_NAME
    is_task_info = len(parts) == 3 and parts[0] == INSTANCES_DIR and parts[2] == FRAMEWORK_TASK_INFO_NAME
    if rel == MANIFEST_NAME:
        cap, keep = limits.max_manifest_bytes, []
    elif is_result:
        cap, keep = limits.max_result_json_bytes, []
        if scan.raw_results_bytes + size > limits.max_results_bytes:
            raise BundleRejected("file_too_large", f"{rel}: the bundle's result.json files exceed "
                                 f"{limits.max_results_bytes // MiB} MB together")
    elif is_task_info and size <= _TASK_INFO_CAP:
        cap, keep = _TASK_INFO_CAP, []
    if keep is not None and size > cap:
        raise BundleRejected("file_too_large", f"{rel}: {size} bytes exceeds the {cap // MiB} MB limit for this file")
    digest = hashlib.sha256()
    if keep is None:
        got = feed.consume(size, digest.update)
    else:
        def both(piece: memoryview) -> None:
            digest.update(piece)
            keep.append(piece)
        got = feed.consume(size, both)
    if got != size:
        raise BundleRejected("corrupt_tar", f"{rel}: the archive ends inside this file")
    feed.consume(-size % _BLOCK, None)
    scan.files[rel] = _Shipped(sha256=digest.hexdigest(), bytes=size)
    if keep is not None:
        raw = b"".join(keep)  # joined at once: the slices pin whole inflated chunks
        if rel == MANIFEST_NAME:
            scan.manifest = raw
        elif is_task_info:
            scan.raw_task_infos[parts[1]] = raw
        else:
            scan.raw_results[parts[1]] = raw
            scan.raw_results_bytes += size


_TASK_INFO_CAP = 64 * 1024


def _task_info_timeout(raw: bytes | None) -> Any:
    """`timeout_seconds` of a framework_task_info.json, or None: the file is optional (§3.4), never a refusal."""
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except (RecursionError, UnicodeDecodeError, ValueError):
        return None
    return data.get("timeout_seconds") if isinstance(data, dict) else None


def _declared_results(manifest: dict[str, Any], raw_results: dict[str, bytes], limits: BundleLimits
                      ) -> dict[str, dict[str, Any]]:
    """Parse result.json only for the instances the manifest names; others are never parsed."""
    results: dict[str, dict[str, Any]] = {}
    for item in manifest["instances"]:
        base = item.get("base_name") if isinstance(item, dict) else None
        if isinstance(base, str) and base in raw_results and base not in results:
            results[base] = _small_result_fields(f"{INSTANCES_DIR}/{base}/{RESULT_NAME}", raw_results[base], limits)
    return results


# --- manifest rules ---------------------------------------------------------------------------

def _as_lookup(known: Callable[[str], bool] | Collection[str]) -> Callable[[str], bool]:
    if callable(known):
        return known
    return known.__contains__


def _parse_manifest(raw: bytes | None) -> dict[str, Any]:
    if raw is None:
        raise BundleRejected("no_manifest", "the top-level directory has no manifest.json")
    manifest = _load_json(raw, "bad_manifest", "manifest.json")
    if not isinstance(manifest, dict):
        raise BundleRejected("bad_manifest", "manifest.json must be a JSON object")
    version = manifest.get("submission_schema_version")
    if type(version) is not int or version != SUBMISSION_SCHEMA_VERSION:
        raise BundleRejected("bad_schema_version", f"submission_schema_version is {version!r}; this Portal reads "
                             f"version {SUBMISSION_SCHEMA_VERSION}")
    for key in ("instances", "files"):
        if not isinstance(manifest.get(key), list):
            raise BundleRejected("bad_manifest", f"manifest.json: '{key}' must be a list")
    if type(manifest.get("instance_count")) is not int or manifest["instance_count"] != len(manifest["instances"]):
        raise BundleRejected("bad_manifest", "manifest.json: instance_count does not match the instances list")
    for key in ("created_at", "framework_version", "note", "benchmark_repo"):
        if manifest.get(key) is not None and not isinstance(manifest[key], str):
            raise BundleRejected("bad_manifest", f"manifest.json: '{key}' must be a string or null")
    if not is_seed42_repo(manifest.get("benchmark_repo")):
        raise BundleRejected("bad_benchmark_repo", f"benchmark_repo {manifest['benchmark_repo']!r} is not the "
                             "seed42 dataset (use seed42 or Apexintelligence-AI/ASI-Bench-seed42, or leave it out)")
    return manifest


def _check_digest(path: str, shipped: _Shipped | None, sha256: Any, size: Any) -> None:
    if shipped is None:
        raise BundleRejected("missing_file", f"{path}: listed in the manifest but not in the archive")
    if type(size) is not int or not isinstance(sha256, str):
        raise BundleRejected("bad_manifest", f"{path}: the manifest entry needs a sha256 string and an int bytes")
    if shipped.bytes != size:
        raise BundleRejected("size_mismatch", f"{path}: {shipped.bytes} bytes, the manifest says {size}")
    if shipped.sha256 != sha256.lower():
        raise BundleRejected("hash_mismatch", f"{path}: sha256 does not match the manifest")


def _check_files_index(manifest: dict[str, Any], files: dict[str, _Shipped]) -> set[str]:
    indexed: set[str] = set()
    for item in manifest["files"]:
        path = item.get("path") if isinstance(item, dict) else None
        if not isinstance(path, str) or not safe_relative_path(path):
            raise BundleRejected("bad_manifest", f"files[]: {path!r} is not a safe relative path")
        if path in indexed:
            raise BundleRejected("bad_manifest", f"files[]: {path} is listed twice")
        indexed.add(path)
        _check_digest(path, files.get(path), item.get("sha256"), item.get("bytes"))
    return indexed


def _sandbox_subset(provenance: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    provenance = provenance if isinstance(provenance, dict) else {}
    agent = mapping_at(provenance, "agent")
    sandbox = provenance.get("sandbox") if isinstance(provenance.get("sandbox"), dict) else None
    subset: dict[str, Any] = {
        "agent": {key: agent.get(key) for key in
                  ("agent_name", "adapter_class", "tool_mode", "allow_external_tools", "cmd_template")
                  if key in agent},
    }
    config = mapping_at(agent, "config")
    # Only the configuration that identifies the run; anything else may hold credentials.
    described = {key: str(config[key])[:200] for key in ("model", "effort", "reasoning_effort") if config.get(key)}
    if described:
        subset["agent"]["config"] = described
    inputs = provenance.get("inputs")
    if inputs is not None:
        # The digest of the inputs the run was made from (our client records it; the official one does
        # not). Kept verbatim only when it can be one; anything else is kept as unreadable.
        digest = inputs.get("digest") if isinstance(inputs, dict) else None
        readable = isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest) is not None
        subset["inputs"] = {"digest": digest} if readable else {"unreadable": True}
    if sandbox is not None:
        subset["sandbox"] = {key: sandbox.get(key) for key in
                             ("requested_mode", "effective_mode", "enforcement_status", "verification_status",
                              "image_identity") if key in sandbox}
    return subset, sandbox


def _check_sandbox(base: str, sandbox: dict[str, Any] | None, accepted: Collection[str]) -> None:
    refusal = sandbox_refusal(sandbox, accepted)
    if refusal is not None:
        raise BundleRejected(refusal[0], f"{base}: {refusal[1]}")


def _check_identity(item: dict[str, Any], seen: set[str], known: Callable[[str], bool]) -> tuple[str, str, str, int]:
    base = item.get("base_name")
    if not isinstance(base, str) or not base or "/" in base or "\\" in base or base in (".", ".."):
        raise BundleRejected("bad_identity", f"instances[]: base_name {repr(base)[:200]} is not a plain folder name")
    if len(base.encode("utf-8")) > _NAME_MAX:  # it names a folder in the archive; and keeps messages short
        raise BundleRejected("bad_identity", f"instances[]: base_name {base[:80]}… is longer than {_NAME_MAX} bytes")
    if base in seen:
        raise BundleRejected("duplicate_instance", f"{base}: appears twice in the manifest's instances")
    seen.add(base)
    instance_id, task_id = item.get("instance_id"), item.get("task_id")
    if not isinstance(instance_id, str) or not instance_id:
        raise BundleRejected("bad_identity", f"{base}: instance_id is missing")
    number = seed_number(instance_id)
    if number is None:
        raise BundleRejected("wrong_seed", f"{base}: instance id {instance_id} has no seed suffix; only seed42 "
                             "instances can be submitted")
    if number != "42":
        raise BundleRejected("wrong_seed", f"{base}: instance id {instance_id} is seed{number}; only seed42 "
                             "instances can be submitted (score seed31415 locally with `asibench score`)")
    if not isinstance(task_id, str) or task_id != task_id_of(instance_id):
        raise BundleRejected("bad_identity", f"{base}: task_id {task_id!r} is not the part of {instance_id} "
                             "before '__'")
    if not known(instance_id):
        raise BundleRejected("unknown_instance", f"{base}: {instance_id} is not an instance of this dataset")
    level = item.get("prompt_level")
    if level not in PROMPT_LEVELS:
        raise BundleRejected("bad_prompt_level", f"{base}: prompt_level {level!r} is not one of b1, b2, b3, b4")
    attempt = item.get("attempt")
    if type(attempt) is not int or not 1 <= attempt <= MAX_ATTEMPT:
        raise BundleRejected("bad_identity", f"{base}: attempt {repr(attempt)[:40]} must be an integer from 1 "
                             f"to {MAX_ATTEMPT}")
    if not base_name_matches(base, instance_id, level, attempt):
        raise BundleRejected("bad_base_name", f"{base}: expected {instance_id}__{level} (attempt 1) or "
                             f"{instance_id}__{level}__attempt{attempt}")
    return base, instance_id, task_id, attempt


def _check_result(base: str, item: dict[str, Any], result: dict[str, Any] | None) -> None:
    path = f"{INSTANCES_DIR}/{base}/{RESULT_NAME}"
    if item.get("result_file") != path:
        raise BundleRejected("bad_manifest", f"{base}: result_file must be {path}")
    if result is None:
        raise BundleRejected("missing_file", f"{path}: listed in the manifest but not in the archive")
    for key, default in (("instance_id", None), ("task_id", None), ("prompt_level", ""), ("attempt", 1),
                         ("status", "")):
        if result.get(key) != item.get(key, default):
            raise BundleRejected("result_mismatch", f"{path}: {key} is {result.get(key)!r} but the manifest says "
                                 f"{item.get(key, default)!r}")


def _check_outputs(base: str, item: dict[str, Any], files: dict[str, _Shipped], result: dict[str, Any]
                   ) -> tuple[list[VerifiedOutput], list[str], set[str]]:
    prefix = f"{INSTANCES_DIR}/{base}/"
    listed = item.get("output_files", [])
    if not isinstance(listed, list):
        raise BundleRejected("bad_manifest", f"{base}: output_files must be a list")
    outputs: list[VerifiedOutput] = []
    missing: list[str] = []
    members: set[str] = set()
    for entry in listed:
        path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(path, str):
            raise BundleRejected("bad_manifest", f"{base}: an output_files entry has no path")
        if entry.get("missing"):
            missing.append(path)
            continue
        if not path.startswith(f"{OUTPUTS_DIR}/") or not safe_relative_path(path):
            raise BundleRejected("bad_manifest", f"{base}: output path {path!r} must be a safe path under outputs/")
        member = prefix + path
        if member in members:
            raise BundleRejected("bad_manifest", f"{member}: listed twice in output_files")
        members.add(member)
        shipped = files.get(member)
        _check_digest(member, shipped, entry.get("sha256"), entry.get("bytes"))
        assert shipped is not None
        rel = path[len(OUTPUTS_DIR) + 1:]
        claimed = result["persisted"].get(rel)
        if claimed is not None and claimed.lower() != shipped.sha256:
            raise BundleRejected("result_mismatch", f"{member}: sha256 differs from persisted_outputs in result.json")
        outputs.append(VerifiedOutput(path=rel, member=member, sha256=shipped.sha256, bytes=shipped.bytes))
    return outputs, missing, members


def _check_layout(files: dict[str, _Shipped], indexed: set[str], bases: set[str], output_members: set[str],
                  fti_members: set[str]) -> None:
    for path in files:
        parts = path.split("/")
        if path == MANIFEST_NAME:
            continue
        if parts[-1] == MANIFEST_NAME:
            # Named manifest.json: left out of files[] by the bundler, so it must be a declared output.
            if path not in output_members:
                raise BundleRejected("unindexed_file", f"{path}: not listed in its instance's output_files")
        elif path not in indexed:
            raise BundleRejected("unindexed_file", f"{path}: not listed in the manifest's files index")
        if path == RUN_METADATA_NAME:
            continue
        if parts[0] != INSTANCES_DIR or len(parts) < 3 or parts[1] not in bases:
            raise BundleRejected("unexpected_file", f"{path}: not part of any instance in the manifest")
        rest = parts[2:]
        if rest == [RESULT_NAME] or path in fti_members:
            continue
        if rest[0] != OUTPUTS_DIR or path not in output_members:
            raise BundleRejected("unexpected_file" if rest[0] != OUTPUTS_DIR else "unindexed_file",
                                 f"{path}: not listed in its instance's output_files")


def verify_bundle_stream(
    source: ByteSource,
    sink: ByteSink,
    limits: BundleLimits,
    known_instance_ids: Callable[[str], bool] | Collection[str],
    accepted_sandbox_modes: Collection[str],
    expected_outputs: Callable[[str], list[str]],
) -> VerifiedBundle:
    """Verify a `.tar.gz` bundle while copying it from `source` to `sink`; raise BundleRejected if refused.

    `source` is read to its end exactly once (unless a rule fails first: reading then stops at once, and
    `sink` holds a prefix that the caller should discard). `expected_outputs(task_id)` returns the
    task's declared output names; entries missing any of them are listed in `incomplete_instances`.
    """
    pipeline = _Pipeline(source, sink, limits)
    pipeline.start()
    try:
        scan = _scan_tar(_TarFeed(pipeline), limits)
        for thread in pipeline.threads:
            thread.join()
        if pipeline.error is not None:
            raise pipeline.error
    finally:
        pipeline.close()
    if scan.top is None:
        raise BundleRejected("corrupt_tar", "the archive is empty")

    manifest = _parse_manifest(scan.manifest)
    results = _declared_results(manifest, scan.raw_results, limits)
    files = scan.files
    indexed = _check_files_index(manifest, files)
    if bool(manifest.get("run_metadata_included")) != (RUN_METADATA_NAME in files):
        raise BundleRejected("bad_manifest", "run_metadata_included does not match the archive")

    known = _as_lookup(known_instance_ids)
    seen: set[str] = set()
    result_bases: dict[tuple[str, str, int], str] = {}
    entries: list[VerifiedEntry] = []
    incomplete: list[str] = []
    output_members: set[str] = set()
    fti_members: set[str] = set()
    declared: dict[str, list[str]] = {}
    for item in manifest["instances"]:
        if not isinstance(item, dict):
            raise BundleRejected("bad_manifest", "instances[]: every entry must be an object")
        base, instance_id, task_id, attempt = _check_identity(item, seen, known)
        identity = (instance_id, item["prompt_level"], attempt)
        if identity in result_bases:
            raise BundleRejected("duplicate_result", f"{base}: the same result as {result_bases[identity]} "
                                 f"({instance_id}, {identity[1]}, attempt {attempt}); list each result once")
        result_bases[identity] = base
        for key in ("status", "agent_name"):
            if item.get(key) is not None and not isinstance(item[key], str):
                raise BundleRejected("bad_manifest", f"{base}: '{key}' must be a string")
        provenance, sandbox = _sandbox_subset(item.get("provenance"))
        _check_sandbox(base, sandbox, accepted_sandbox_modes)
        result = results.get(base)
        _check_result(base, item, result)
        assert result is not None
        fti = item.get("framework_task_info_file")
        if fti is not None:
            if fti != f"{INSTANCES_DIR}/{base}/{FRAMEWORK_TASK_INFO_NAME}":
                raise BundleRejected("bad_manifest", f"{base}: framework_task_info_file has an unexpected path")
            if fti not in files:
                raise BundleRejected("missing_file", f"{fti}: listed in the manifest but not in the archive")
            fti_members.add(fti)
            timeout = _task_info_timeout(scan.raw_task_infos.get(base))
            if type(timeout) is int and 0 < timeout <= 10**9:
                result["evidence"]["timeout_seconds"] = timeout
        outputs, missing, members = _check_outputs(base, item, files, result)
        output_members |= members
        if task_id not in declared:
            declared[task_id] = list(expected_outputs(task_id))
        shipped = {output.path for output in outputs}
        if any(name not in shipped for name in declared[task_id]):
            incomplete.append(base)
        status = str(item.get("status") or "")
        entries.append(VerifiedEntry(
            base_name=base, instance_id=instance_id, task_id=task_id, prompt_level=item["prompt_level"],
            attempt=attempt, status=status, agent_name=str(item.get("agent_name") or ""), provenance=provenance,
            outputs=outputs, missing_outputs=missing, timed_out_with_outputs=status == "timeout" and bool(outputs),
            evidence=result["evidence"],
        ))
    _check_layout(files, indexed, seen, output_members, fti_members)

    return VerifiedBundle(
        top_dir=scan.top,
        created_at=manifest.get("created_at"),
        framework_version=manifest.get("framework_version"),
        note=manifest.get("note"),
        benchmark_repo=manifest.get("benchmark_repo"),
        instance_count=len(entries),
        run_metadata_included=RUN_METADATA_NAME in files,
        entries=entries,
        incomplete_instances=incomplete,
        archive_sha256=pipeline.archive_hash.hexdigest(),
        archive_bytes=pipeline.archive_bytes,
        uncompressed_bytes=pipeline.inflated_bytes,
        member_count=scan.members,
    )
