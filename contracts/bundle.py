"""The schema-v1 result bundle: one definition for `asibench submit` and the Portal's intake.

Pure: standard library only, no Django, no network. The layout, the manifest and the archive
match what the official `asibench` 0.2.0 client writes (client contract §3.3-3.6), so a bundle
built here and one built there are interchangeable for the Portal's verifier
(`portal.submissions.bundle_verify`).
"""

from __future__ import annotations

import json
import re
import shutil
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contracts.digests import sha256_bytes, sha256_file

SUBMISSION_SCHEMA_VERSION = 1
FRAMEWORK_VERSION = "0.2.0"
MANIFEST_NAME = "manifest.json"
RUN_METADATA_NAME = "run_metadata.json"
RESULT_NAME = "result.json"
FRAMEWORK_TASK_INFO_NAME = "framework_task_info.json"
INSTANCES_DIR = "instances"
OUTPUTS_DIR = "outputs"

OFFICIAL_SEED_NUMBER = "42"
OFFICIAL_SEED = f"seed{OFFICIAL_SEED_NUMBER}"
SEED42_REPO = "Apexintelligence-AI/ASI-Bench-seed42"
SEED42_REPO_NAMES = frozenset({OFFICIAL_SEED, SEED42_REPO})

SEED_SUFFIX_RE = re.compile(r"(?:^|_)seed(?P<number>[0-9]+)$")

# Files one level deep in a results dir that are never per-instance results (contract §3.3).
EXCLUDED_RESULT_NAMES = frozenset({
    RUN_METADATA_NAME,
    "eval_config.json",
    "task_info.json",
    FRAMEWORK_TASK_INFO_NAME,
    "instance_meta.json",
})
EXCLUDED_RESULT_MARKERS = (".trajectory.", ".agent_model_output.")



# --- identity rules --------------------------------------------------------------------------

def seed_number(instance_id: str) -> str | None:
    """The digits of the final `seed<N>` token (`…_seed42`, `seed42`), or None without one."""
    match = SEED_SUFFIX_RE.search(instance_id)
    return match.group("number") if match else None


def task_id_of(instance_id: str) -> str | None:
    """`task_id` is the part of the instance id before the first `__`; None if there is no `__`."""
    task_id, sep, rest = instance_id.partition("__")
    return task_id if sep and task_id and rest else None


def base_name_matches(base_name: str, instance_id: str, prompt_level: str, attempt: int) -> bool:
    """`<instance_id>__<level>` optionally followed by `__attempt<N>` with N == attempt (contract §3.9.5)."""
    plain = f"{instance_id}__{prompt_level}"
    # Compared as text: int() of a crafted run of thousands of digits raises (CPython's conversion
    # limit), and one attempt has one spelling (no leading zeros).
    return (base_name == plain and attempt == 1) or base_name == f"{plain}__attempt{attempt}"


def is_seed42_repo(name: str | None) -> bool:
    return name is None or name in SEED42_REPO_NAMES


# --- results scan and the submit-time checks -------------------------------------------------

class BundleBuildError(ValueError):
    """A results dir that cannot be bundled; the message is for the submitter."""


@dataclass(frozen=True)
class ResultRecord:
    path: Path
    data: dict[str, Any]

    @property
    def base_name(self) -> str:
        return self.path.stem

    @property
    def instance_id(self) -> str:
        return str(self.data.get("instance_id") or "")


def _path_key(path: Path) -> tuple[str, ...]:
    # pathlib orders paths part by part; sorting on the parts keeps our order equal to the official one.
    return path.parts


def scan_results(results_dir: Path) -> list[ResultRecord]:
    """Every per-instance result JSON at `<results_dir>/*/*.json`, in path order (contract §3.3)."""
    records: list[ResultRecord] = []
    for path in sorted(results_dir.glob("*/*.json"), key=_path_key):
        name = path.name
        if name in EXCLUDED_RESULT_NAMES or any(marker in name for marker in EXCLUDED_RESULT_MARKERS):
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(data, dict) and "task_id" in data and "instance_id" in data:
            records.append(ResultRecord(path=path, data=data))
    return records


def _shown(items: list[str]) -> str:
    return ", ".join(items[:5])


