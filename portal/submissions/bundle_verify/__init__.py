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
  file_too_large          one member exceeds `max_file_bytes` (or a JSON file its own, smaller cap: a result.json
                          may pass it only through long texts such as its agent log, see _OversizedResult), or
                          the result.json files together exceed `max_results_bytes`
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
  bad_result_json         a declared instance's result.json is not a JSON object (or nests too deeply, or its
                          identity or persisted outputs hold U+0000 or an unpaired surrogate; the agent's log and
                          other evidence text are cleaned instead)
  result_mismatch         result.json disagrees with the manifest entry (identity, level, attempt, status,
                          or a persisted output's sha256)
"""

from portal.submissions.bundle_verify.members import MAX_COMPONENT_BYTES
from portal.submissions.bundle_verify.types import (
    MAX_ATTEMPT,
    BundleLimits,
    BundleRejected,
    ByteSink,
    ByteSource,
    ResultMaterial,
    ResultScanner,
    VerifiedBundle,
    VerifiedEntry,
    VerifiedOutput,
)
from portal.submissions.bundle_verify.verify import verify_bundle_stream

__all__ = [
    "MAX_ATTEMPT",
    "MAX_COMPONENT_BYTES",
    "BundleLimits",
    "BundleRejected",
    "ByteSink",
    "ByteSource",
    "ResultMaterial",
    "ResultScanner",
    "VerifiedBundle",
    "VerifiedEntry",
    "VerifiedOutput",
    "verify_bundle_stream",
]
