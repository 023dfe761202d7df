"""Reading task directories and generating instances in the sandbox. No database here.

A task directory is trusted only as far as the sandbox lets it: its generator runs under
the configured backend with no network, a private scratch dir and time/memory limits.
"""

import gzip
import hashlib
import json
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from scoring.engine import anonymised_task_id, declared_outputs, digests, load_task, public_task_eval, static_validate
from scoring.engine.safe_yaml import untrusted_yaml_load
from scoring.engine.taskdef import PROMPT_LEVELS
from scoring.sandbox import Limits, SandboxBackend
from scoring.sandbox.outputs import UnsafeOutput, collect_outputs

TASK_ID_RE = re.compile(r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$")
REQUIRED_FILES = (
    "task_meta.yaml",
    "task_eval.yaml",
    "generate_gt.py",
    "prompt_b1.md",
    "prompt_b2.md",
    "prompt_b3.md",
    "prompt_b4.md",
    "reference_specs.md",
)
LOADABLE_STATUSES = {"sample", "final"}
# Keys of task_meta.yaml that are framework-internal or private; never shown publicly.
PRIVATE_META_KEYS = {"evaluation", "generation", "execution", "timeout"}
DEFAULT_AGENT_TIMEOUT = 10800


class TaskProblem(Exception):
    """A task directory that cannot enter the catalog, with the reason."""


class GenerationFailed(TaskProblem):
    pass


@dataclass(frozen=True)
class TaskSource:
    directory: Path
    task_id: str
    domain: str
    name: str
    version: str
    status: str
    public_meta: dict[str, Any]
    public_eval: dict[str, Any]
    prompts: dict[str, str]
    declared_outputs: list[dict[str, str]]
    source_hash: str
    generator_hash: str
    task: dict[str, Any]  # the merged definition (private)


def tree_hashes(root: Path) -> dict[str, str]:
    return digests.tree_hashes(root, skip=lambda path: "__pycache__" in path.parts)


def _hash_of_hashes(hashes: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()


def _public_meta(meta: dict[str, Any]) -> dict[str, Any]:
    public = {k: v for k, v in meta.items() if k not in PRIVATE_META_KEYS}
    output = dict(public.get("output") or {})
    output["files"] = [
        {k: f[k] for k in ("name", "type", "description") if k in f} for f in output.get("files") or []
    ]
    public["output"] = output
    return public


def read_task_dir(directory: Path, tasks_root: Path | None = None) -> TaskSource:
    missing = [name for name in REQUIRED_FILES if not (directory / name).is_file()]
    if not (directory / "solution").is_dir():
        missing.append("solution/")
    if missing:
        raise TaskProblem(f"missing required files: {', '.join(missing)}")
    try:
        meta = untrusted_yaml_load((directory / "task_meta.yaml").read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise TaskProblem(f"task_meta.yaml is not valid YAML: {exc}") from exc
    if not isinstance(meta, dict):
        raise TaskProblem("task_meta.yaml is not a mapping")
    task_id = str(meta.get("id", "")).strip()
    if not TASK_ID_RE.match(task_id):
        raise TaskProblem(f"bad task id {task_id!r}: expected '<domain>.<task_name>' in lowercase snake case")
    errors, _warnings = static_validate(directory, tasks_root)
    if errors:
        raise TaskProblem("; ".join(errors))
    status = str(meta.get("status", ""))
    if status not in LOADABLE_STATUSES:
        raise TaskProblem(f"status {status!r} is not loadable (only sample and final tasks enter the catalog)")
    task = load_task(directory)
    prompts_map = meta.get("prompts") or {}
    prompts = {
        level: (directory / prompts_map.get(level, f"prompt_{level}.md")).read_text(encoding="utf-8")
        for level in PROMPT_LEVELS
    }
    hashes = tree_hashes(directory)
    return TaskSource(
        directory=directory,
        task_id=task_id,
        domain=str(meta["domain"]),
        name=str(meta["name"]),
        version=str(meta["version"]),
        status=status,
        public_meta=_public_meta(meta),
        public_eval=public_task_eval(directory),
        prompts=prompts,
        declared_outputs=declared_outputs(task),
        source_hash=_hash_of_hashes(hashes),
        generator_hash=hashes["generate_gt.py"],
        task=task,
    )


def discover_task_dirs(tasks_root: Path) -> list[Path]:
    return sorted(
        p.parent
        for p in tasks_root.glob("*/*/task_meta.yaml")
        if not p.parent.name.startswith(("_", "."))
    )


def run_generator(
    source: TaskSource, params: dict[str, Any], scratch: Path, backend: SandboxBackend, limits: Limits
) -> Path:
    """Run generate_gt.py in the sandbox; return a host-made copy of the instance it generated.

    `limits` come from the server (never from the task's own YAML). The generator writes
    below `scratch/sandbox`; only its regular files are copied, link-safely, into the fresh
    `scratch/instance`, which is what the caller reads and adds host-authored files to.
    """
    workdir = scratch / "sandbox"
    out_dir = workdir / "instance"
    out_dir.mkdir(parents=True)
    argv = [
        *backend.python_command(),
        str(source.directory / "generate_gt.py"),
        "--output-dir",
        str(out_dir),
        "--params",
        json.dumps(params, sort_keys=True),
    ]
    result = backend.run(argv, workdir, [source.directory, *backend.runtime_mounts()], limits)
    if result.timed_out:
        raise GenerationFailed(f"generator timed out after {limits.wall_clock_seconds:g} s")
    if result.returncode != 0 or result.limit:
        tail = result.stderr_text.strip().splitlines()[-3:]
        reason = result.reason or "; ".join(tail) or f"exit status {result.returncode}"
        raise GenerationFailed(f"generator failed: {reason}")
    instance_dir = scratch / "instance"
    try:
        files = collect_outputs(out_dir, instance_dir)
    except UnsafeOutput as exc:
        raise GenerationFailed(f"generator output refused: {exc}") from None
    for required in ("data", "reference"):
        if not any(name.startswith(f"{required}/") and not name.endswith("/") for name in files):
            raise GenerationFailed(f"generator wrote no {required}/ files")
    return instance_dir


def read_params_used(instance_dir: Path, fallback: dict[str, Any]) -> dict[str, Any]:
    meta_path = instance_dir / "instance_meta.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if isinstance(meta.get("params_used"), dict):
            return meta["params_used"]
    return fallback


def write_task_info(instance_dir: Path, source: TaskSource) -> None:
    """The agent-facing contract: anonymised id and output names only (client contract §5.9)."""
    info = {
        "schema_version": 3,
        "task_id": anonymised_task_id(source.task_id),
        "expected_outputs": [{"name": o["name"], "type": o.get("type", "data")} for o in source.declared_outputs],
        "timeout_seconds": DEFAULT_AGENT_TIMEOUT,
    }
    (instance_dir / "task_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


def ensure_prompts(instance_dir: Path, source: TaskSource) -> None:
    for level in PROMPT_LEVELS:
        rendered = instance_dir / f"prompt_{level}.md"
        if not rendered.is_file():
            rendered.write_text(source.prompts[level], encoding="utf-8")


def build_archive(root: Path, members: list[str], top: str, dest: Path) -> tuple[str, int]:
    """A deterministic tar.gz of `members` (paths relative to root) under one top dir.

    Fixed mtimes, owners and modes make equal content produce equal bytes, so a hash
    identifies an instance archive across regenerations.
    """
    files: list[tuple[str, Path]] = []
    dirs: set[str] = {top}
    for member in members:
        path = root / member
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                rel = child.relative_to(root).as_posix()
                if child.is_dir():
                    dirs.add(f"{top}/{rel}")
                elif child.is_file() and "__pycache__" not in child.parts:
                    files.append((f"{top}/{rel}", child))
            dirs.add(f"{top}/{member}")
        elif path.is_file():
            files.append((f"{top}/{member}", path))
    for arcname, _ in files:
        parent = arcname.rsplit("/", 1)[0]
        while parent and parent not in dirs:
            dirs.add(parent)
            parent = parent.rsplit("/", 1)[0] if "/" in parent else ""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name in sorted(dirs):
                info = tarfile.TarInfo(name)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
                tar.addfile(info)
            for arcname, path in sorted(files):
                info = tarfile.TarInfo(arcname)
                info.size, info.mode, info.mtime = path.stat().st_size, 0o644, 0
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
    return digests.sha256_file(dest), dest.stat().st_size


def public_members(instance_dir: Path, include_reference: bool) -> list[str]:
    members = [f"prompt_{level}.md" for level in PROMPT_LEVELS] + ["data", "task_info.json"]
    if include_reference:
        # Public-reference datasets are scored locally, which needs the parameters too.
        members += ["reference", "instance_meta.json"]
    return [m for m in members if (instance_dir / m).exists()]
