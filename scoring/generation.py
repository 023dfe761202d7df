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

from contracts import PROMPT_LEVELS, digests
from scoring.engine import (
    TaskDefinitionError,
    anonymised_task_id,
    declared_outputs,
    load_task,
    public_task_eval,
    static_validate,
)
from scoring.engine.custom import unavailable_imports
from scoring.engine.judge_models import agent_judge_timeout_notes
from scoring.engine.safe_yaml import untrusted_yaml_load
from scoring.engine.static_checks import PORTAL_CHECK
from scoring.engine.taskdef import mapping_at
from scoring.runtime_requirements import runtime_problems
from scoring.sandbox import Limits, SandboxBackend
from scoring.sandbox.outputs import UnsafeOutput, collect_outputs

# Catalog ids: the official catalog's own ids pass (one task name starts with a digit:
# earth_science.2_e_soil_carbon_nitrogen_cycling); proposals keep the Portal's stricter rule.
TASK_ID_RE = re.compile(r"^[a-z][a-z0-9_]*\.[a-z0-9][a-z0-9_]*$")
# What a proposal must contain before it is published (the Portal serves all four levels and reads
# the scoring contract from task_eval.yaml). A task directory a maintainer loads needs only a
# definition. solution/ and reference_specs.md, which the official pre-submit never asks for, are
# advice for both (RECOMMENDED: a warning on the task when missing, never a refusal).
REQUIRED_FILES = (
    "task_meta.yaml",
    "task_eval.yaml",
    "generate_gt.py",
    "prompt_b1.md",
    "prompt_b2.md",
    "prompt_b3.md",
    "prompt_b4.md",
)
RECOMMENDED = {
    "solution/": "a reference solver, so the task can be checked end to end",
    "reference_specs.md": "notes for reviewers on correct answers and common mistakes",
}
DEFINITION_FILES = ("task.yaml", "task_meta.yaml")
DEFAULT_GENERATOR = "generate_gt.py"
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
    layout: str = "split"  # "split" (task_meta.yaml + task_eval.yaml) or "legacy" (task.yaml)
    generator: str = DEFAULT_GENERATOR
    # Published without its generator (and prompts): loaded for its scoring contract, never generated.
    definition_only: bool = False
    # Why scoring here cannot run the task's custom scorer ("" when it can).
    unscorable: str = ""
    warnings: tuple[str, ...] = ()


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


