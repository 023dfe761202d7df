from celery import shared_task

from portal.submissions.reaper import stuck_runs_reap
from portal.submissions.scan_tasks import submission_scan_task
from portal.submissions.scoring_tasks import run_instances_score_task, scoring_run_start_task
from portal.submissions.services import drafts_expire
from scoring.judge_services import judge_waiting_due

# The scoring tasks live beside the services they call; named here so Celery's autodiscovery
# (which imports each app's `tasks`) registers them with every worker.
__all__ = ["drafts_expire_task", "run_instances_score_task", "judge_waiting_resend_task", "scoring_run_start_task",
           "stuck_runs_reap_task", "submission_scan_task"]


@shared_task(name="portal.submissions.tasks.expire_drafts")
def drafts_expire_task() -> int:
    return drafts_expire()


@shared_task(name="portal.submissions.tasks.reap_stuck_runs")
def stuck_runs_reap_task() -> dict[str, int]:
    """Beat entry: re-queue or fail runs that have been scoring for too long."""
    return stuck_runs_reap()


@shared_task(name="portal.submissions.tasks.resend_waiting_judges")
def judge_waiting_resend_task() -> int:
    """Beat entry: score again the results whose judges did not answer, once their next try is due."""
    due = judge_waiting_due()
    for scoring_run_id, instance_id in due:
        run_instances_score_task.delay(scoring_run_id, instance_id)
    return len(due)
