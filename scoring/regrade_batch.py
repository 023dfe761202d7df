"""Scoring one instance's results from many scoring runs in one sandbox: the re-grade of a task's new revision
(leaderboard.regrade) scores the same instance for every published run of it, so the runs share the task's
files, the instance's inputs and its reference, and one `score-batch` sandbox serves a whole chunk of them
instead of one sandbox per run.

Built from the pipeline's own steps (`scoring.pipeline`): each run's outputs come from its stored bundle and
are checked against what intake verified; each score is stored once per (scoring run, result); results
whose judges must be asked are scored again per run through the pipeline's judge rounds. The scores are
stored with one INSERT per chunk (the pipeline's `_score_store` fields, unique per run and result).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from scoring import metrics
from scoring.engine import ENGINE_VERSION, stage_prediction_dir
from scoring.models import Instance, InstanceScore, ScoringRun
from scoring.pipeline import (
    READ_ERRORS,
    InfrastructureError,
    ResultToScore,
    StagedResult,
    StoredBundleMismatch,
    bundle_outputs_extract,
    error_outcome,
    instance_inputs_extract,
    results_score_in_sandbox,
    results_score_with_judges,
)
from scoring.sandbox import SandboxBackend, server_backend
from scoring.sandbox.process import scratch_tree
from scoring.task_storage import reference_extract, scratch_root, task_source_dir


@dataclass(frozen=True)
class RunToScore:
    """One scoring run's results of the instance, and its stored bundle."""

    scoring_run_id: int
    archive: str
    results: Sequence[ResultToScore]


def instance_results_score_many(*, instance_id: str, runs: Sequence[RunToScore],
                                backend: SandboxBackend | None = None) -> dict[int, str]:
    """Score every not yet scored result of these runs on one instance, in one sandbox batch; store each
    score in its run. Returns {scoring run id: why it was not scored} for runs whose stored bundle no
    longer matches what intake verified (the caller fails those runs); storage and sandbox trouble raises
    (the caller retries: what is stored stays stored)."""
    instance = Instance.objects.select_related("task").get(instance_id=instance_id)
    backend = backend or server_backend(settings.SCORING_SANDBOX)
    open_runs = {run.id: run for run in ScoringRun.objects.filter(id__in=[r.scoring_run_id for r in runs],
                                                                  status=ScoringRun.Status.RUNNING)}
    scored = set(InstanceScore.objects.filter(scoring_run_id__in=list(open_runs)).values_list("entry_id", flat=True))
    mismatched: dict[int, str] = {}
    started = time.monotonic()
    with scratch_tree("regrade-", scratch_root()) as tmp:
        workdir = tmp / "work"
        workdir.mkdir()
        data = instance_inputs_extract(instance, tmp / "inputs")
        try:
            reference = reference_extract(instance, tmp / "private")
            task_dir = task_source_dir(instance.task)
        except READ_ERRORS as exc:
            raise InfrastructureError(f"could not read the task or its reference: {exc}") from exc
        owner: dict[int, int] = {}  # entry id -> scoring run id
        staged: dict[int, tuple[str, Path]] = {}
        outcomes: dict[int, dict[str, Any]] = {}
        for run in runs:
            pending = [r for r in run.results if r.entry_id not in scored]
            if run.scoring_run_id not in open_runs or not pending:
                continue
            try:
                outputs = bundle_outputs_extract(run.archive, pending, tmp / "bundles" / str(run.scoring_run_id))
            except StoredBundleMismatch as exc:
                mismatched[run.scoring_run_id] = str(exc)
                continue
            for result in pending:
                owner[result.entry_id] = run.scoring_run_id
                try:
                    staged[result.entry_id] = (result.prompt_level, stage_prediction_dir(
                        data, outputs[result.entry_id], workdir / f"pred-{result.entry_id}",
                        [o["path"] for o in result.outputs]))
                except Exception as exc:  # the agent's outputs cannot be staged: that is the agent's zero
                    outcomes[result.entry_id] = error_outcome(f"outputs could not be staged: {exc}")
        if staged:
            outcomes.update(results_score_in_sandbox(backend, task_dir, reference, instance.params, workdir, staged))
        judged = {key for key, outcome in outcomes.items() if "pending_judges" in outcome}
        for run_id in {owner[key] for key in judged}:
            mine = {key: staged[key] for key in judged if owner[key] == run_id}
            outcomes.update(results_score_with_judges(open_runs[run_id], backend, task_dir, workdir, {
                key: StagedResult(level, pred, reference, instance.params) for key, (level, pred) in mine.items()},
                tmp))
    duration = round((time.monotonic() - started) / max(1, len(outcomes)), 3)
    # Still waiting for a judge: not stored, the sweep scores it later. The rest in one INSERT; a score
    # another worker stored first stays (unique per run and result).
    done = {key: outcome for key, outcome in outcomes.items() if "pending_judges" not in outcome}
    InstanceScore.objects.bulk_create([InstanceScore(
        scoring_run_id=owner[key], entry_id=key, **outcome, engine_version=ENGINE_VERSION,
        task_revision=instance.task_revision, reference_sha256=instance.reference_sha256,
        sandbox_backend=backend.name, duration_seconds=duration) for key, outcome in done.items()],
        ignore_conflicts=True)
    for outcome in done.values():
        metrics.result_scored(outcome=outcome["outcome"], seconds=duration)
    return mismatched
