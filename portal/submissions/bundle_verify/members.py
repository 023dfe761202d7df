"""The rules for each tar member (names, types, sizes) and what the scan keeps of the small JSON files."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from contracts.bundle import (
    FRAMEWORK_TASK_INFO_NAME,
    INSTANCES_DIR,
    MANIFEST_NAME,
    OUTPUTS_DIR,
    RESULT_NAME,
)
from portal.submissions.bundle_verify.stream import TarFeed
from portal.submissions.bundle_verify.tar_headers import BLOCK, LINK_TYPES, REGULAR_TYPES, Header, next_header
from portal.submissions.bundle_verify.types import BundleLimits, BundleRejected, MiB, ResultMaterial, ResultScanner
from portal.submissions.evidence import EvidenceLimits, agent_evidence
from portal.submissions.long_texts import LongTextTrimmer, StructureTooLarge
from portal.submissions.prices import price_table
from portal.submissions.scanners.model import OutputSample
from portal.submissions.usage import result_usage


@dataclass
class Shipped:
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
    if max(map(len, raw.encode("utf-8").split(b"/"))) > MAX_COMPONENT_BYTES:
        raise BundleRejected("name_too_long",
                             f"{raw[:200]}: a path component is longer than {MAX_COMPONENT_BYTES} bytes")
    return parts


MAX_COMPONENT_BYTES = 255  # a folder or file name, as most file systems allow


def _check_type(header: Header) -> None:
    kind = LINK_TYPES.get(header.typeflag)
    if kind is not None:
        raise BundleRejected("link_member", f"{header.name}: a {kind} is not allowed in a bundle")
    if header.typeflag not in REGULAR_TYPES and header.typeflag != b"5":
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
class Scan:
    top: str | None = None
    members: int = 0
    declared_bytes: int = 0
    tree: _PathTree = field(default_factory=_PathTree)
    files: dict[str, Shipped] = field(default_factory=dict)  # bundle-root relative path -> digest
    manifest: bytes | None = None
    # base_name -> raw result.json; parsed only for instances the manifest declares (it comes last).
    raw_results: dict[str, bytes] = field(default_factory=dict)
    raw_results_bytes: int = 0
    # base_name -> the long texts cut from an oversized result.json (_OversizedResult): kept end -> length
    result_cuts: dict[str, dict[str, int]] = field(default_factory=dict)
    # base_name -> raw framework_task_info.json when small: only its timeout is read, for reviewers.
    raw_task_infos: dict[str, bytes] = field(default_factory=dict)
    # base_name -> output path -> its start and end, when the verification scans results (else None).
    output_samples: dict[str, dict[str, OutputSample]] | None = None
    output_samples_bytes: int = 0
    outputs_unsampled: dict[str, int] = field(default_factory=dict)


class _Sampler:
    """Keeps the first `head` and the last `tail` bytes of a member of known `size` as it streams by."""

    def __init__(self, size: int, head: int, tail: int):
        self.size, self.head_cap = size, head
        self.tail_from = max(head, size - tail) if size > head else size
        self.head: list[bytes] = []
        self.tail: list[bytes] = []
        self.offset = 0

    def feed(self, piece: memoryview) -> None:
        start, end = self.offset, self.offset + len(piece)
        if start < self.head_cap:
            self.head.append(bytes(piece[: self.head_cap - start]))
        if end > self.tail_from:
            self.tail.append(bytes(piece[max(0, self.tail_from - start):]))
        self.offset = end

    def sample(self) -> OutputSample:
        return OutputSample(size=self.size, head=b"".join(self.head), tail=b"".join(self.tail))


def _parse_json(raw: bytes, code: str, what: str) -> Any:
    """json.loads that turns every way hostile JSON can fail (depth, huge ints, bad UTF-8) into `code`."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise BundleRejected(code, f"{what}: JSON nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, and ints over 4300 digits
        raise BundleRejected(code, f"{what}: not valid JSON ({str(exc)[:120]})") from None


def load_json(raw: bytes, code: str, what: str) -> Any:
    """`_parse_json`, refusing strings the database cannot store anywhere in the document."""
    data = _parse_json(raw, code, what)
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


_RESULT_IDENTITY = ("instance_id", "task_id", "prompt_level", "attempt", "status")


