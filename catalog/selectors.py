"""Reads of the public catalog (pages and API). Public readers get whitelisted dicts, never model
rows with private fields."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from django.core.cache import cache
from django.db.models import Count, QuerySet

from contracts import PROMPT_LEVELS
from contracts.archives import pack_files
from portal.errors import NotFound, ValidationFailed
from proposals.selectors import proposal_published_difficulty
from scoring import instance_files
from scoring.models import Dataset, Instance, Task

PUBLIC_TASK_STATUSES = (Task.Status.SAMPLE, Task.Status.FINAL)
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def prompt_placeholders(prompts: Iterable[str]) -> list[str]:
    """The ``{{ name }}`` placeholders of a task's prompt templates, in order of first use."""
    return list(dict.fromkeys(name for text in prompts for name in _PLACEHOLDER.findall(text or "")))


def task_public_list() -> QuerySet[Task]:
    return (
        Task.objects.filter(status__in=PUBLIC_TASK_STATUSES)
        .only("id", "domain", "name", "version", "status", "public_meta", "unscorable_reason")
        .order_by("domain", "id")
    )


def task_public_get(task_id: str) -> Task:
    task = Task.objects.filter(id=task_id, status__in=PUBLIC_TASK_STATUSES).first()
    if task is None:
        raise NotFound(f"No task {task_id!r} in the catalog.")
    return task


def dataset_get(name: str) -> Dataset:
    dataset = Dataset.objects.filter(name=name).first()
    if dataset is None:
        known = ", ".join(Dataset.objects.values_list("name", flat=True)) or "none"
        raise NotFound(f"Unknown dataset {name!r}. Known datasets: {known}.")
    return dataset


def dataset_public_list() -> list[dict[str, Any]]:
    rows = Dataset.objects.annotate(instance_count=Count("instances")).order_by("-official", "name")
    return [dataset_public_dict(d, d.instance_count) for d in rows]


def dataset_public_dict(dataset: Dataset, instance_count: int | None = None) -> dict[str, Any]:
    return {
        "name": dataset.name,
        "seed": dataset.seed,
        "official": dataset.official,
        "references_public": dataset.references_public,
        "accepted_sandbox_modes": list(dataset.accepted_sandbox_modes),
        "description": dataset.description,
        # Bumped when one of its tasks gets a fixed revision (leaderboard.regrade).
        "version": dataset.version,
        "instance_count": instance_count if instance_count is not None else dataset.instances.count(),
    }


def instance_list(dataset: Dataset, task_ids: list[str] | None = None) -> QuerySet[Instance]:
    rows = (Instance.objects.filter(dataset=dataset, task__status__in=PUBLIC_TASK_STATUSES)
            .select_related("task", "dataset"))
    if task_ids:
        known = set(Task.objects.filter(id__in=task_ids, status__in=PUBLIC_TASK_STATUSES).values_list("id", flat=True))
        unknown = [t for t in task_ids if t not in known]
        if unknown:
            raise ValidationFailed(f"Unknown task ids: {', '.join(unknown)}.", code="unknown_tasks")
        rows = rows.filter(task_id__in=task_ids)
    return rows.order_by("instance_id")


def instance_public_dict(instance: Instance) -> dict[str, Any]:
    return {
        "instance_id": instance.instance_id,
        "task_id": instance.task_id,
        "dataset": instance.dataset_id,
        "sha256": instance.input_sha256,
        "bytes": instance.input_bytes,
        "generated_at": instance.generated_at.isoformat(),
    }


def instance_get(dataset: Dataset, instance_id: str) -> Instance:
    instance = instance_list(dataset).filter(instance_id=instance_id).first()
    if instance is None:
        raise NotFound(f"No instance {instance_id!r} in dataset {dataset.name}.")
    return instance


def dataset_serves_path(dataset: Dataset, relative_path: str) -> bool:
    """Whether a file of an instance (path relative to its folder) may be served from `dataset`.

    A dataset with private references (seed42) never serves a reference file nor the parameters
    (`instance_meta.json`), whatever path is asked and whatever an archive might hold.
    """
    if dataset.references_public:
        return True
    parts = relative_path.split("/")
    return "reference" not in parts and parts[-1] != "instance_meta.json"


def instance_served_files(instance: Instance) -> dict[str, instance_files.InstanceFile]:
    """The files of an instance a download may list and serve, by path relative to its folder."""
    return {path: f for path, f in instance_files.archive_files(instance).items()
            if dataset_serves_path(instance.dataset, path)}


def instance_served_file(instance: Instance, relative_path: str) -> tuple[instance_files.InstanceFile, Path]:
    """One served file and its local path; NotFound for anything not listed by instance_served_files."""
    served = instance_served_files(instance).get(relative_path)
    if served is None:
        raise NotFound(f"No file {relative_path!r} in instance {instance.instance_id}.")
    return served, instance_files.archive_file_path(instance, relative_path)


