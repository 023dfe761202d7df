"""Re-grading the board after a task's fixed revision is published (an erratum's fix, leaderboard.errata).

Publishing a new revision of a task that published runs were scored on (proposals.publishing, through
`settings.TASK_REVISION_PUBLISHED_HOOKS`) resolves the task's errata, bumps the version of each dataset the
task is in, and re-grades every affected published run in the background: a new scoring run of the run's
stored bundle in which the affected task's results are scored again against the new revision (the same
pipeline and sandbox as any scoring) and every other result's score is carried over. Earlier scoring runs
and their scores stay, as with any rescore.

Until its re-grade completes an entry is marked "scored on an older revision" and is ranked apart from
re-graded ones (leaderboard.selectors); once re-graded the board shows its old and new mean and its rank
change until a maintainer acknowledges it. The moderation log gets a row per re-graded entry.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from celery import current_app
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone

from leaderboard.errata import errata_resolve_for_task
from leaderboard.models import LeaderboardEntry, ModerationEvent
from leaderboard.selectors import board_cache_invalidate, board_ranks
from leaderboard.services import entry_snapshot
from portal.accounts.models import User
from portal.errors import Conflict, NotFound
from portal.submissions.models import Submission, SubmissionEntry
from portal.submissions.scoring_tasks import instance_score_task
from scoring.models import Dataset, Instance, InstanceScore, ScoringRun, Task
from scoring.selectors import scoring_run_latest

logger = logging.getLogger(__name__)

PENDING, REGRADED = "pending", "regraded"
REGRADE_TASK = "leaderboard.regrade_run"  # leaderboard.tasks.regrade_run_task


def regrade_reason(task: Task) -> str:
    return f"Re-grade against {task.id} revision {task.revision}"


def task_revision_published(task_id: str) -> None:
    """The hook: resolve the task's errata and re-grade the board's runs of it."""
    task = Task.objects.filter(id=task_id).first()
    if task is None:
        return
    errata_resolve_for_task(task=task)
    regrade_start(task=task)


def _revision_scored(entry: LeaderboardEntry, task_id: str) -> int | None:
    revision = ((entry.provenance or {}).get("task_revisions") or {}).get(task_id)
    return int(revision) if isinstance(revision, int) else None


def affected_entries(task: Task) -> list[LeaderboardEntry]:
    """Published entries with results of the task scored on an older revision than its current one."""
    with_task = SubmissionEntry.objects.filter(task_id=task.id).values("submission_id")
    entries = LeaderboardEntry.objects.filter(submission_id__in=with_task).order_by("id")
    return [e for e in entries if (_revision_scored(e, task.id) or 0) < task.revision]


def regrade_start(*, task: Task) -> list[int]:
    """Mark the affected entries pending, bump the datasets' versions, queue one re-grade per run (after
    commit). Returns the entries' ids. Starting it again queues only what is not pending already."""
    with transaction.atomic():
        entries = [e for e in affected_entries(task) if (e.regrade or {}).get("to_revision") != task.revision
                   or (e.regrade or {}).get("state") != PENDING]
        datasets = set(Instance.objects.filter(task=task).values_list("dataset_id", flat=True))
        Dataset.objects.filter(name__in=datasets).update(version=F("version") + 1)
        ranks = {name: board_ranks(name) for name in {e.dataset_id for e in entries}}
        for entry in LeaderboardEntry.objects.select_for_update().filter(id__in=[e.id for e in entries]):
            entry.regrade = {"task": task.id, "from_revision": _revision_scored(entry, task.id),
                             "to_revision": task.revision, "state": PENDING, "mean_before": entry.mean,
                             "rank_before": ranks[entry.dataset_id].get(entry.id),
                             "scoring_number_before": (entry.provenance or {}).get("scoring_number")}
            entry.save(update_fields=["regrade"])
            transaction.on_commit(partial(_enqueue, str(entry.submission_id), task.id))
        transaction.on_commit(board_cache_invalidate)
    return [e.id for e in entries]


def _enqueue(submission_id: str, task_id: str) -> None:
    current_app.send_task(REGRADE_TASK, args=(submission_id, task_id))


