"""Thin Celery tasks of task health (scoring.health): the weekly beat job and one check per task."""

from functools import partial

from celery import shared_task
from django.db import transaction

from scoring import health
from scoring.models import TaskHealthCheck


@shared_task(name="scoring.task_health_check", acks_late=True)
def task_health_check_task(task_id: str, trigger: str, requested_by_id: str | None = None) -> None:
    health.task_health_check(task_id=task_id, trigger=trigger, requested_by_id=requested_by_id)


@shared_task(name="scoring.task_health_checks_schedule")
def task_health_checks_schedule_task() -> int:
    """Beat: queue a check of every published task (each its own message, on the proposals queue)."""
    due = health.task_health_checks_due()
    for task_id in due:
        transaction.on_commit(partial(task_health_check_task.delay, task_id, TaskHealthCheck.Trigger.SCHEDULE))
    return len(due)
