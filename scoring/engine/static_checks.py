"""Static task checks (contract §5.1); nothing here generates or scores an instance."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from .errors import TaskDefinitionError
from .taskdef import EVAL_FILE, LEGACY_FILE, META_FILE, merge_task_eval, read_yaml_mapping

STATUSES = ("in_development", "test", "sample", "final", "abandoned")
STANDARD_DOMAINS = (
    "physics",
    "chemistry",
    "biology",
    "biostat",
    "materials",
    "earth_science",
    "astronomy",
    "math",
    "medicine",
    "electrical_engineering",
    "computer_science",
    "finance",
    "robotics",
)
VERSION_RE = re.compile(r"^\d+(\.\d+)*$")
FORBIDDEN_TASK_INFO_KEYS = ("instance_id", "parameters", "seed", "requires_gpu")
# How a check or a piece of advice of the Portal's says it is not one of the official pre-submit's
# (these static checks, §5.1, are the official ones): authors who know the official client can
# tell the two apart.
PORTAL_CHECK = "Portal check, not in the official pre-submit"


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _check_prompt(task_dir: Path, level: str, filename: Any, errors: list[str]) -> None:
    if not isinstance(filename, str) or not filename.strip():
        errors.append(f"prompts.{level}: file name must be a non-empty string")
        return
    path = task_dir / filename
    if not path.is_file():
        errors.append(f"prompts.{level}: {filename} does not exist")
        return
    raw = path.read_bytes()
    if not raw.strip():
        errors.append(f"prompts.{level}: {filename} is empty")
    elif b"\x00" in raw:
        errors.append(f"prompts.{level}: {filename} contains NUL bytes")
    else:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            errors.append(f"prompts.{level}: {filename} is not valid UTF-8")


def _check_difficulty_record(task_id: str, scores_dir: Path, warnings: list[str]) -> None:
    record = scores_dir / f"{task_id}.json"
    try:
        evaluations = json.loads(record.read_text(encoding="utf-8")).get("evaluations") or []
    except (OSError, ValueError, AttributeError):
        warnings.append(f"final task has no difficulty record in {scores_dir}")
        return
    if not any(isinstance(e, dict) and e.get("verdict") == "pass" for e in evaluations):
        warnings.append("final task has no difficulty evaluation with verdict: pass")


def static_validate(
    task_dir: Path,
    tasks_root: Path | None = None,
    scores_dir: Path | None = None,
    definition_only: bool = False,
) -> tuple[list[str], list[str]]:
    """Return ``(errors, warnings)`` for a task directory; errors mean the task is rejected.

    ``tasks_root`` defaults to the grandparent directory when it is named ``tasks``;
    the final-task difficulty check (#18) runs only when ``scores_dir`` is given.
    ``definition_only`` checks a task as published without its private files (prompts,
    generator): only its identity and scoring contract.
    """
    task_dir = Path(task_dir)
    errors: list[str] = []
    warnings: list[str] = []
    legacy, meta_path, eval_path = task_dir / LEGACY_FILE, task_dir / META_FILE, task_dir / EVAL_FILE
    try:
        if legacy.is_file():
            task = read_yaml_mapping(legacy)
        elif meta_path.is_file():
            task = read_yaml_mapping(meta_path)
            if eval_path.is_file():
                task = merge_task_eval(task, read_yaml_mapping(eval_path))
        else:
            return [f"neither {LEGACY_FILE} nor {META_FILE} found in {task_dir}"], []
    except TaskDefinitionError as exc:
        return [str(exc)], []

    for key in ("id", "name", "version", "domain"):
        if _blank(task.get(key)):
            errors.append(f"missing required field: {key}")
    status = task.get("status")
    if status not in STATUSES:
        errors.append(f"status must be one of {', '.join(STATUSES)} (got {status!r})")
    abandoned = status == "abandoned"
    if abandoned and _blank(task.get("abandoned_reason")):
        warnings.append("abandoned task without abandoned_reason")
    if not abandoned and not _blank(task.get("abandoned_reason")):
        warnings.append("abandoned_reason set on a task that is not abandoned")
    domain = task.get("domain")
    if not _blank(domain) and domain not in STANDARD_DOMAINS:
        warnings.append(f"domain {domain!r} is not a standard domain")
    version = task.get("version")
    if not _blank(version) and not VERSION_RE.match(str(version)):
        errors.append(f"version {version!r} must look like 1, 1.0 or 1.2.3")

    if not abandoned:
        _check_evaluation(task, task_dir, errors, warnings)
        if not definition_only:
            _check_prompts(task, task_dir, errors)
            _check_generation(task, task_dir, errors)

    _check_id(task, task_dir, tasks_root, errors, warnings)
    _check_task_info(task_dir, errors, warnings)
    if status == "final" and scores_dir is not None and not _blank(task.get("id")):
        _check_difficulty_record(str(task["id"]), Path(scores_dir), warnings)
    return errors, warnings


def _check_evaluation(task: dict[str, Any], task_dir: Path, errors: list[str], warnings: list[str]) -> None:
    evaluation = task.get("evaluation")
    if not isinstance(evaluation, dict):
        errors.append("evaluation section missing or not a mapping")
        return
    if "score_divisor" in evaluation:
        divisor = evaluation["score_divisor"]
        if (
            isinstance(divisor, bool)
            or not isinstance(divisor, (int, float))
            or not math.isfinite(divisor)
            or divisor <= 0
        ):
            errors.append(f"evaluation.score_divisor must be a finite positive number (got {divisor!r})")
    for key in ("gates", "scoring"):
        if key in evaluation and evaluation[key] is not None and not isinstance(evaluation[key], list):
            errors.append(f"evaluation.{key} must be a list")
    gates, scoring = evaluation.get("gates"), evaluation.get("scoring")
    if not gates and not scoring:
        warnings.append("evaluation defines neither gates nor scoring")
    entries: list[tuple[str, Any]] = [("gates", e) for e in gates] if isinstance(gates, list) else []
    if isinstance(scoring, list):
        for i, entry in enumerate(scoring):
            if not isinstance(entry, dict) or "scorer" not in entry or "weight" not in entry:
                errors.append(f"evaluation.scoring[{i}] must be a mapping with 'scorer' and 'weight'")
            entries.append(("scoring", entry))
    for key, entry in entries:
        if isinstance(entry, dict) and entry.get("scorer") == "custom":
            script = (entry.get("config") or {}).get("script") if isinstance(entry.get("config"), dict) else None
            if script and not (task_dir / str(script)).is_file():
                errors.append(f"evaluation.{key}: custom scorer script {script} does not exist")


def _check_prompts(task: dict[str, Any], task_dir: Path, errors: list[str]) -> None:
    prompts = task.get("prompts", {})
    if prompts is None:
        prompts = {}
    if not isinstance(prompts, dict):
        errors.append("prompts must be a mapping")
        return
    for level in ("b1", "b2", "b3"):
        _check_prompt(task_dir, level, prompts.get(level, f"prompt_{level}.md"), errors)
    if "b4" in prompts:
        _check_prompt(task_dir, "b4", prompts["b4"], errors)


def _check_generation(task: dict[str, Any], task_dir: Path, errors: list[str]) -> None:
    if "generation" not in task:
        return
    generation = task["generation"]
    if not isinstance(generation, dict):
        errors.append("generation must be a mapping")
        return
    script = generation.get("script")
    if script and not (task_dir / str(script)).is_file():
        errors.append(f"generation.script {script} does not exist")
    mode = generation.get("mode", "infinite")
    if mode not in ("infinite", "finite"):
        errors.append(f"generation.mode must be infinite or finite (got {mode!r})")


def _check_id(
    task: dict[str, Any], task_dir: Path, tasks_root: Path | None, errors: list[str], warnings: list[str]
) -> None:
    task_id = task.get("id")
    if _blank(task_id):
        return
    parts = str(task_id).split(".")
    if len(parts) < 2:
        errors.append(f"id {task_id!r} must be <domain>.<task_name>")
        return
    if parts[0] != task.get("domain"):
        errors.append(f"id prefix {parts[0]!r} does not match domain {task.get('domain')!r}")
    if tasks_root is None and task_dir.resolve().parent.parent.name == "tasks":
        tasks_root = task_dir.resolve().parent.parent
    if tasks_root is None:
        return
    try:
        relative = task_dir.resolve().relative_to(Path(tasks_root).resolve()).parts
    except ValueError:
        return
    if relative and relative[0] != parts[0]:
        errors.append(f"task directory domain {relative[0]!r} does not match id prefix {parts[0]!r}")
    if len(relative) > 1 and relative[1] != parts[-1]:
        warnings.append(f"task directory name {relative[1]!r} differs from task name {parts[-1]!r}")


def _check_task_info(task_dir: Path, errors: list[str], warnings: list[str]) -> None:
    path = task_dir / "task_info.json"
    if not path.is_file():
        return
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        warnings.append("task_info.json is not valid JSON")
        return
    if isinstance(info, dict):
        leaked = [key for key in FORBIDDEN_TASK_INFO_KEYS if key in info]
        if leaked:
            errors.append(f"task_info.json must not contain {', '.join(leaked)}")