def regrade_run_start(*, submission_id: Any, task_id: str) -> ScoringRun | None:
    """Open the run's re-grade scoring (or find the open one: a redelivered message) and queue its affected
    instances (after commit). The other tasks' scores are carried over from the latest complete scoring.
    None when the run has no complete scoring to start from."""
    task = Task.objects.get(id=task_id)
    reason = regrade_reason(task)
    with transaction.atomic():
        submission = Submission.objects.select_for_update().filter(id=submission_id).first()
        if submission is None:
            return None
        run = ScoringRun.objects.filter(submission=submission, reason=reason).order_by("-number").first()
        if run is None:
            previous = scoring_run_latest(submission.id)
            if previous is None or previous.status != ScoringRun.Status.COMPLETE:
                return None
            number = (submission.scoring_runs.aggregate(n=Max("number"))["n"] or 0) + 1
            run = ScoringRun.objects.create(submission=submission, number=number, reason=reason)
            kept = InstanceScore.objects.filter(scoring_run=previous).exclude(entry__task_id=task.id)
            InstanceScore.objects.bulk_create([_carried(score, run) for score in kept])
        if run.status != ScoringRun.Status.RUNNING:
            return run
        scored = InstanceScore.objects.filter(scoring_run=run).values("entry_id")
        pending = sorted(set(SubmissionEntry.objects.filter(submission=submission, task_id=task.id)
                             .exclude(id__in=scored).values_list("instance_id", flat=True)))
        for instance_id in pending:
            transaction.on_commit(partial(instance_score_task.delay, run.id, instance_id))
    return run


def _carried(score: InstanceScore, run: ScoringRun) -> InstanceScore:
    fields = {f.attname: getattr(score, f.attname) for f in InstanceScore._meta.concrete_fields
              if f.attname not in {"id", "scoring_run_id"}}
    return InstanceScore(**fields, scoring_run_id=run.id)


def regrade_scoring_completed(scoring_run_id: int) -> None:
    """Completion hook: a finished re-grade scoring replaces its entry's figures (the old ones are in the
    entry's `regrade` record and in the earlier scoring run) and is logged publicly."""
    run = ScoringRun.objects.select_related("submission").get(id=scoring_run_id)
    if not run.reason.startswith("Re-grade against "):
        return
    with transaction.atomic():
        entry = LeaderboardEntry.objects.select_for_update().filter(submission_id=run.submission_id).first()
        if entry is None or (entry.regrade or {}).get("state") != PENDING:
            return
        for field, value in entry_snapshot(run.submission, run).items():
            setattr(entry, field, value)
        entry.scoring_run = run
        entry.regrade = {**entry.regrade, "state": REGRADED, "mean_after": entry.mean,
                         "regraded_at": timezone.now().isoformat()}
        entry.save()
        ModerationEvent.objects.create(
            submission=run.submission, dataset_id=entry.dataset_id, kind=ModerationEvent.Kind.REGRADE,
            display_name=entry.display_name, task_id=entry.regrade["task"],
            reason=f"{run.reason}: the task was fixed after an erratum; the earlier scoring is kept.",
            mean_before=entry.regrade.get("mean_before"), mean_after=entry.mean)
        transaction.on_commit(board_cache_invalidate)


def regrade_acknowledge(*, entry_id: int, actor: User) -> LeaderboardEntry:
    """A maintainer has seen the re-grade: the board stops showing the change. Twice is once."""
    with transaction.atomic():
        entry = LeaderboardEntry.objects.select_for_update().filter(id=entry_id).first()
        if entry is None:
            raise NotFound("No published run with this id.")
        if not entry.regrade:
            return entry
        if entry.regrade.get("state") == PENDING:
            raise Conflict("This run is still being re-graded; acknowledge it once its new scores are in.",
                           code="regrade_pending")
        entry.regrade = {}
        entry.save(update_fields=["regrade"])
        transaction.on_commit(board_cache_invalidate)
    return entry


def regrade_entries(task: Task) -> list[LeaderboardEntry]:
    """The board entries whose re-grade against this task's new revision is pending or not yet acknowledged."""
    return list(LeaderboardEntry.objects.filter(regrade__task=task.id).order_by("dataset_id", "-mean"))
