from celery import shared_task

from portal.submissions.reaper import stuck_runs_reap
from portal.submissions.scoring_tasks import score_instance, score_submission
from portal.submissions.services import drafts_expire
from scoring.judge_services import judge_waiting_due

# The scoring tasks live beside the services they call; named here so Celery's autodiscovery
# (which imports each app's `tasks`) registers them with every worker.
__all__ = ["expire_drafts", "reap_stuck_runs", "resend_waiting_judges", "score_instance", "score_submission"]


@shared_task(name="portal.submissions.tasks.expire_drafts")
def expire_drafts() -> int:
    return drafts_expire()


@shared_task(name="portal.submissions.tasks.reap_stuck_runs")
def reap_stuck_runs() -> dict[str, int]:
    """Beat entry: re-queue or fail runs that have been scoring for too long."""
    return stuck_runs_reap()


@shared_task(name="portal.submissions.tasks.resend_waiting_judges")
def resend_waiting_judges() -> int:
    """Beat entry: score again the results whose judges did not answer, once their next try is due."""
    due = judge_waiting_due()
    for scoring_run_id, instance_id in due:
        score_instance.delay(scoring_run_id, instance_id)
    return len(due)
