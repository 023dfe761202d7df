"""Thin Celery tasks of a submission's scoring: ids in, one service call each. Retries only for
infrastructure errors. Enqueued by `services.scoring_enqueue_on_commit` (confirm, rescore, reaper).

Kept apart from `tasks` (the beat sweeps), which imports the services that enqueue these.
The task names predate the move out of `scoring` and are kept, so messages already queued
under them are still consumed.
"""

import random

from celery import shared_task
from django.conf import settings

from portal.submissions import scoring_runs
from scoring.pipeline import INFRASTRUCTURE_ERRORS


@shared_task(name="scoring.score_submission", acks_late=True)
def scoring_run_start_task(submission_id: str, requested_by_id: str | None = None, rejudge: bool = False) -> None:
    run = scoring_runs.scoring_run_start(submission_id=submission_id, requested_by_id=requested_by_id,
                                         rejudge=rejudge)
    if run is None:
        return
    groups = scoring_runs.scoring_run_pending_task_groups(run)
    if not groups:
        scoring_runs.scoring_run_finalize(scoring_run_id=run.id)
        return
    for first, *more in groups:  # one sandbox per task's instances (scoring.pipeline.task_results_score)
        run_instances_score_task.delay(run.id, first, more)


def infra_retry_delay(retries: int) -> float:
    """Seconds before retry number `retries` + 1: exponential, with jitter over the upper half only.

    Full jitter (Celery's `retry_jitter`) can fire every retry within a second or two, so a database
    or storage restart of a few seconds used up the whole allowance and failed runs that would have
    scored. Half jitter still spreads the instances out, and the schedule always spans at least
    backoff × (2^retries − 1) / 2 seconds.
    """
    step = settings.SCORING_RETRY_BACKOFF_SECONDS * 2 ** retries
    return step / 2 + random.uniform(0, step / 2)


@shared_task(name="scoring.score_instance", acks_late=True, max_retries=settings.SCORING_INFRA_RETRIES)
def run_instances_score_task(scoring_run_id: int, instance_id: str, more_instance_ids: list[str] | None = None) -> None:
    """Every unscored result of one instance in this run, and of `more_instance_ids` (other instances
    of its task), in one sandbox."""
    try:
        scoring_runs.run_instances_score(scoring_run_id=scoring_run_id, instance_id=instance_id,
                                    more_instance_ids=more_instance_ids or ())
    except INFRASTRUCTURE_ERRORS as exc:
        retries = run_instances_score_task.request.retries
        if retries >= run_instances_score_task.max_retries:
            scoring_runs.scoring_run_fail(scoring_run_id=scoring_run_id, reason=f"infrastructure error: {exc}")
            return
        delay = infra_retry_delay(retries)
        scoring_runs.scoring_run_note_retry(scoring_run_id=scoring_run_id, attempt=retries + 1,
                                            attempts=run_instances_score_task.max_retries + 1, delay=delay, error=exc)
        raise run_instances_score_task.retry(exc=exc, countdown=delay) from exc
    scoring_runs.scoring_run_finalize(scoring_run_id=scoring_run_id)