def _definition(directory: Path) -> tuple[str, dict[str, Any]]:
    """(layout, the file that carries id and status) read the way the official loader reads it."""
    name = next((n for n in DEFINITION_FILES if (directory / n).is_file()), None)
    if name is None:
        raise TaskProblem(f"neither {' nor '.join(DEFINITION_FILES)} exists")
    try:
        meta = untrusted_yaml_load((directory / name).read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as exc:
        raise TaskProblem(f"{name} is not valid YAML: {exc}") from exc
    if not isinstance(meta, dict):
        raise TaskProblem(f"{name} is not a mapping")
    return ("legacy" if name == "task.yaml" else "split"), meta


def _generator_name(task: dict[str, Any]) -> str:
    generation = task.get("generation")
    script = generation.get("script") if isinstance(generation, dict) else None
    if not isinstance(script, str) or not script.strip():
        return DEFAULT_GENERATOR
    if Path(script).name != script or script.startswith("."):
        raise TaskProblem(f"generation.script {script!r} must name a file in the task directory")
    return script


def _portal_advice(directory: Path, generator: str) -> list[str]:
    """What the Portal recommends and this directory lacks (none of it in the official pre-submit)."""
    warnings = [f"no {name} ({why}; {PORTAL_CHECK})" for name, why in RECOMMENDED.items()
                if not (directory / name.rstrip("/")).exists()]
    source = (directory / generator).read_text(encoding="utf-8", errors="replace")
    if not re.search(r"^(INPUT_SPEC|OUTPUT_SPEC)\b", source, re.MULTILINE):
        warnings.append(f"{generator} declares no INPUT_SPEC/OUTPUT_SPEC (the Portal's generator contract; "
                        f"{PORTAL_CHECK})")
    return warnings


def read_task_dir(directory: Path, tasks_root: Path | None = None, *, proposal: bool = False,
                  agent_judge_ceiling: float | None = None) -> TaskSource:
    """Read one task directory, in either official layout, into what the catalog stores.

    `proposal` applies the Portal's stricter rules for a published proposal (REQUIRED_FILES);
    a maintainer's directory needs only a definition, and without its generator it loads as
    definition-only. An agent_judge timeout above `agent_judge_ceiling` is a warning (it is
    clamped when the judge runs). Raises TaskProblem with the reason when it cannot load.
    """
    if proposal:
        missing = [name for name in REQUIRED_FILES if not (directory / name).is_file()]
        if missing:
            raise TaskProblem(f"missing required files: {', '.join(missing)}")
    layout, meta = _definition(directory)
    task_id = str(meta.get("id", "")).strip()
    if not TASK_ID_RE.match(task_id):
        raise TaskProblem(f"bad task id {task_id!r}: expected '<domain>.<task_name>' in lowercase snake case")
    try:
        task = load_task(directory)
    except TaskDefinitionError as exc:
        raise TaskProblem(str(exc)) from None
    generator = _generator_name(task)
    definition_only = not (directory / generator).is_file()
    errors, static_warnings = static_validate(directory, tasks_root, definition_only=definition_only)
    if errors:
        raise TaskProblem("; ".join(errors))
    status = str(meta.get("status", ""))
    if status not in LOADABLE_STATUSES:
        raise TaskProblem(f"status {status!r} is not loadable (only sample and final tasks enter the catalog)")
    warnings = list(static_warnings)
    if agent_judge_ceiling is not None:
        warnings += agent_judge_timeout_notes(mapping_at(task, "evaluation"), agent_judge_ceiling)
    runtime = runtime_problems(python=task.get("_runtime_python"), packages=task.get("_runtime_packages") or [])
    if runtime and not definition_only:
        raise TaskProblem("runtime cannot be satisfied here: " + "; ".join(runtime))
    warnings += [f"runtime not available here (never generated, so not needed): {p}" for p in runtime]
    unavailable = unavailable_imports(directory)
    unscorable = f"custom_scorer.py imports {', '.join(unavailable)}" if unavailable else ""
    prompts: dict[str, str] = {}
    if not definition_only:
        warnings += _portal_advice(directory, generator)
        prompts_map = mapping_at(task, "prompts")
        prompts = {
            level: (directory / str(prompts_map.get(level) or f"prompt_{level}.md")).read_text(encoding="utf-8")
            for level in PROMPT_LEVELS
            if (directory / str(prompts_map.get(level) or f"prompt_{level}.md")).is_file()
        }
        missing_levels = [level for level in PROMPT_LEVELS if level not in prompts]
        if missing_levels:
            raise TaskProblem(f"no prompt for {', '.join(missing_levels)}")
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
        generator_hash=hashes.get(generator, ""),
        task=task,
        layout=layout,
        generator=generator,
        definition_only=definition_only,
        unscorable=unscorable,
        warnings=tuple(warnings),
    )


def candidate_task_dirs(tasks_root: Path) -> list[Path]:
    """Every `<domain>/<task>/` directory, definition or not (`_template` and hidden ones aside),
    so a directory that cannot load is reported by name rather than passed over."""
    return sorted(
        d for d in tasks_root.glob("*/*")
        if d.is_dir() and not d.name.startswith(("_", ".")) and not d.parent.name.startswith(("_", "."))
    )


def discover_task_dirs(tasks_root: Path) -> list[Path]:
    """Every `<domain>/<task>/` holding a definition in either layout (`_template` and hidden ones aside)."""
    return sorted({
        p.parent
        for name in DEFINITION_FILES
        for p in tasks_root.glob(f"*/*/{name}")
        if not p.parent.name.startswith(("_", "."))
    })


def generator_run_in_sandbox(
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
        str(source.directory / source.generator),
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


def determinism_hashes(instance_dir: Path) -> dict[str, str]:
    """What two runs of a generator must agree on (the rule at digests.VOLATILE_TIMING_KEYS)."""
    return digests.determinism_hashes(instance_dir, skip=lambda path: "__pycache__" in path.parts)


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
