"""Scoring a confirmed submission: one sandboxed engine run per result, then the aggregate.

Every step is safe to repeat: a redelivered Celery task finds its work done and returns.
Claims are conditional UPDATEs; InstanceScore is unique per (scoring run, result), so a
result is counted exactly once however many workers see it.
"""

import json
import logging
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from portal.submissions.models import Submission, SubmissionEntry
from scoring.aggregation import ScoredResult, aggregate
from scoring.catalog import reference_extract, sandbox_backend, scratch_root
from scoring.engine import ENGINE_VERSION, stage_prediction_dir
from scoring.engine.cli import read_result_line, score_argv
from scoring.models import InstanceScore, ScoringRun
from scoring.sandbox import Limits, SandboxBackend, python_runtime_env
from scoring.selectors import scoring_run_latest

logger = logging.getLogger(__name__)
Enqueue = Callable[[int, int], None]


class InfrastructureError(Exception):
    """Storage, sandbox or database trouble: retry the task, never score the result 0 for it."""


def scoring_run_start(*, submission_id: str, requested_by_id: str | None = None) -> ScoringRun | None:
    """Claim a queued submission and open its scoring run (or resume the open one).

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
        run = ScoringRun.objects.create(submission=submission, number=number, requested_by=requester)
        submission.status = Submission.Status.SCORING
        submission.scoring_started_at = timezone.now()
        submission.save(update_fields=["status", "scoring_started_at"])
    return run


def scoring_run_pending_entries(run: ScoringRun) -> list[int]:
    scored = InstanceScore.objects.filter(scoring_run=run).values_list("entry_id", flat=True)
    return list(run.submission.entries.exclude(id__in=scored).values_list("id", flat=True))


def _extract_outputs(submission: Submission, entry: SubmissionEntry, dest: Path) -> Path:
    """Unpack only this result's declared outputs from the stored archive."""
    outputs = dest / "outputs"
    outputs.mkdir(parents=True)
    wanted = {o["member"]: o for o in entry.outputs}
    if not wanted:
        return outputs
    try:
        with default_storage.open(submission.archive, "rb") as handle, tarfile.open(fileobj=handle, mode="r|gz") as tar:
            for member in tar:
                rel = member.name.split("/", 1)[1] if "/" in member.name else ""
                spec = wanted.get(rel)
                if spec is None or not member.isfile():
                    continue
                source = tar.extractfile(member)
                assert source is not None
                target = outputs / spec["path"]
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
    except (OSError, tarfile.TarError) as exc:
        raise InfrastructureError(f"could not read the stored bundle: {exc}") from exc
    return outputs


def _extract_data(entry: SubmissionEntry, dest: Path) -> Path:
    instance = entry.instance
    try:
        with default_storage.open(instance.input_archive, "rb") as handle, tarfile.open(
            fileobj=handle, mode="r:gz"
        ) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(f"{instance.instance_id}/data/")]
            tar.extractall(dest, members=members, filter="data")
    except (OSError, tarfile.TarError) as exc:
        raise InfrastructureError(f"could not read the instance inputs: {exc}") from exc
    return dest / instance.instance_id / "data"


def _engine_argv(backend: SandboxBackend, task_dir: Path, pred: Path, ref: Path, params: dict, level: str) -> list[str]:
    return score_argv(backend.python_command(), task_dir=task_dir, pred_dir=pred, ref_dir=ref,
                      params=json.dumps(params, sort_keys=True), prompt_level=level)


def scoring_limits() -> Limits:
    return Limits(
        wall_clock_seconds=settings.SCORING_TIMEOUT_SECONDS,
        cpu_seconds=settings.SCORING_TIMEOUT_SECONDS,
        memory_bytes=settings.SCORING_MEMORY_BYTES,
        max_processes=32,
        max_file_bytes=256 << 20,
        network=False,
        env=python_runtime_env(),
    )


def _zero(reason: str) -> dict[str, Any]:
    return {"outcome": InstanceScore.Outcome.ERROR, "final_score": 0.0, "max_score": 100.0, "percent": 0.0,
            "hard_gates_passed": False, "reason": reason, "result": {}}


def _interpret(stdout: str) -> dict[str, Any]:
    try:
        result = read_result_line(stdout)
    except ValueError as exc:
        return _zero(str(exc))
    if result.get("evaluation_status") != "completed" or result.get("final_score") is None:
        kind = result.get("failure_kind") or "evaluation_invalid"
        return {**_zero(f"scoring could not complete ({kind}): {result.get('error') or ''}".strip()), "result": result}
    final, maximum = float(result["final_score"]), float(result.get("max_score") or 0)
    messages = [r.get("message") for r in result.get("gate_results", []) + result.get("score_results", [])
                if r.get("message") and not r.get("passed", True)]
    return {
        "outcome": InstanceScore.Outcome.SCORED,
        "final_score": final,
        "max_score": maximum,
        "percent": round(100.0 * final / maximum, 6) if maximum > 0 else 0.0,
        "hard_gates_passed": bool(result.get("hard_gates_passed")),
        "reason": "; ".join(messages)[:2000],
        "result": {k: result.get(k) for k in ("final_score", "max_score", "hard_gates_passed", "soft_gate_failures",
                                              "gate_results", "score_results", "engine_version")},
    }