def _small_result_fields(rel: str, raw: bytes, limits: BundleLimits, cuts: dict[str, int],
                         scan: Callable[[dict[str, Any], int | None], Any] | None = None) -> dict[str, Any]:
    """What the Portal reads of one result.json: its identity and persisted outputs, which must be storable
    text as they are, and the agent's evidence, whose text (a binary or huge log) is cleaned and cut instead."""
    data = _parse_json(raw, "bad_result_json", rel)
    if not isinstance(data, dict):
        raise BundleRejected("bad_result_json", f"{rel}: the top level must be a JSON object")
    persisted: dict[str, str] = {}
    agent_output = data.get("agent_output")
    record = agent_output.get("persisted_outputs") if isinstance(agent_output, dict) else None
    identity: dict[str, Any] = {key: data[key] for key in _RESULT_IDENTITY if key in data}
    if record is not None:
        identity["agent_output"] = {"persisted_outputs": record}
    _check_storable_strings(identity, "bad_result_json", rel)
    files = record.get("files", []) if isinstance(record, dict) else []
    for item in files if isinstance(files, list) else []:
        if isinstance(item, dict) and isinstance(item.get("path"), str) and isinstance(item.get("sha256"), str) \
                and not item.get("missing"):
            persisted[item["path"]] = item["sha256"]
    fields = {key: data.get(key) for key in ("instance_id", "task_id")}
    evidence = agent_evidence(data, None, EvidenceLimits(log_tail_chars=limits.evidence_log_tail_chars))
    log = agent_output.get("log") if isinstance(agent_output, dict) else None
    log_chars = cuts.get(log) if isinstance(log, str) else None
    if log_chars is not None:  # only its end was read (_OversizedResult): the length is the JSON text's
        evidence.update(log_chars=max(log_chars, evidence["log_chars"]), log_chars_estimated=True)
    fields.update(prompt_level=data.get("prompt_level", ""), attempt=data.get("attempt", 1),
                  status=data.get("status", ""), persisted=persisted, evidence=evidence,
                  usage=result_usage(data, price_table()))
    if scan is not None:  # while the whole result is parsed: nothing of it is kept for later
        fields["scan"] = scan(data, log_chars)
    return fields


def scan_tar(feed: TarFeed, limits: BundleLimits, *, sample_outputs: bool = False) -> Scan:
    scan = Scan(output_samples={} if sample_outputs else None)
    while True:
        header = next_header(feed, limits)
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


def _scan_file(feed: TarFeed, size: int, rel: str, scan: Scan, limits: BundleLimits) -> None:
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
        if scan.raw_results_bytes + min(size, cap) > limits.max_results_bytes:
            raise BundleRejected("file_too_large", f"{rel}: the bundle's result.json files exceed "
                                 f"{limits.max_results_bytes // MiB} MB together")
    elif is_task_info and size <= _TASK_INFO_CAP:
        cap, keep = _TASK_INFO_CAP, []
    oversized = _OversizedResult(rel, limits) if is_result and size > cap else None
    if keep is not None and size > cap and oversized is None:
        raise BundleRejected("file_too_large", f"{rel}: {size} bytes exceeds the {_size(cap)} limit for this file")
    digest = hashlib.sha256()
    sampler = _output_sampler(scan, parts, size, limits)
    if sampler is not None:
        def hash_and_sample(piece: memoryview) -> None:
            digest.update(piece)
            sampler.feed(piece)
        got = feed.consume(size, hash_and_sample)
    elif oversized is not None:
        def hash_and_trim(piece: memoryview) -> None:
            digest.update(piece)
            oversized.feed(piece)
        got = feed.consume(size, hash_and_trim)
    elif keep is None:
        got = feed.consume(size, digest.update)
    else:
        def both(piece: memoryview) -> None:
            digest.update(piece)
            keep.append(piece)
        got = feed.consume(size, both)
    if got != size:
        raise BundleRejected("corrupt_tar", f"{rel}: the archive ends inside this file")
    feed.consume(-size % BLOCK, None)
    scan.files[rel] = Shipped(sha256=digest.hexdigest(), bytes=size)
    if sampler is not None and scan.output_samples is not None:
        scan.output_samples.setdefault(parts[1], {})["/".join(parts[3:])] = sampler.sample()
    if oversized is not None:
        raw, scan.result_cuts[parts[1]] = oversized.finish()
        scan.raw_results[parts[1]] = raw
        scan.raw_results_bytes += len(raw)
    elif keep is not None:
        raw = b"".join(keep)  # joined at once: the slices pin whole inflated chunks
        if rel == MANIFEST_NAME:
            scan.manifest = raw
        elif is_task_info:
            scan.raw_task_infos[parts[1]] = raw
        else:
            scan.raw_results[parts[1]] = raw
            scan.raw_results_bytes += size


