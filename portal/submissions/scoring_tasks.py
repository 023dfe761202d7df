"""Thin Celery tasks of a submission's scoring: ids in, one service call each. Retries only for
infrastructure errors. Enqueued by `services.scoring_enqueue_on_commit` (confirm, rescore, reaper).

Kept apart from `tasks` (the beat sweeps), which imports the services that enqueue these.
The task names predate the move out of `scoring` and are kept, so messages already queued
under them are still consumed.
"""

from celery import shared_task
from django.conf import settings

from portal.submissions import scoring_runs
from scoring.pipeline import INFRASTRUCTURE_ERRORS


@shared_task(name="scoring.score_submission", acks_late=True)
def score_submission(submission_id: str, requested_by_id: str | None = None) -> None:
    run = scoring_runs.scoring_run_start(submission_id=submission_id, requested_by_id=requested_by_id)
    if run is None:
        return
    pending = scoring_runs.scoring_run_pending_instances(run)
    if not pending:
        scoring_runs.scoring_run_finalize(scoring_run_id=run.id)
        return
    for instance_id in pending:
        score_instance.delay(run.id, instance_id)


@shared_task(
    name="scoring.score_instance",
    acks_late=True,
    autoretry_for=INFRASTRUCTURE_ERRORS,
    retry_backoff=settings.SCORING_RETRY_BACKOFF_SECONDS,
    retry_jitter=True,
    max_retries=settings.SCORING_INFRA_RETRIES,
)
def score_instance(scoring_run_id: int, instance_id: str) -> None:
    """Every unscored result of one instance in this run, in one sandbox."""
    try:
        scoring_runs.instance_score(scoring_run_id=scoring_run_id, instance_id=instance_id)
    except INFRASTRUCTURE_ERRORS as exc:
        if score_instance.request.retries >= score_instance.max_retries:
            scoring_runs.scoring_run_fail(scoring_run_id=scoring_run_id, reason=f"infrastructure error: {exc}")
            return
        raise
    scoring_runs.scoring_run_finalize(scoring_run_id=scoring_run_id)
