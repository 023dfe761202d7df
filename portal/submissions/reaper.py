"""Runs never stick: a periodic sweep re-queues, or fails with a reason, runs that score too long.

A run can stop moving when a worker dies with its messages, the broker loses a message, or a
task crashes between steps. Every scoring step is idempotent and claimed in the database, so
starting a fresh scoring run is always safe: the stuck one is closed as failed with the reason
(kept in the history), and the submission goes back to the queue. After
SCORING_STUCK_REQUEUES automatic tries, the submission fails with the reason instead, and a
maintainer can re-queue it from the review page.
"""

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from portal.submissions.models import Submission
from portal.submissions.services import scoring_enqueue_on_commit
from scoring.models import ScoringRun

logger = logging.getLogger(__name__)
STUCK_PREFIX = "stuck:"


def submission_requeue(*, submission_id: Any, reason: str, requested_by: Any = None) -> Submission:
    """Close the open scoring run (if any) as failed with `reason` and queue the submission again.

    For queued, scoring and failed submissions; anything else is returned unchanged.
    """
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(id=submission_id)
        if submission.status not in (Submission.Status.QUEUED, Submission.Status.SCORING, Submission.Status.FAILED):
            return submission
        ScoringRun.objects.filter(submission=submission, status=ScoringRun.Status.RUNNING).update(
            status=ScoringRun.Status.FAILED, finished_at=timezone.now(), reason=reason
        )
        submission.status = Submission.Status.QUEUED
        submission.status_reason = f"Re-queued: {reason}"
        submission.save(update_fields=["status", "status_reason"])
        scoring_enqueue_on_commit(submission_id=str(submission.id),
                                  requested_by_id=str(requested_by.id) if requested_by else None)
    return submission


def _fail(submission_id: Any, reason: str) -> None:
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(id=submission_id)
        if submission.status != Submission.Status.SCORING:
            return
        ScoringRun.objects.filter(submission=submission, status=ScoringRun.Status.RUNNING).update(
            status=ScoringRun.Status.FAILED, finished_at=timezone.now(), reason=reason
        )
        submission.status = Submission.Status.FAILED
        submission.status_reason = reason
        submission.save(update_fields=["status", "status_reason"])


def stuck_runs_reap(*, now: Any = None) -> dict[str, int]:
    """One sweep. Returns how many runs were re-queued, failed and nudged (queued, message re-sent)."""
    now = now or timezone.now()
    limit = settings.SCORING_STUCK_SECONDS
    cutoff = now - timedelta(seconds=limit)
    counts = {"requeued": 0, "failed": 0, "resent": 0}
    # Read before this sweep re-queues anything, so a run is re-queued or re-sent, never both.
    lost = list(Submission.objects.filter(status=Submission.Status.QUEUED, confirmed_at__lte=cutoff)
                .values_list("id", flat=True))
    stuck = ScoringRun.objects.filter(status=ScoringRun.Status.RUNNING, created_at__lte=cutoff,
                                      submission__status=Submission.Status.SCORING)
    for run in stuck.only("id", "submission_id"):
        tries = ScoringRun.objects.filter(submission_id=run.submission_id, status=ScoringRun.Status.FAILED,
                                          reason__startswith=STUCK_PREFIX).count()
        if tries < settings.SCORING_STUCK_REQUEUES:
            reason = f"{STUCK_PREFIX} scoring run did not finish within {limit} s; re-queued automatically"
            submission_requeue(submission_id=run.submission_id, reason=reason)
            counts["requeued"] += 1
        else:
            _fail(run.submission_id, f"{STUCK_PREFIX} scoring did not finish within {limit} s after "
                                     f"{tries + 1} tries; a maintainer can re-queue it")
            counts["failed"] += 1
        logger.warning("scoring of submission %s was stuck for over %s s", run.submission_id, limit)
    # A queued run whose message was lost: sending it again is safe (the start is claimed once).
    for submission_id in lost:
        with transaction.atomic():
            scoring_enqueue_on_commit(submission_id=str(submission_id))
        counts["resent"] += 1
    return counts
