"""``ai4sci_bench.core.task`` as custom scorers use it: reading a task's definition.

Both layouts resolve exactly as the official loader resolves them (``task.yaml`` wins over
``task_meta.yaml`` + ``task_eval.yaml``); the merging itself is the engine's one copy.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from scoring.engine.errors import TaskDefinitionError
from scoring.engine.taskdef import EVAL_FILE, LEGACY_FILE, META_FILE, load_task
from scoring.engine.taskdef import merge_task_eval as _merged

from .types import GenerationMode, TaskLifecycle

__all__ = [
    "EVAL_TASK_FILE",
    "LEGACY_TASK_FILE",
    "META_TASK_FILE",
    "TaskLoader",
    "eval_source",
    "merge_task_eval",
    "resolve_task_sources",
    "status_source",
    "task_metadata_files",
]

LEGACY_TASK_FILE = LEGACY_FILE
META_TASK_FILE = META_FILE
EVAL_TASK_FILE = EVAL_FILE


def resolve_task_sources(task_dir: Path) -> tuple[Path, Path | None]:
    task_dir = Path(task_dir)
    if (task_dir / LEGACY_FILE).exists():
        return task_dir / LEGACY_FILE, None
    meta = task_dir / META_FILE
    if meta.exists():
        ev = task_dir / EVAL_FILE
        return meta, (ev if ev.exists() else None)
    raise FileNotFoundError(f"No {LEGACY_FILE} or {META_FILE} found in {task_dir}")


def status_source(task_dir: Path) -> Path:
    return resolve_task_sources(task_dir)[0]


def eval_source(task_dir: Path) -> Path:
    meta, ev = resolve_task_sources(task_dir)
    if ev is not None:
        return ev
    if meta.name == LEGACY_FILE:
        return meta
    raise FileNotFoundError(f"No {EVAL_FILE} found in {task_dir}")


def task_metadata_files(task_dir: Path) -> list[Path]:
    meta, ev = resolve_task_sources(task_dir)
    return [meta] + ([ev] if ev is not None else [])


def merge_task_eval(meta: dict[str, Any], eval_data: dict[str, Any]) -> None:
    """In place, as the official function works."""
    if isinstance(meta, dict) and isinstance(eval_data, dict):
        merged = _merged(meta, eval_data)
        meta.clear()
        meta.update(merged)


class TaskLoader:
    TEMPLATE_TASK_IDS = {"DOMAIN.TASK_NAME"}
    TEMPLATE_TASK_NAMES = {"Human-readable task name"}

    def __init__(self, tasks_dir: Path):
        self.tasks_dir = Path(tasks_dir)

    def load_task_metadata(self, task_yaml: Path) -> dict[str, Any]:
        """Like the official loader, `task_yaml` only names the task directory."""
        try:
            task = load_task(Path(task_yaml).parent)
        except TaskDefinitionError as exc:
            raise FileNotFoundError(str(exc)) if "exists" in str(exc) else ValueError(str(exc)) from None
        task["_generation_mode"] = GenerationMode(task["_generation_mode"])
        task["_generation_settings"] = copy.deepcopy(task["_generation_settings"])
        return task

    def _task_dirs(self) -> list[Path]:
        found = {p.parent for name in (LEGACY_FILE, META_FILE) for p in self.tasks_dir.rglob(name)}
        return sorted(d for d in found if d.name != "_template")

    @classmethod
    def _is_template_metadata(cls, metadata: dict[str, Any]) -> bool:
        task_id = str(metadata.get("id", "")).strip()
        task_name = str(metadata.get("name", "")).strip()
        if task_id in cls.TEMPLATE_TASK_IDS or task_name in cls.TEMPLATE_TASK_NAMES:
            return True
        return task_id.startswith("DOMAIN.") or task_id.endswith(".TASK_NAME")

    def discover_tasks(
        self,
        include_test: bool = False,
        include_sample: bool = False,
        include_dev: bool = False,
        include_abandoned: bool = False,
    ) -> list[dict[str, Any]]:
        wanted = {TaskLifecycle.FINAL}
        wanted |= {TaskLifecycle.TEST} if include_test else set()
        wanted |= {TaskLifecycle.SAMPLE} if include_sample else set()
        wanted |= {TaskLifecycle.IN_DEVELOPMENT} if include_dev else set()
        wanted |= {TaskLifecycle.ABANDONED} if include_abandoned else set()
        tasks = []
        for task_dir in self._task_dirs():
            try:
                metadata = self.load_task_metadata(task_dir / LEGACY_FILE)
            except Exception:
                continue
            if self._is_template_metadata(metadata):
                continue
            if TaskLifecycle(metadata.get("status", "in_development")) in wanted:
                tasks.append(metadata)
        return tasks

    def load_task_by_id(self, task_id: str) -> dict[str, Any]:
        for task_dir in [self.tasks_dir.joinpath(*task_id.split(".")), *self._task_dirs()]:
            try:
                metadata = self.load_task_metadata(task_dir / LEGACY_FILE)
            except Exception:
                continue
            if metadata.get("id") == task_id and not self._is_template_metadata(metadata):
                return metadata
        raise ValueError(f"Task '{task_id}' not found in {self.tasks_dir}")
