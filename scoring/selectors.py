"""Reads of the catalog. Public readers get whitelisted dicts, never model rows with private fields."""

import uuid
from typing import Any

from django.db.models import Count, QuerySet

from portal.errors import NotFound, ValidationFailed
from scoring.models import Dataset, Instance, ScoringRun, Task

PUBLIC_TASK_STATUSES = (Task.Status.SAMPLE, Task.Status.FINAL)


def task_public_list() -> QuerySet[Task]:
    return (
        Task.objects.filter(status__in=PUBLIC_TASK_STATUSES)
        .only("id", "domain", "name", "version", "status", "public_meta")
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
        "instance_count": instance_count if instance_count is not None else dataset.instances.count(),
    }


def instance_list(dataset: Dataset, task_ids: list[str] | None = None) -> QuerySet[Instance]:
    rows = Instance.objects.filter(dataset=dataset, task__status__in=PUBLIC_TASK_STATUSES).select_related("task")
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


def scoring_run_latest(submission_id: "uuid.UUID | str") -> "ScoringRun | None":
    """The newest scoring of a submission (a rescore adds one; earlier ones are kept)."""
    return ScoringRun.objects.filter(submission_id=submission_id).order_by("-number").first()


def task_datasets(task: Task) -> list[str]:
    return list(task.instances.values_list("dataset_id", flat=True).order_by("dataset_id"))