def task_datasets(task: Task) -> list[str]:
    return list(task.instances.values_list("dataset_id", flat=True).order_by("dataset_id"))



def task_difficulty(task: Task) -> dict[str, Any] | None:
    """The latest difficulty evaluation of a catalog task, public fields only; None if none is recorded.

    A task published from a proposal shows the B1–B4 scores its accepted revision recorded
    (what the B3/B4 gate judged), without the author's agent, model or provider, which stay
    Portal-only evidence like the rest of task_submission.yaml. A repository task shows its
    difficulty-check record with agent and model; agent configurations, seeds and anything
    else of the check stay out (see policy.public_summary).
    """
    # task.difficulty: the difficulty-check record read at catalog load (task_loading.difficulty_record_summary).
    return proposal_published_difficulty(task.id, task.version) or task.difficulty or None


# --- the public task definitions, one download for `asibench run --tasks-dir` ------------------------------

DEFINITIONS_TOP = "tasks"
# What one definition holds; the official client reads only task_meta.yaml (id, status, runtime, outputs).
PUBLIC_DEFINITION_FILES = ("task_meta.yaml", *(f"prompt_{level}.md" for level in PROMPT_LEVELS))
_DEFINITIONS_FORMAT = 1  # bump when what a definition holds changes: cached archives are keyed by it
_DEFINITIONS_CACHE_SECONDS = 3600  # the key follows the catalog; this only bounds edits made behind its back
_DEFINITIONS_README = """\
Public task definitions of this ASI-Bench Portal's catalog, one directory per task
(<domain>/<name>/, from the task id). Each holds task_meta.yaml (the public metadata: identity,
runtime, the inputs and the outputs the agent must write) and the four prompt templates.

Nothing private is here: no generator, no scoring contract (task_eval.yaml, custom scorers), no
generation settings or parameters, no references. It is what the official asibench 0.2.0 client's
`run --tasks-dir` reads; scoring needs none of it on your side, the Portal scores.

    tar -xzf definitions.tar.gz                  # makes ./tasks/
    asibench run --instances-dir inst42/ --tasks-dir tasks ...
"""


@dataclass(frozen=True)
class TaskDefinitions:
    data: bytes  # a tar.gz whose entries are all under DEFINITIONS_TOP/
    sha256: str


def task_definition_dir(task_id: str) -> str:
    """Where a task's definition sits in the download: `<domain>/<name>` of its id, where the official
    loader looks for it (`tasks/<domain>/<name>/task_meta.yaml`)."""
    return task_id.replace(".", "/", 1)


def task_definition_files(task: Task) -> dict[str, bytes]:
    """The public definition of one catalog task, by path relative to the archive's top directory.

    Built from what the catalog already shows on the task page (`public_meta`: task_meta.yaml without
    evaluation, generation, execution or timeout, outputs without shape or dtype; the prompt templates),
    never from the task's files, so nothing the catalog keeps private can reach it.
    """
    where = task_definition_dir(task.id)
    meta = {**task.public_meta, "id": task.id}
    prompts = {level: f"prompt_{level}.md" for level in PROMPT_LEVELS if task.prompts.get(level)}
    meta["prompts"] = prompts
    header = f"# {task.id}: public definition served by the ASI-Bench Portal (metadata and prompt templates only)\n"
    files = {f"{where}/task_meta.yaml":
             (header + yaml.safe_dump(meta, sort_keys=True, allow_unicode=True, width=100)).encode("utf-8")}
    for level, filename in prompts.items():
        files[f"{where}/{filename}"] = task.prompts[level].encode("utf-8")
    return files


def task_definitions_archive() -> TaskDefinitions:
    """Every public task's definition as one deterministic tar.gz, cached under a key naming the catalog's
    state (each public task's id, revision and source hash), so a catalog change is a new archive."""
    tasks = Task.objects.filter(status__in=PUBLIC_TASK_STATUSES).order_by("id")
    state = json.dumps([_DEFINITIONS_FORMAT, list(tasks.values_list("id", "revision", "source_hash"))])
    key = f"catalog:task-definitions:{hashlib.sha256(state.encode()).hexdigest()}"
    cached = cache.get(key)
    if isinstance(cached, TaskDefinitions):
        return cached
    files = {f"{DEFINITIONS_TOP}/README.txt": _DEFINITIONS_README.encode("utf-8")}
    for task in tasks.only("id", "public_meta", "prompts"):
        files.update({f"{DEFINITIONS_TOP}/{path}": content for path, content in task_definition_files(task).items()})
    data = pack_files(files)
    archive = TaskDefinitions(data=data, sha256=hashlib.sha256(data).hexdigest())
    cache.set(key, archive, _DEFINITIONS_CACHE_SECONDS)
    return archive
