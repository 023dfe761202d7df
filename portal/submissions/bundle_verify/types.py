"""What the verifier is given (limits, a source and a sink) and what it answers: a verified bundle or a refusal."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from portal.submissions.scanners.model import OutputSample

MiB = 1 << 20
MAX_ATTEMPT = 1_000_000  # well inside the database's integer column


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
    # What a verification that scans results (`scan_result`) keeps of each declared output: its start and
    # end, for the scanners' output checks; at most `output_samples_bytes` for the whole bundle.
    output_sample_head: int = 64 * 1024
    output_sample_tail: int = 16 * 1024
    output_samples_bytes: int = 32 * MiB


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


@dataclass(frozen=True)
class ResultMaterial:
    """One declared result.json as parsed, with the samples of its instance's output files, for a scanner.
    Its identity is the result's own word: the manifest checks come after (a refused bundle keeps nothing)."""

    base_name: str
    result: dict[str, Any]
    outputs: dict[str, OutputSample]  # path relative to the instance's outputs/ -> sample
    log_cut: int | None  # the log's length when only its end was read (an oversized result.json)
    outputs_unsampled: int = 0  # output files left unsampled once the bundle's sample budget was spent


ResultScanner = Callable[[ResultMaterial], Any]


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
    usage: dict[str, Any] = field(default_factory=dict)  # portal.submissions.usage.result_usage
    scan: Any = None  # what `scan_result` answered for this result, when the verification was given one


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
    # contracts.bundle.results_digest: the same results however (and by whichever client) they were packed.
    results_digest: str = ""
    # Any integrity failure is a rejection, so a returned bundle always has integrity_ok True.
    integrity_ok: bool = True
