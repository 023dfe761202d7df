"""The thin Celery task of a run's misconduct scan, and the one way to queue it (kept apart from `scanning`,
which the task calls, as `scoring_tasks` is from `scoring_runs`)."""

from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import transaction

from portal.submissions.scan_model import model_scan_run
from portal.submissions.scanning import scan_failed, scan_state, submission_scan
from scoring.storage_errors import STORAGE_ERRORS


@shared_task(name="portal.submissions.scan_run", acks_late=True, bind=True, max_retries=3)
def submission_scan_task(self: Any, submission_id: str) -> None:
    try:
        record = submission_scan(submission_id=submission_id)
    except STORAGE_ERRORS as exc:
        if self.request.retries >= self.max_retries:
            scan_failed(submission_id, exc)
            return
        raise self.retry(exc=exc, countdown=30 * 2 ** self.request.retries) from None
    if record.get("state") == "done":
        model_scan_run(submission_id=submission_id)  # off without a model and a judge endpoint


def scan_enqueue_on_commit(*, submission_id: Any) -> None:
    """Queue the run's scan once the transaction that made it (or asked for it again) commits."""
    if not settings.SCANNER_ENABLED:
        return
    scan_state(submission_id, "queued")
    transaction.on_commit(lambda: submission_scan_task.delay(str(submission_id)))
