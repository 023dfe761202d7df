"""A confirmed submission's way through scoring: claimed, scored instance by instance, then
finalised (scored) or failed, each with its status and reason.

The scoring itself (sandbox, engine, one stored score per result) is `scoring.pipeline`; this
side hands it plain data and moves the submission. Every step is safe to repeat: a redelivered
Celery task finds its work done and returns. Claims are conditional UPDATEs or row locks, so a
run starts once and finishes once however many workers see it.
"""

import logging
from collections.abc import Callable, Sequence

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.module_loading import import_string

from portal.submissions.models import Submission, SubmissionEntry
from portal.submissions.outcomes import VALID_OUTCOMES, coverage, result_outcome, score_end
from portal.submissions.selectors import official_task_ids
from scoring.aggregation import ScoredResult, aggregate
from scoring.models import InstanceScore, ScoringRun
from scoring.pipeline import ResultToScore, StoredBundleMismatch, run_outputs_drop, task_results_score
from scoring.sandbox import SandboxBackend
from scoring.selectors import scoring_run_latest

logger = logging.getLogger(__name__)


def scoring_run_start(*, submission_id: str, requested_by_id: str | None = None,
                      rejudge: bool = False) -> ScoringRun | None:
    """Claim a queued submission and open its scoring run (or resume the open one). `rejudge`: ask
    the judge models again instead of replaying the replies earlier scorings recorded.

    Returns None when there is nothing to do (already scored, withdrawn, …).
    """
    with transaction.atomic():
        submission = Submission.objects.select_for_update().filter(id=submission_id).first()
        if submission is None:
            return None
        current = scoring_run_latest(submission.id)
        if submission.status == Submission.Status.SCORING and current and current.status == ScoringRun.Status.RUNNING:
            return current  # redelivered: resume
        if submission.status != Submission.Status.QUEUED:
            return None
        number = (submission.scoring_runs.aggregate(n=Max("number"))["n"] or 0) + 1
        requester = get_user_model().objects.filter(id=requested_by_id).first() if requested_by_id else None
        run = ScoringRun.objects.create(submission=submission, number=number, requested_by=requester,
                                        rejudge=rejudge)
        submission.status = Submission.Status.SCORING
        submission.scoring_started_at = timezone.now()
        submission.save(update_fields=["status", "scoring_started_at"])
    return run


def scoring_run_pending_entries(run: ScoringRun) -> list[int]:
    scored = InstanceScore.objects.filter(scoring_run=run).values_list("entry_id", flat=True)
    return list(run.submission.entries.exclude(id__in=scored).values_list("id", flat=True))


def scoring_run_pending_instances(run: ScoringRun) -> list[str]:
    """Instance ids that still have unscored results in this run: one scoring task each."""
    pending = scoring_run_pending_entries(run)
    return sorted(set(SubmissionEntry.objects.filter(id__in=pending).values_list("instance_id", flat=True)))


# Instances of one task scored in one sandbox at most: bounds the unit a retry repeats.
INSTANCES_PER_SANDBOX = 8


def scoring_run_pending_task_groups(run: ScoringRun) -> list[list[str]]:
    """The pending instances grouped by task, at most INSTANCES_PER_SANDBOX a group: one scoring task
    (one sandbox, one engine start) each."""
    pending = scoring_run_pending_entries(run)
    by_task: dict[str, list[str]] = {}
    for task_id, instance_id in (SubmissionEntry.objects.filter(id__in=pending)
                                 .values_list("instance__task_id", "instance_id").distinct()
                                 .order_by("instance__task_id", "instance_id")):
        by_task.setdefault(task_id, []).append(instance_id)
    return [ids[i:i + INSTANCES_PER_SANDBOX] for ids in by_task.values()
            for i in range(0, len(ids), INSTANCES_PER_SANDBOX)]


