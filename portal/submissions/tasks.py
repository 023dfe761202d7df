from celery import shared_task

from portal.submissions.reaper import stuck_runs_reap
from portal.submissions.services import drafts_expire


@shared_task(name="portal.submissions.tasks.expire_drafts")
def expire_drafts() -> int:
    return drafts_expire()


@shared_task(name="portal.submissions.tasks.reap_stuck_runs")
def reap_stuck_runs() -> dict[str, int]:
    """Beat entry: re-queue or fail runs that have been scoring for too long."""
    return stuck_runs_reap()
