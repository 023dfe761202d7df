"""The rules for manifest.json and for each result it lists (identity, sandbox, result file, outputs, layout)."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any

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
from contracts.client_identity import KEY as CLIENT_KEY
from contracts.client_identity import UNREADABLE, client_provenance, recorded_client
from contracts.sandbox_policy import sandbox_refusal
from portal.submissions.bundle_verify.members import MAX_COMPONENT_BYTES, Shipped, load_json, task_info_timeout
from portal.submissions.bundle_verify.types import MAX_ATTEMPT, BundleRejected, VerifiedEntry, VerifiedOutput
from scoring.engine.taskdef import mapping_at


def as_lookup(known: Callable[[str], bool] | Collection[str]) -> Callable[[str], bool]:
    if callable(known):
        return known
    return known.__contains__


def parse_manifest(raw: bytes | None) -> dict[str, Any]:
    if raw is None:
        raise BundleRejected("no_manifest", "the top-level directory has no manifest.json")
    manifest = load_json(raw, "bad_manifest", "manifest.json")
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


def _check_digest(path: str, shipped: Shipped | None, sha256: Any, size: Any) -> None:
    if shipped is None:
        raise BundleRejected("missing_file", f"{path}: listed in the manifest but not in the archive")
    if type(size) is not int or not isinstance(sha256, str):
        raise BundleRejected("bad_manifest", f"{path}: the manifest entry needs a sha256 string and an int bytes")
    if shipped.bytes != size:
        raise BundleRejected("size_mismatch", f"{path}: {shipped.bytes} bytes, the manifest says {size}")
    if shipped.sha256 != sha256.lower():
        raise BundleRejected("hash_mismatch", f"{path}: sha256 does not match the manifest")


def check_files_index(manifest: dict[str, Any], files: dict[str, Shipped]) -> set[str]:
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


def sandbox_subset(provenance: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
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
    client = recorded_client(provenance)
    if client is not None:
        # Which client made the result (our client records it; the official one does not).
        subset[CLIENT_KEY] = {"unreadable": True} if client == UNREADABLE else client_provenance(*client)
    if sandbox is not None:
        subset["sandbox"] = {key: sandbox.get(key) for key in
                             ("requested_mode", "effective_mode", "enforcement_status", "verification_status",
                              "image_identity") if key in sandbox}
    return subset, sandbox


def check_sandbox(base: str, sandbox: dict[str, Any] | None, accepted: Collection[str]) -> None:
    refusal = sandbox_refusal(sandbox, accepted)
    if refusal is not None:
        raise BundleRejected(refusal[0], f"{base}: {refusal[1]}")


def check_identity(item: dict[str, Any], seen: set[str], known: Callable[[str], bool]) -> tuple[str, str, str, int]:
    base = item.get("base_name")
    if not isinstance(base, str) or not base or "/" in base or "\\" in base or base in (".", ".."):
        raise BundleRejected("bad_identity", f"instances[]: base_name {repr(base)[:200]} is not a plain folder name")
    if len(base.encode("utf-8")) > MAX_COMPONENT_BYTES:  # it names a folder in the archive; keeps messages short
        raise BundleRejected("bad_identity",
                             f"instances[]: base_name {base[:80]}… is longer than {MAX_COMPONENT_BYTES} bytes")
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


def check_result(base: str, item: dict[str, Any], result: dict[str, Any] | None) -> None:
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


def check_outputs(base: str, item: dict[str, Any], files: dict[str, Shipped], result: dict[str, Any]
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


def check_layout(files: dict[str, Shipped], indexed: set[str], bases: set[str], output_members: set[str],
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



class InstanceChecks:
    """The rules for each `instances[]` entry of a manifest, and what they gather across entries
    for the layout check that follows (which members are outputs, which task-info files)."""

    def __init__(self, *, files: dict[str, Shipped], results: dict[str, dict[str, Any]],
                 raw_task_infos: dict[str, bytes], known: Callable[[str], bool],
                 accepted_sandbox_modes: Collection[str], expected_outputs: Callable[[str], list[str]]):
        self.files, self.results, self.raw_task_infos = files, results, raw_task_infos
        self.known, self.accepted_sandbox_modes, self.expected_outputs = known, accepted_sandbox_modes, expected_outputs
        self.seen: set[str] = set()
        self.output_members: set[str] = set()
        self.fti_members: set[str] = set()
        self.incomplete: list[str] = []
        self._result_bases: dict[tuple[str, str, int], str] = {}
        self._declared: dict[str, list[str]] = {}

    def entry(self, item: Any) -> VerifiedEntry:
        if not isinstance(item, dict):
            raise BundleRejected("bad_manifest", "instances[]: every entry must be an object")
        base, instance_id, task_id, attempt = check_identity(item, self.seen, self.known)
        self._check_one_result_per_identity(base, (instance_id, item["prompt_level"], attempt))
        for key in ("status", "agent_name"):
            if item.get(key) is not None and not isinstance(item[key], str):
                raise BundleRejected("bad_manifest", f"{base}: '{key}' must be a string")
        provenance, sandbox = sandbox_subset(item.get("provenance"))
        check_sandbox(base, sandbox, self.accepted_sandbox_modes)
        result = self.results.get(base)
        check_result(base, item, result)
        assert result is not None
        self._task_info(base, item, result)
        outputs, missing, members = check_outputs(base, item, self.files, result)
        self.output_members |= members
        if task_id not in self._declared:
            self._declared[task_id] = list(self.expected_outputs(task_id))
        shipped = {output.path for output in outputs}
        if any(name not in shipped for name in self._declared[task_id]):
            self.incomplete.append(base)
        status = str(item.get("status") or "")
        return VerifiedEntry(
            base_name=base, instance_id=instance_id, task_id=task_id, prompt_level=item["prompt_level"],
            attempt=attempt, status=status, agent_name=str(item.get("agent_name") or ""), provenance=provenance,
            outputs=outputs, missing_outputs=missing, timed_out_with_outputs=status == "timeout" and bool(outputs),
            evidence=result["evidence"], usage=result["usage"], scan=result.get("scan"),
        )

    def _check_one_result_per_identity(self, base: str, identity: tuple[str, str, int]) -> None:
        if identity in self._result_bases:
            instance_id, level, attempt = identity
            raise BundleRejected("duplicate_result", f"{base}: the same result as {self._result_bases[identity]} "
                                 f"({instance_id}, {level}, attempt {attempt}); list each result once")
        self._result_bases[identity] = base

    def _task_info(self, base: str, item: dict[str, Any], result: dict[str, Any]) -> None:
        """The framework_task_info.json an entry names, if any: only its timeout is read, as evidence."""
        fti = item.get("framework_task_info_file")
        if fti is None:
            return
        if fti != f"{INSTANCES_DIR}/{base}/{FRAMEWORK_TASK_INFO_NAME}":
            raise BundleRejected("bad_manifest", f"{base}: framework_task_info_file has an unexpected path")
        if fti not in self.files:
            raise BundleRejected("missing_file", f"{fti}: listed in the manifest but not in the archive")
        self.fti_members.add(fti)
        timeout = task_info_timeout(self.raw_task_infos.get(base))
        if type(timeout) is int and 0 < timeout <= 10**9:
            result["evidence"]["timeout_seconds"] = timeout
