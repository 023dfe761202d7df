"""Runs never stick: a periodic sweep re-queues, or fails with a reason, runs that score too long,
and sends again, within minutes, the message of a queued run that no worker will ever start.

A run can stop moving when a worker dies with its messages, the broker loses a message, or a
task crashes between steps. Every scoring step is idempotent and claimed in the database, so
starting a fresh scoring run is always safe: the stuck one is closed as failed with the reason
(kept in the history), and the submission goes back to the queue. After
SCORING_STUCK_REQUEUES automatic tries, the submission fails with the reason instead, and a
maintainer can re-queue it from the review page. A run whose results wait for a judge token
budget is waiting, not stuck (`scoring.judge_services`).
"""

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from portal.submissions.models import Submission
from portal.submissions.services import scoring_enqueue_on_commit
from scoring.models import JudgeCall, ScoringRun

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


def _sent_at(submission: Submission) -> Any:
    return submission.enqueued_at or submission.confirmed_at


def queued_without_live_task(*, now: Any = None) -> list[Submission]:
    """Queued runs whose message is gone: sent more than SCORING_QUEUED_RESEND_SECONDS ago and not
    started, although the workers are idle or have already started a run sent after it (the queue
    is first in, first out). After SCORING_STUCK_SECONDS a queued run counts as lost regardless."""
    now = now or timezone.now()
    resend_cutoff = now - timedelta(seconds=settings.SCORING_QUEUED_RESEND_SECONDS)
    stuck_cutoff = now - timedelta(seconds=settings.SCORING_STUCK_SECONDS)
    queued = [s for s in Submission.objects.filter(status=Submission.Status.QUEUED).only(
        "id", "enqueued_at", "confirmed_at") if _sent_at(s) and _sent_at(s) <= resend_cutoff]
    if not queued:
        return []
    idle = not Submission.objects.filter(status=Submission.Status.SCORING).exists()
    started = Submission.objects.filter(enqueued_at__isnull=False, scoring_started_at__gte=F("enqueued_at"))
    return [s for s in queued
            if idle or _sent_at(s) <= stuck_cutoff or started.filter(enqueued_at__gt=_sent_at(s)).exists()]


def _resend(submission_id: Any, now: Any) -> None:
    with transaction.atomic():
        claimed = Submission.objects.filter(id=submission_id, status=Submission.Status.QUEUED).update(
            status_reason=f"Re-sent to the scoring queue at {now:%Y-%m-%d %H:%M} UTC: no worker had started it "
                          f"within {settings.SCORING_QUEUED_RESEND_SECONDS} s (its message was lost or its "
                          "task died).")
        if claimed:
            scoring_enqueue_on_commit(submission_id=str(submission_id))


def stuck_runs_reap(*, now: Any = None) -> dict[str, int]:
    """One sweep. Returns how many runs were re-queued, failed and nudged (queued, message re-sent)."""
    now = now or timezone.now()
    limit = settings.SCORING_STUCK_SECONDS
    cutoff = now - timedelta(seconds=limit)
    counts = {"requeued": 0, "failed": 0, "resent": 0}
    # Read before this sweep re-queues anything, so a run is re-queued or re-sent, never both.
    lost = [s.id for s in queued_without_live_task(now=now)]
    # A run whose results wait for a judge budget is not stuck: the budget refills (by the next day) and
    # the sweep of waiting judges sends them again; re-queueing would only spend its budget once more.
    waiting_for_budget = JudgeCall.objects.filter(status=JudgeCall.Status.PENDING, waiting_for_budget=True)
    stuck = ScoringRun.objects.filter(status=ScoringRun.Status.RUNNING, created_at__lte=cutoff,
                                      submission__status=Submission.Status.SCORING).exclude(
        id__in=waiting_for_budget.values("scoring_run_id"))
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
        _resend(submission_id, now)
        counts["resent"] += 1
        logger.warning("queued submission %s had no live scoring task; its message was sent again", submission_id)
    return counts
