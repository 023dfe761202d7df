"""Thin Celery task of the re-grade after a task's fixed revision (leaderboard.regrade)."""

from celery import shared_task

from leaderboard import regrade


@shared_task(name=regrade.REGRADE_TASK, acks_late=True)
def regrade_run_task(submission_id: str, task_id: str) -> None:
    regrade.regrade_run_start(submission_id=submission_id, task_id=task_id)
