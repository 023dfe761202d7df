"""Thin Celery tasks: ids in, one service call each. Retries only for infrastructure errors."""

from celery import shared_task
from django.conf import settings
from django.db import OperationalError

from scoring import pipeline
from scoring.sandbox import SandboxError

INFRASTRUCTURE_ERRORS = (pipeline.InfrastructureError, SandboxError, OperationalError, OSError)


@shared_task(name="scoring.score_submission", acks_late=True)
def score_submission(submission_id: str, requested_by_id: str | None = None) -> None:
    run = pipeline.scoring_run_start(submission_id=submission_id, requested_by_id=requested_by_id)
    if run is None:
        return
    pending = pipeline.scoring_run_pending_instances(run)
    if not pending:
        pipeline.scoring_run_finalize(scoring_run_id=run.id)
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
        pipeline.instance_score(scoring_run_id=scoring_run_id, instance_id=instance_id)
    except INFRASTRUCTURE_ERRORS as exc:
        if score_instance.request.retries >= score_instance.max_retries:
            pipeline.scoring_run_fail(scoring_run_id=scoring_run_id, reason=f"infrastructure error: {exc}")
            return
        raise
    pipeline.scoring_run_finalize(scoring_run_id=scoring_run_id)