_TASK_INFO_CAP = 64 * 1024


def _output_sampler(scan: Scan, parts: list[str], size: int, limits: BundleLimits) -> _Sampler | None:
    """A sampler for `instances/<base>/outputs/…` members while the bundle's sample budget lasts."""
    if scan.output_samples is None or len(parts) < 4 or parts[0] != INSTANCES_DIR or parts[2] != OUTPUTS_DIR:
        return None
    kept = min(size, limits.output_sample_head + limits.output_sample_tail)
    if scan.output_samples_bytes + kept > limits.output_samples_bytes:
        scan.outputs_unsampled[parts[1]] = scan.outputs_unsampled.get(parts[1], 0) + 1
        return None
    scan.output_samples_bytes += kept
    return _Sampler(size, limits.output_sample_head, limits.output_sample_tail)


def _size(n: int) -> str:
    return f"{n // MiB} MB" if n >= MiB else f"{n // 1024} KB"


class _OversizedResult:
    """A result.json over its cap is read in bounded memory: the official client records an agent's whole
    stdout in `agent_output.log`, so a long run's result is large through no fault of the submitter. Long
    texts keep only their end (more than the evidence keeps of a log); the rest must fit the cap."""

    def __init__(self, rel: str, limits: BundleLimits):
        tail = 24 * limits.evidence_log_tail_chars  # bytes: room for escapes and multibyte characters
        self.rel, self.cap = rel, limits.max_result_json_bytes
        self.trimmer = LongTextTrimmer(structure_cap=self.cap, long_text_bytes=max(2 * tail, 64 * 1024),
                                       tail_bytes=tail)

    def feed(self, piece: memoryview) -> None:
        try:
            self.trimmer.feed(piece)
        except StructureTooLarge:
            raise BundleRejected("file_too_large", f"{self.rel}: more than {_size(self.cap)} of JSON outside its "
                                 "long texts, the limit for a result.json (a long agent log is fine: only its end is "
                                 "read); rerun that result so it records less, or leave it out of the results "
                                 "directory") from None

    def finish(self) -> tuple[bytes, dict[str, int]]:
        return self.trimmer.finish()


def task_info_timeout(raw: bytes | None) -> Any:
    """`timeout_seconds` of a framework_task_info.json, or None: the file is optional (§3.4), never a refusal."""
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except (RecursionError, UnicodeDecodeError, ValueError):
        return None
    return data.get("timeout_seconds") if isinstance(data, dict) else None


def declared_results(manifest: dict[str, Any], scan: Scan, limits: BundleLimits,
                     scanner: ResultScanner | None = None) -> dict[str, dict[str, Any]]:
    """Parse result.json only for the instances the manifest names; others are never parsed. With a
    `scanner`, each parsed result is handed to it with its instance's output samples."""
    results: dict[str, dict[str, Any]] = {}
    for item in manifest["instances"]:
        base = item.get("base_name") if isinstance(item, dict) else None
        if isinstance(base, str) and base in scan.raw_results and base not in results:
            hook = _scan_hook(scanner, scan, base) if scanner is not None else None
            results[base] = _small_result_fields(f"{INSTANCES_DIR}/{base}/{RESULT_NAME}", scan.raw_results[base],
                                                 limits, scan.result_cuts.get(base, {}), hook)
    return results


def _scan_hook(scanner: ResultScanner, scan: Scan, base: str) -> Callable[[dict[str, Any], int | None], Any]:
    def hook(data: dict[str, Any], log_cut: int | None) -> Any:
        return scanner(ResultMaterial(base_name=base, result=data, outputs=(scan.output_samples or {}).get(base, {}),
                                      log_cut=log_cut, outputs_unsampled=scan.outputs_unsampled.get(base, 0)))
    return hook
