"""Re-grading the board after a task's fixed revision is published (an erratum's fix, leaderboard.errata).

Publishing a new revision of a task that published runs were scored on (proposals.publishing, through
`settings.TASK_REVISION_PUBLISHED_HOOKS`) resolves the task's errata, bumps the version of each dataset the
task is in, and re-grades every affected published run in the background: a new scoring run of the run's
stored bundle in which the affected task's results are scored again against the new revision and every
other result's score is carried over. The runs of one instance are scored in chunks, one sandbox per
chunk (`scoring.regrade_batch`, the pipeline's own steps): see bench/regrade_throughput.py. Earlier scoring runs
and their scores stay, as with any rescore.

Until its re-grade completes an entry is marked "scored on an older revision" and is ranked apart from
re-graded ones (leaderboard.selectors); once re-graded the board shows its old and new mean and its rank
change until a maintainer acknowledges it. The moderation log gets a row per re-graded entry.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from functools import partial
from typing import Any

from celery import current_app
from django.conf import settings
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
from portal.submissions.scoring_runs import scoring_run_fail, scoring_run_finalize
from scoring.models import Dataset, Instance, InstanceScore, ScoringRun, Task
from scoring.pipeline import ResultToScore
from scoring.regrade_batch import RunToScore, instance_results_score_many
from scoring.selectors import scoring_run_latest

logger = logging.getLogger(__name__)

PENDING, REGRADED = "pending", "regraded"
REGRADE_TASK = "leaderboard.regrade_run"  # leaderboard.tasks.regrade_batch_task
# Set while a chunk's runs are finished (regrade_batch), which retires the board's cache once at the end.
_IN_CHUNK: ContextVar[bool] = ContextVar("regrade_in_chunk", default=False)


def regrade_reason(task: Task) -> str:
    return f"Re-grade against {task.id} revision {task.revision}"


def task_revision_published(task_id: str) -> None:
    """The hook: resolve the task's errata and re-grade the board's runs of it."""
    task = Task.objects.filter(id=task_id).first()
    if task is None:
        return
    errata_resolve_for_task(task=task)
    datasets = set(Instance.objects.filter(task=task).values_list("dataset_id", flat=True))
    Dataset.objects.filter(name__in=datasets).update(version=F("version") + 1)
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
    """Mark the affected entries pending and queue their re-grade (after commit): one message per chunk of
    REGRADE_BATCH_RUNS runs of one instance. Returns the entries' ids. Calling it again (`manage.py
    task_regrade`, after a lost message) queues every entry not re-graded yet again, keeping what the
    pending ones recorded before; the re-grade itself skips what is done."""
    with transaction.atomic():
        entries = affected_entries(task)
        ranks = {name: board_ranks(name) for name in {e.dataset_id for e in entries}}
        for entry in LeaderboardEntry.objects.select_for_update().filter(id__in=[e.id for e in entries]):
            if (entry.regrade or {}).get("to_revision") == task.revision and entry.regrade.get("state") == PENDING:
                continue
            entry.regrade = {"task": task.id, "from_revision": _revision_scored(entry, task.id),
                             "to_revision": task.revision, "state": PENDING, "mean_before": entry.mean,
                             "rank_before": ranks[entry.dataset_id].get(entry.id),
                             "scoring_number_before": (entry.provenance or {}).get("scoring_number")}
            entry.save(update_fields=["regrade"])
        for instance_id, submission_ids in _batches(task, [e.submission_id for e in entries]):
            transaction.on_commit(partial(current_app.send_task, REGRADE_TASK,
                                          args=(task.id, instance_id, submission_ids)))
        transaction.on_commit(board_cache_invalidate)
    return [e.id for e in entries]


def _batches(task: Task, submission_ids: list[Any]) -> list[tuple[str, list[str]]]:
    """(instance id, runs) chunks: the runs with results of each of the task's instances, at most
    REGRADE_BATCH_RUNS a chunk (one sandbox each)."""
    by_instance: dict[str, list[str]] = {}
    pairs = (SubmissionEntry.objects.filter(submission_id__in=submission_ids, task_id=task.id)
             .values_list("instance_id", "submission_id").distinct().order_by("instance_id", "submission_id"))
    for instance_id, submission_id in pairs:
        by_instance.setdefault(instance_id, []).append(str(submission_id))
    size = settings.REGRADE_BATCH_RUNS
    return [(instance_id, ids[i:i + size]) for instance_id, ids in by_instance.items()
            for i in range(0, len(ids), size)]


def regrade_run_open(*, submission_id: Any, task: Task) -> ScoringRun | None:
    """The run's re-grade scoring against the task's current revision: opened with every other task's scores
    carried over from the latest complete scoring, or the one already opened (a redelivered message). None
    when the run has no complete scoring to start from."""
    reason = regrade_reason(task)
    with transaction.atomic():
        submission = Submission.objects.select_for_update().filter(id=submission_id).first()
        if submission is None:
            return None
        run = ScoringRun.objects.filter(submission=submission, reason=reason).order_by("-number").first()
        if run is not None:
            return run
        previous = scoring_run_latest(submission.id)
        if previous is None or previous.status != ScoringRun.Status.COMPLETE:
            return None
        number = (submission.scoring_runs.aggregate(n=Max("number"))["n"] or 0) + 1
        run = ScoringRun.objects.create(submission=submission, number=number, reason=reason)
        kept = InstanceScore.objects.filter(scoring_run=previous).exclude(entry__task_id=task.id)
        InstanceScore.objects.bulk_create([_carried(score, run) for score in kept])
    return run


def regrade_batch(*, task_id: str, instance_id: str, submission_ids: list[str]) -> int:
    """Re-grade these runs' results of one instance in one sandbox, then finish each run (its completion hook
    updates its board entry). Safe to repeat: scored results are skipped, finished runs stay finished.
    Returns how many runs it finished."""
    task = Task.objects.get(id=task_id)
    runs = [run for run in (regrade_run_open(submission_id=s, task=task) for s in submission_ids)
            if run is not None and run.status == ScoringRun.Status.RUNNING]
    archives = dict(Submission.objects.filter(id__in=[r.submission_id for r in runs]).values_list("id", "archive"))
    results: dict[Any, list[ResultToScore]] = {}
    for entry_id, submission_id, level, outputs in SubmissionEntry.objects.filter(
            submission_id__in=list(archives), instance_id=instance_id).values_list(
            "id", "submission_id", "prompt_level", "outputs"):
        results.setdefault(submission_id, []).append(ResultToScore(entry_id, level, outputs))
    mismatched = instance_results_score_many(instance_id=instance_id, runs=[
        RunToScore(r.id, archives[r.submission_id], results.get(r.submission_id, [])) for r in runs])
    for run_id, why in mismatched.items():
        scoring_run_fail(scoring_run_id=run_id, reason=f"the stored bundle does not match what was verified at "
                                                       f"upload ({why}); it was not re-graded")
    # One transaction: the chunk's entries change on the board together (their completion hooks run at its
    # commit), and the board's cache is retired once per chunk, not once per run: otherwise readers would get
    # a cold board throughout the re-grade.
    token = _IN_CHUNK.set(True)
    try:
        with transaction.atomic():
            finished = sum(scoring_run_finalize(scoring_run_id=run.id) for run in runs if run.id not in mismatched)
    finally:
        _IN_CHUNK.reset(token)
    board_cache_invalidate()
    return finished


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
        if not _IN_CHUNK.get():  # a run finished elsewhere (its judges answered later): retire the cache now
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
