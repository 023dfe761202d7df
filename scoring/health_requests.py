"""A maintainer's "Check now" on a task page: queue one health check (scoring.health) after commit."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from scoring.health import running
from scoring.models import Task, TaskHealthCheck
from scoring.tasks import task_health_check_task


def task_health_check_request(*, task_id: str, requested_by_id: Any) -> str:
    """A maintainer's "Check now": queue one check of the task (after commit). Returns "" when queued,
    else why not (no such task, retired, or a check of it is still running)."""
    task = Task.objects.filter(id=task_id).exclude(status=Task.Status.RETIRED).first()
    if task is None:
        return "No such task in the catalog."
    if running(task):
        return "A check of this task is running; its outcome will be shown here."
    transaction.on_commit(lambda: task_health_check_task.delay(
        task.id, TaskHealthCheck.Trigger.MAINTAINER, str(requested_by_id) if requested_by_id else None))
    return ""