def run_instances_score(
    *, scoring_run_id: int, instance_id: str, backend: SandboxBackend | None = None,
    more_instance_ids: Sequence[str] = (),
) -> list[InstanceScore]:
    """Score this run's not yet scored results of one instance, and of `more_instance_ids` (other
    instances of its task), in one sandbox; store each once. A stored archive that no longer matches
    what intake verified fails the run instead."""
    run = ScoringRun.objects.select_related("submission").get(id=scoring_run_id)
    instance_ids = list(dict.fromkeys([instance_id, *more_instance_ids]))
    entries = SubmissionEntry.objects.filter(submission_id=run.submission_id)
    results: dict[str, list[ResultToScore]] = {iid: [] for iid in instance_ids}
    every = []
    for entry_id, iid, level, outputs in entries.values_list("id", "instance_id", "prompt_level", "outputs"):
        every.append(ResultToScore(entry_id=entry_id, prompt_level=level, outputs=outputs))
        if iid in results:
            results[iid].append(every[-1])
    try:
        return task_results_score(scoring_run_id=run.id, archive=run.submission.archive, instances=results,
                                  backend=backend, run_results=every)
    except StoredBundleMismatch as exc:
        logger.error("scoring run %s: stored bundle %s does not match its intake record: %s",
                     run.id, run.submission.archive, exc)
        scoring_run_fail(scoring_run_id=run.id, reason=f"the stored bundle does not match what was verified "
                         f"at upload ({exc}); it was not scored")
        return []


def scoring_run_finalize(*, scoring_run_id: int) -> bool:
    """Aggregate once every result has its score. True if this call finished the run."""
    run = ScoringRun.objects.select_related("submission").get(id=scoring_run_id)
    total = run.submission.entries.count()
    if InstanceScore.objects.filter(scoring_run=run).count() < total:
        return False
    scores = list(InstanceScore.objects.filter(scoring_run=run).select_related("entry"))
    outcomes = {s.id: result_outcome(score_end(s.entry, s)) for s in scores}
    # Evaluation and judge errors are shown as invalid, never folded in as a 0 (portal.submissions.outcomes).
    results = [
        ScoredResult(
            instance_id=s.entry.instance_id,
            task_id=s.entry.task_id,
            prompt_level=s.entry.prompt_level,
            attempt=s.entry.attempt,
            completed=s.entry.result_status == "completed",
            percent=s.percent,
        )
        for s in scores if outcomes[s.id] in VALID_OUTCOMES
    ]
    summary = aggregate(results)
    summary["coverage"] = coverage(((s.entry.task_id, s.entry.prompt_level, outcomes[s.id]) for s in scores),
                                   official_task_ids(run.submission.dataset_id))
    with transaction.atomic():
        claimed = ScoringRun.objects.filter(id=run.id, status=ScoringRun.Status.RUNNING).update(
            status=ScoringRun.Status.COMPLETE, finished_at=timezone.now(), aggregate=summary
        )
        if not claimed:
            return False
        Submission.objects.filter(id=run.submission_id).update(
            status=Submission.Status.SCORED, scored_at=timezone.now(), overall_score=summary["overall"],
            status_reason="",
        )
        transaction.on_commit(lambda: scoring_run_completed_hooks(run.id))
    run_outputs_drop(run.id)  # this host's copy; another host's goes with a late message or the leftover sweep
    return True


def completion_hooks() -> list[Callable[[int], None]]:
    """What runs after a scoring completes: `settings.SCORING_RUN_COMPLETION_HOOKS`, dotted paths
    of functions taking the scoring run's id (the leaderboard's integrity flags and owner e-mail),
    named in settings so that submissions need not import the apps that follow up."""
    return [import_string(path) for path in settings.SCORING_RUN_COMPLETION_HOOKS]


def scoring_run_completed_hooks(scoring_run_id: int) -> None:
    for hook in completion_hooks():
        try:
            hook(scoring_run_id)
        except Exception:  # a notification must never undo a finished scoring
            logger.exception("completion hook %s failed for scoring run %s", hook, scoring_run_id)


def scoring_run_note_retry(*, scoring_run_id: int, attempt: int, attempts: int, delay: float,
                           error: BaseException) -> None:
    """While an infrastructure error is retried, the run page says so and why (the run is still
    scoring; the note goes when the run is scored or failed)."""
    run = ScoringRun.objects.get(id=scoring_run_id)
    reason = (f"Scoring attempt {attempt} of {attempts} for one instance met an infrastructure error and is "
              f"retried in about {max(1, round(delay))} s: {str(error)[:1000]}")
    Submission.objects.filter(id=run.submission_id, status=Submission.Status.SCORING).update(status_reason=reason)


def scoring_run_fail(*, scoring_run_id: int, reason: str) -> None:
    run = ScoringRun.objects.get(id=scoring_run_id)
    if ScoringRun.objects.filter(id=run.id, status=ScoringRun.Status.RUNNING).update(
        status=ScoringRun.Status.FAILED, finished_at=timezone.now(), reason=reason
    ):
        Submission.objects.filter(id=run.submission_id, status=Submission.Status.SCORING).update(
            status=Submission.Status.FAILED, status_reason=reason
        )
    run_outputs_drop(run.id)
