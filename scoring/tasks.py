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
    pending = pipeline.scoring_run_pending_entries(run)
    if not pending:
        pipeline.scoring_run_finalize(scoring_run_id=run.id)
        return
    for entry_id in pending:
        score_entry.delay(run.id, entry_id)


@shared_task(
    name="scoring.score_entry",
    acks_late=True,
    autoretry_for=INFRASTRUCTURE_ERRORS,
    retry_backoff=settings.SCORING_RETRY_BACKOFF_SECONDS,
    retry_jitter=True,
    max_retries=settings.SCORING_INFRA_RETRIES,
)
def score_entry(scoring_run_id: int, entry_id: int) -> None:
    try:
        pipeline.entry_score(scoring_run_id=scoring_run_id, entry_id=entry_id)
    except INFRASTRUCTURE_ERRORS as exc:
        if score_entry.request.retries >= score_entry.max_retries:
            pipeline.scoring_run_fail(scoring_run_id=scoring_run_id, reason=f"infrastructure error: {exc}")
            return
        raise
    pipeline.scoring_run_finalize(scoring_run_id=scoring_run_id)
