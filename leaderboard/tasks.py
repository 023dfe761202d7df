"""Thin Celery task of the re-grade after a task's fixed revision (leaderboard.regrade): one chunk of runs of
one instance, scored in one sandbox; infrastructure errors are retried (what is stored stays stored)."""

from celery import shared_task
from django.conf import settings

from leaderboard import regrade
from portal.submissions.scoring_tasks import infra_retry_delay
from scoring.pipeline import INFRASTRUCTURE_ERRORS


@shared_task(name=regrade.REGRADE_TASK, acks_late=True, max_retries=settings.SCORING_INFRA_RETRIES)
def regrade_batch_task(task_id: str, instance_id: str, submission_ids: list[str]) -> None:
    try:
        regrade.regrade_batch(task_id=task_id, instance_id=instance_id, submission_ids=submission_ids)
    except INFRASTRUCTURE_ERRORS as exc:
        delay = infra_retry_delay(regrade_batch_task.request.retries)
        raise regrade_batch_task.retry(exc=exc, countdown=delay) from exc
