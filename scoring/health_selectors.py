"""Reads of task health (scoring.health): the last check a task page shows, the history maintainers see,
and the counts /status shows. What the public sees is whitelisted here: outcome per dataset, date,
revision and engine, and the reason only of "not checkable here"; a failing check's probes and reason
stay with maintainers until an erratum is confirmed."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from scoring.models import Task, TaskHealthCheck

Outcome = TaskHealthCheck.Outcome


def task_health_latest(task: Task) -> list[TaskHealthCheck]:
    """The newest finished check of the task, one row per dataset (or its one "not checkable" row)."""
    finished = TaskHealthCheck.objects.filter(task=task).exclude(outcome=Outcome.RUNNING).order_by("-started_at", "-id")
    newest = finished.first()
    if newest is None:
        return []
    if newest.dataset_id is None:
        return [newest]
    latest: dict[str, TaskHealthCheck] = {}
    for check in finished.filter(dataset__isnull=False)[:20]:
        latest.setdefault(str(check.dataset_id), check)
    return [latest[name] for name in sorted(latest)]


def task_health_public(task: Task) -> list[dict[str, Any]]:
    """The last check as everyone sees it."""
    return [{"dataset": check.dataset_id, "outcome": check.outcome, "outcome_label": check.get_outcome_display(),
             "finished_at": check.finished_at, "task_revision": check.task_revision,
             "engine_version": check.engine_version,
             "reason": check.reason if check.outcome == Outcome.NOT_CHECKABLE else ""}
            for check in task_health_latest(task)]


def task_health_history(task: Task) -> QuerySet[TaskHealthCheck]:
    """Every check of the task with its probes, newest first (maintainers only)."""
    return TaskHealthCheck.objects.filter(task=task).select_related("requested_by").order_by("-started_at", "-id")


def task_health_state(task: Task, checks: list[TaskHealthCheck] | None = None) -> str:
    """healthy (every dataset's last check of the current revision passed), failing (one failed), or
    unchecked (none yet, not checkable here, the check could not run, or the revision changed since)."""
    checks = task_health_latest(task) if checks is None else checks
    current = [c for c in checks if c.task_revision == task.revision]
    if any(c.outcome == Outcome.FAILING for c in current):
        return "failing"
    if current and all(c.outcome == Outcome.HEALTHY for c in current):
        return "healthy"
    return "unchecked"


def task_health_counts() -> dict[str, int]:
    """How many catalog tasks (not retired) are healthy, failing and unchecked, for /status: one query for the
    finished checks, newest first, of which the first per task and dataset counts. (Not DISTINCT ON: the embedded
    default runs on SQLite, which has none.)"""
    counts = {"healthy": 0, "failing": 0, "unchecked": 0}
    tasks = {t.id: t for t in Task.objects.exclude(status=Task.Status.RETIRED)}
    finished = (TaskHealthCheck.objects.filter(task_id__in=list(tasks)).exclude(outcome=Outcome.RUNNING)
                .only("task_id", "dataset_id", "outcome", "task_revision", "started_at")
                .order_by("task_id", "dataset_id", "-started_at", "-id"))
    per_task: dict[str, list[TaskHealthCheck]] = {}
    seen: set[tuple[str, str | None]] = set()
    for check in finished:
        if (check.task_id, check.dataset_id) not in seen:
            seen.add((check.task_id, check.dataset_id))
            per_task.setdefault(check.task_id, []).append(check)
    for task_id, task in tasks.items():
        rows = per_task.get(task_id, [])
        unchecked = [r for r in rows if r.dataset_id is None]
        if unchecked and all(unchecked[0].started_at >= r.started_at for r in rows):
            rows = unchecked  # the newest word on it is "not checkable here" (or could not read it)
        else:
            rows = [r for r in rows if r.dataset_id is not None]
        counts[task_health_state(task, rows)] += 1
    return counts