def validate_records(records: list[ResultRecord], benchmark_repo: str | None) -> None:
    """The submit-time checks, with the official client's messages (contract §3.2 step 2).

    One deliberate difference: the sandbox *mode* is not judged here — the Portal's dataset
    policy decides which modes it accepts and says so when it refuses. A result without any
    `provenance.sandbox` record is refused, since no policy can accept it.
    """
    missing_seed: list[str] = []
    wrong_seed: list[str] = []
    no_sandbox: list[str] = []
    for record in records:
        instance_id = record.instance_id or "<missing instance_id>"
        number = seed_number(record.instance_id)
        if number is None:
            missing_seed.append(instance_id)
        elif number != OFFICIAL_SEED_NUMBER:
            wrong_seed.append(f"{instance_id} (seed{number})")
        provenance = record.data.get("provenance")
        sandbox = provenance.get("sandbox") if isinstance(provenance, dict) else None
        if not isinstance(sandbox, dict) or not sandbox.get("effective_mode"):
            no_sandbox.append(instance_id)
    if missing_seed:
        raise BundleBuildError(
            "Official result submission requires every instance_id to end in an official seed suffix; "
            f"expected {OFFICIAL_SEED}. Invalid: {_shown(missing_seed)}"
        )
    if wrong_seed:
        raise BundleBuildError(
            f"Official result submission only accepts {OFFICIAL_SEED}; score seed31415 locally with "
            f"`asibench score`. Rejected: {_shown(wrong_seed)}"
        )
    if no_sandbox:
        raise BundleBuildError(
            "Every result must record the sandbox it ran in (provenance.sandbox with an effective_mode); "
            f"re-run these with a current `asibench run`. Invalid: {_shown(no_sandbox)}"
        )
    if not is_seed42_repo(benchmark_repo):
        raise BundleBuildError(
            f"benchmark_repo must identify the official seed42 dataset ({SEED42_REPO}), got {benchmark_repo!r}"
        )


# --- building ---------------------------------------------------------------------------------

@dataclass
class BundleEntry:
    base_name: str
    instance_id: str
    task_id: str
    missing_outputs: list[str] = field(default_factory=list)
    output_count: int = 0


@dataclass
class BundleSummary:
    bundle_dir: Path
    manifest: dict[str, Any]
    entries: list[BundleEntry]
    run_metadata_included: bool

    @property
    def instance_count(self) -> int:
        return len(self.entries)

    @property
    def entries_missing_outputs(self) -> list[BundleEntry]:
        return [entry for entry in self.entries if entry.missing_outputs]


def utc_created_at(now: datetime | None = None) -> str:
    """ISO-8601 UTC with a trailing `Z`, microseconds unless zero — as `datetime.isoformat` does."""
    return (now or datetime.now(UTC)).isoformat().replace("+00:00", "Z")


def safe_relative_path(rel: str) -> bool:
    """A relative POSIX path with no empty, `.` or `..` component and no backslash."""
    if not rel or rel.startswith("/") or "\\" in rel:
        return False
    return all(part not in ("", ".", "..") for part in rel.split("/"))


def find_framework_task_info(results_dir: Path, instance_id: str) -> Path | None:
    candidate = results_dir / INSTANCES_DIR / instance_id / FRAMEWORK_TASK_INFO_NAME
    if candidate.is_file():
        return candidate
    for match in results_dir.glob(f"{INSTANCES_DIR}/{instance_id}/**/{FRAMEWORK_TASK_INFO_NAME}"):
        if match.is_file():
            return match
    return None


def _iter_bundle_files(bundle_dir: Path) -> Iterator[Path]:
    for path in sorted(bundle_dir.rglob("*"), key=lambda p: p.relative_to(bundle_dir).parts):
        if path.is_file() and path.name != MANIFEST_NAME:
            yield path


def files_index(bundle_dir: Path) -> list[dict[str, Any]]:
    """`{path, sha256, bytes}` of every regular file except those named manifest.json, in path order."""
    return [
        {"path": path.relative_to(bundle_dir).as_posix(), "sha256": sha256_file(path), "bytes": path.stat().st_size}
        for path in _iter_bundle_files(bundle_dir)
    ]


