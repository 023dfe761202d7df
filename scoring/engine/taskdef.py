"""Task directory loading, parameter sampling and identities (contract §1, §3)."""

from __future__ import annotations

import copy
import hashlib
import logging
import random
from pathlib import Path
from typing import Any

import yaml

from .errors import TaskDefinitionError
from .safe_yaml import untrusted_yaml_load
from .templates import resolve_templates

__all__ = [
    "anonymised_task_id",
    "declared_outputs",
    "instance_id_for_params",
    "instance_id_for_seed",
    "load_task",
    "mapping_at",
    "merge_task_eval",
    "public_task_eval",
    "read_yaml_mapping",
    "resolve_templates",
    "sample_params",
]

logger = logging.getLogger(__name__)

LEGACY_FILE = "task.yaml"
META_FILE = "task_meta.yaml"
EVAL_FILE = "task_eval.yaml"
SEED_MAX = 2**31 - 1


def mapping_at(data: dict[str, Any] | None, key: str) -> dict[str, Any]:
    """`data[key]` when it is a mapping, else an empty one: task YAML sections are optional and untrusted."""
    value = (data or {}).get(key)
    return value if isinstance(value, dict) else {}


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    try:
        data = untrusted_yaml_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise TaskDefinitionError(f"{path.name}: cannot parse YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise TaskDefinitionError(f"{path.name}: top level must be a mapping, got {type(data).__name__}")
    return data


def merge_task_eval(meta: dict[str, Any], task_eval: dict[str, Any]) -> dict[str, Any]:
    """Overlay ``task_eval.yaml`` onto ``task_meta.yaml`` as the framework does (§1.1)."""
    merged = copy.deepcopy(meta)
    for key, value in task_eval.items():
        if key in ("task_id", "output"):
            continue
        merged[key] = copy.deepcopy(value)
    eval_files = (task_eval.get("output") or {}).get("files") if isinstance(task_eval.get("output"), dict) else None
    if eval_files:
        output = merged.get("output")
        if not isinstance(output, dict):
            output = merged["output"] = {}
        files = output.get("files")
        if not isinstance(files, list):
            files = output["files"] = []
        by_name = {entry.get("name"): entry for entry in files if isinstance(entry, dict)}
        for entry in eval_files:
            if not isinstance(entry, dict):
                continue
            target = by_name.get(entry.get("name"))
            if target is None:
                files.append(copy.deepcopy(entry))
            else:
                target.update(copy.deepcopy(entry))
    return merged


def load_task(task_dir: Path) -> dict[str, Any]:
    """Load a task directory into the merged (legacy-shaped) dict plus private ``_`` keys.

    ``task.yaml`` wins over the split layout; ``task_meta.yaml`` alone loads without an
    evaluation. Raises ``TaskDefinitionError`` when nothing loadable is there.
    """
    task_dir = Path(task_dir)
    legacy, meta_path, eval_path = task_dir / LEGACY_FILE, task_dir / META_FILE, task_dir / EVAL_FILE
    if legacy.is_file():
        if meta_path.is_file():
            logger.warning("%s: task.yaml present, ignoring task_meta.yaml/task_eval.yaml", task_dir)
        task = read_yaml_mapping(legacy)
        task_yaml, task_eval_yaml = legacy, None
    elif meta_path.is_file():
        task = read_yaml_mapping(meta_path)
        task_yaml, task_eval_yaml = meta_path, None
        if eval_path.is_file():
            task = merge_task_eval(task, read_yaml_mapping(eval_path))
            task_eval_yaml = eval_path
    else:
        raise TaskDefinitionError(f"{task_dir}: neither {LEGACY_FILE} nor {META_FILE} exists")

    generation = mapping_at(task, "generation")
    runtime = mapping_at(task, "runtime")
    packages = runtime.get("packages") or []
    if not isinstance(packages, list):
        raise TaskDefinitionError(f"{task_dir}: runtime.packages must be a list")
    task.update(
        {
            "_task_dir": task_dir,
            "_task_yaml": task_yaml,
            "_task_eval_yaml": task_eval_yaml,
            "_generation_mode": str(generation.get("mode") or "infinite"),
            "_generation_precomputed": bool(generation.get("precomputed", False)),
            "_generation_settings": generation.get("settings") or [],
            "_runtime_python": runtime.get("python"),
            "_runtime_packages": [str(p).strip() for p in packages if str(p).strip()],
        }
    )
    return task


def sample_params(task: dict[str, Any], run_seed: int, idx: int = 0) -> dict[str, Any]:
    """Parameters for instance ``idx`` of a run with seed ``run_seed`` (§3.1, §3.2).

    Infinite mode: one ``random.Random(run_seed + idx)`` stream, parameters in YAML order
    (int → randint, float → round(uniform, 4), choice → choice, other types skipped), then
    ``seed`` drawn last, overwriting any declared seed. Finite mode: the ``idx``-th setting
    of a ``Random(run_seed)`` shuffle, cycling, without its ``id``.
    """
    generation = mapping_at(task, "generation")
    if (generation.get("mode") or "infinite") == "finite":
        settings = generation.get("settings") or []
        if not settings:
            raise TaskDefinitionError("finite generation mode without settings")
        order = list(range(len(settings)))
        random.Random(run_seed).shuffle(order)
        chosen = dict(settings[order[idx % len(order)]])
        chosen.pop("id", None)
        return chosen

    rng = random.Random(run_seed + idx)
    params: dict[str, Any] = {}
    for name, spec in (generation.get("parameters") or {}).items():
        if not isinstance(spec, dict):
            continue
        kind = spec.get("type")
        if kind == "int":
            low, high = spec["range"]
            params[name] = rng.randint(low, high)
        elif kind == "float":
            low, high = spec["range"]
            params[name] = round(rng.uniform(low, high), 4)
        elif kind == "choice":
            params[name] = rng.choice(spec["options"])
    params["seed"] = rng.randint(0, SEED_MAX)
    return params


def instance_id_for_seed(task_id: str, seed: int) -> str:
    return f"{task_id}__seed{seed}"


def instance_id_for_params(task_id: str, params: dict[str, Any]) -> str:
    """On-the-fly instance id (§3.3)."""
    parts = []
    for key in sorted(params):
        value = params[key]
        if key == "seed":
            parts.append(f"seed{value}")
        elif isinstance(value, float):
            parts.append(f"{key}{value:.2f}")
        else:
            parts.append(f"{key}{value}")
    param_str = "_".join(parts)
    if len(param_str) > 80:
        param_str = param_str[:60] + "_" + hashlib.md5(param_str.encode()).hexdigest()[:8]
    return f"{task_id}__{param_str}"


def anonymised_task_id(task_id: str) -> str:
    return "task_" + hashlib.sha256(task_id.encode("utf-8")).hexdigest()[:12]


def declared_outputs(task: dict[str, Any]) -> list[dict[str, Any]]:
    """The agent-visible output declaration: ``[{name, type}]`` in YAML order."""
    output = mapping_at(task, "output")
    result = []
    for entry in output.get("files") or []:
        if isinstance(entry, dict) and entry.get("name"):
            result.append({"name": str(entry["name"]), "type": entry.get("type")})
    return result


def public_task_eval(task_dir: Path) -> dict[str, Any]:
    """Scoring-only view of a task: ``task_id``, ``output``, ``evaluation`` – never generation."""
    task_dir = Path(task_dir)
    task = load_task(task_dir)
    if task["_task_eval_yaml"] is not None:
        raw = read_yaml_mapping(task["_task_eval_yaml"])
        output = mapping_at(raw, "output")
        files = [copy.deepcopy(f) for f in output.get("files") or [] if isinstance(f, dict)]
    else:
        # Legacy/meta-only: keep only the scoring expectations of each output entry.
        output = mapping_at(task, "output")
        files = [
            {k: copy.deepcopy(v) for k, v in f.items() if k in ("name", "shape", "dtype")}
            for f in output.get("files") or []
            if isinstance(f, dict)
        ]
    return {
        "task_id": task.get("id"),
        "output": {"files": files},
        "evaluation": copy.deepcopy(task.get("evaluation") or {}),
    }