def entry_score(*, scoring_run_id: int, entry_id: int, backend: SandboxBackend | None = None) -> InstanceScore | None:
    """Score one result in the sandbox and store it once. Returns the (possibly existing) score."""
    existing = InstanceScore.objects.filter(scoring_run_id=scoring_run_id, entry_id=entry_id).first()
    if existing is not None:
        return existing
    run = ScoringRun.objects.select_related("submission").get(id=scoring_run_id)
    if run.status != ScoringRun.Status.RUNNING:
        return None
    entry = SubmissionEntry.objects.select_related("instance__task").get(id=entry_id, submission=run.submission)
    instance = entry.instance
    backend = backend or sandbox_backend()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="score-", dir=scratch_root()) as tmp:
        tmp_path = Path(tmp)
        workdir = tmp_path / "work"
        workdir.mkdir()
        outputs = _extract_outputs(run.submission, entry, tmp_path / "bundle")
        data = _extract_data(entry, tmp_path / "inputs")
        try:
            reference = reference_extract(instance, tmp_path / "private")
        except (OSError, tarfile.TarError) as exc:
            raise InfrastructureError(f"could not read the reference: {exc}") from exc
        try:
            pred = stage_prediction_dir(data, outputs, workdir / "pred", [o["path"] for o in entry.outputs])
        except Exception as exc:  # the agent's outputs cannot be staged: that is the agent's zero
            outcome = _zero(f"outputs could not be staged: {exc}")
        else:
            task_dir = Path(instance.task.source_dir)
            result = backend.run(
                _engine_argv(backend, task_dir, pred, reference, instance.params, entry.prompt_level),
                workdir,
                [task_dir, reference.parent, *backend.runtime_mounts()],
                scoring_limits(),
            )
            if result.timed_out or result.limit:
                outcome = _zero(f"the scorer was stopped: {result.reason or 'time limit'}")
            elif result.returncode != 0:
                tail = " ".join(result.stderr_text.strip().splitlines()[-2:])[:500]
                outcome = _zero(f"the scorer crashed (exit {result.returncode}): {tail}")
            else:
                outcome = _interpret(result.stdout_text)
    try:
        score, _ = InstanceScore.objects.get_or_create(
            scoring_run=run,
            entry=entry,
            defaults={
                **outcome,
                "engine_version": ENGINE_VERSION,
                "task_revision": instance.task_revision,
                "reference_sha256": instance.reference_sha256,
                "sandbox_backend": backend.name,
                "duration_seconds": round(time.monotonic() - started, 3),
            },
        )
    except IntegrityError:  # another worker stored it first
        score = InstanceScore.objects.get(scoring_run=run, entry=entry)
    return score


def scoring_run_finalize(*, scoring_run_id: int) -> bool:
    """Aggregate once every result has its score. True if this call finished the run."""
    run = ScoringRun.objects.select_related("submission").get(id=scoring_run_id)
    total = run.submission.entries.count()
    if InstanceScore.objects.filter(scoring_run=run).count() < total:
        return False
    scores = InstanceScore.objects.filter(scoring_run=run).select_related("entry")
    results = [
        ScoredResult(
            instance_id=s.entry.instance_id,
            task_id=s.entry.task_id,
            prompt_level=s.entry.prompt_level,
            attempt=s.entry.attempt,
            completed=s.entry.result_status == "completed",
            percent=s.percent,
        )
        for s in scores
    ]
    summary = aggregate(results)
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
    return True


# Other apps (leaderboard: integrity flags, owner e-mail) register here instead of being imported.
COMPLETION_HOOKS: list[Callable[[int], None]] = []


def scoring_run_completed_hooks(scoring_run_id: int) -> None:
    for hook in COMPLETION_HOOKS:
        try:
            hook(scoring_run_id)
        except Exception:  # a notification must never undo a finished scoring
            logger.exception("completion hook %s failed for scoring run %s", hook, scoring_run_id)


def scoring_run_fail(*, scoring_run_id: int, reason: str) -> None:
    run = ScoringRun.objects.get(id=scoring_run_id)
    if ScoringRun.objects.filter(id=run.id, status=ScoringRun.Status.RUNNING).update(
        status=ScoringRun.Status.FAILED, finished_at=timezone.now(), reason=reason
    ):
        Submission.objects.filter(id=run.submission_id, status=Submission.Status.SCORING).update(
            status=Submission.Status.FAILED, status_reason=reason
        )