def _copy_outputs(record: ResultRecord, instance_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    agent_output = record.data.get("agent_output") or {}
    persisted = (agent_output.get("persisted_outputs") if isinstance(agent_output, dict) else None) or {}
    source_dir = record.path.parent / f"{record.base_name}.outputs"
    output_files: list[dict[str, Any]] = []
    missing: list[str] = []
    for item in persisted.get("files", []) if isinstance(persisted, dict) else []:
        rel = item.get("path") if isinstance(item, dict) else None
        if not rel or not isinstance(rel, str):
            continue
        source = source_dir / rel
        # Unlike the official bundler we never follow an unsafe path outside the outputs dir;
        # such an entry is shipped as missing and the Portal sees it as incomplete.
        if item.get("missing") or not safe_relative_path(rel) or not source.is_file():
            missing.append(rel)
            output_files.append({"path": rel, "missing": True})
            continue
        target = instance_dir / OUTPUTS_DIR / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        output_files.append({
            "path": f"{OUTPUTS_DIR}/{rel}", "sha256": sha256_file(target), "bytes": target.stat().st_size,
        })
    return output_files, missing


def build_bundle(
    results_dir: Path,
    out_dir: Path,
    note: str | None = None,
    benchmark_repo: str | None = None,
    *,
    records: list[ResultRecord] | None = None,
) -> BundleSummary:
    """Write the bundle directory `out_dir` (replaced if present) from an `asibench run` output dir.

    No policy is applied here (see `validate_records`), so tests can also build bundles the
    Portal must refuse.
    """
    results_dir = Path(results_dir)
    out_dir = Path(out_dir)
    if records is None:
        records = scan_results(results_dir)
    if not records:
        raise BundleBuildError(f"No per-instance result JSON found under {results_dir}. Run `asibench run ...` first.")
    resolved_out, resolved_results = out_dir.resolve(), results_dir.resolve()
    if resolved_out == resolved_results or resolved_out in resolved_results.parents:
        raise BundleBuildError(f"The bundle path {out_dir} would replace the results directory.")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    (out_dir / INSTANCES_DIR).mkdir(parents=True)

    entries: list[BundleEntry] = []
    manifest_instances: list[dict[str, Any]] = []
    for record in records:
        data, base_name = record.data, record.base_name
        instance_dir = out_dir / INSTANCES_DIR / base_name
        instance_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy2(record.path, instance_dir / RESULT_NAME)
        output_files, missing = _copy_outputs(record, instance_dir)
        fti_rel: str | None = None
        fti_source = find_framework_task_info(results_dir, str(data["instance_id"]))
        if fti_source is not None:
            shutil.copy2(fti_source, instance_dir / FRAMEWORK_TASK_INFO_NAME)
            fti_rel = f"{INSTANCES_DIR}/{base_name}/{FRAMEWORK_TASK_INFO_NAME}"
        entries.append(BundleEntry(
            base_name=base_name, instance_id=str(data["instance_id"]), task_id=str(data["task_id"]),
            missing_outputs=missing, output_count=len(output_files) - len(missing),
        ))
        manifest_instances.append({
            "base_name": base_name,
            "instance_id": data["instance_id"],
            "task_id": data["task_id"],
            "prompt_level": data.get("prompt_level", ""),
            "attempt": data.get("attempt", 1),
            "agent_name": data.get("agent_name", ""),
            "status": data.get("status", ""),
            "result_file": f"{INSTANCES_DIR}/{base_name}/{RESULT_NAME}",
            "framework_task_info_file": fti_rel,
            "output_files": output_files,
            "missing_outputs": missing,
            "provenance": data.get("provenance", {}),
        })

    run_metadata = results_dir / RUN_METADATA_NAME
    run_metadata_included = run_metadata.is_file()
    if run_metadata_included:
        shutil.copy2(run_metadata, out_dir / RUN_METADATA_NAME)

    manifest: dict[str, Any] = {
        "submission_schema_version": SUBMISSION_SCHEMA_VERSION,
        "created_at": utc_created_at(),
        "framework_version": FRAMEWORK_VERSION,
        "benchmark_repo": benchmark_repo,
        "note": note,
        "run_metadata_included": run_metadata_included,
        "instance_count": len(entries),
        "instances_missing_outputs": [entry.base_name for entry in entries if entry.missing_outputs],
        "instances": manifest_instances,
        "files": files_index(out_dir),
    }
    (out_dir / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
    return BundleSummary(bundle_dir=out_dir, manifest=manifest, entries=entries,
                         run_metadata_included=run_metadata_included)


def results_digest(results: Iterable[tuple[str, str, Iterable[tuple[str, str]]]]) -> str:
    """What identifies a run's results whatever bundle carries them, from (base_name, sha256 of its
    result.json, [(output path under outputs/, sha256)]) per result.

    Left out: the manifest (its created_at and note), the top folder's name, run_metadata.json (each
    `asibench run` rewrites it, even one that resumes and changes no result) and framework_task_info.json.
    So the same result files packed again, by either client, give the same digest; a changed result or
    output gives another.
    """
    lines = sorted(json.dumps([base, result_sha, sorted(outputs)], ensure_ascii=False)
                   for base, result_sha, outputs in results)
    return sha256_bytes("\n".join(lines).encode("utf-8"))


def write_archive(bundle_dir: Path, archive_path: Path, *, compresslevel: int = 9) -> Path:
    """`tar -czf` the way the official client does: tarfile `w:gz`, PAX, one top-level dir."""
    bundle_dir, archive_path = Path(bundle_dir), Path(archive_path)
    archive_path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive_path, "w:gz", format=tarfile.PAX_FORMAT, compresslevel=compresslevel) as tar:
        tar.add(bundle_dir, arcname=bundle_dir.name)
    return archive_path
