"""Scoring a confirmed submission: one sandboxed engine run per instance, then the aggregate.

An instance's results (every prompt level and attempt) share its task, its inputs and its one
private reference, so they are scored together: one sandbox, one interpreter start, one
`python -m scoring.engine score-batch` printing a line per result. Should that process die
(a limit, a crash), the results it left without a line are scored again one sandbox each, so
every result still gets its own score or its own reason.

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
from collections.abc import Callable, Iterable
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
from scoring.engine.cli import read_result_line, score_argv, score_batch_argv
from scoring.models import InstanceScore, ScoringRun
from scoring.sandbox import Limits, SandboxBackend, SandboxResult, python_runtime_env
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


def _extract_outputs(submission: Submission, entries: Iterable[SubmissionEntry], dest: Path) -> dict[int, Path]:
    """Unpack only these results' declared outputs, in one pass over the stored archive:
    {entry id: its outputs dir}."""
    dirs: dict[int, Path] = {}
    wanted: dict[str, tuple[Path, dict[str, Any]]] = {}
    for entry in entries:
        dirs[entry.id] = dest / str(entry.id) / "outputs"
        dirs[entry.id].mkdir(parents=True)
        wanted.update({o["member"]: (dirs[entry.id], o) for o in entry.outputs})
    if not wanted:
        return dirs
    try:
        with default_storage.open(submission.archive, "rb") as handle, tarfile.open(fileobj=handle, mode="r|gz") as tar:
            for member in tar:
                rel = member.name.split("/", 1)[1] if "/" in member.name else ""
                found = wanted.get(rel)
                if found is None or not member.isfile():
                    continue
                source = tar.extractfile(member)
                assert source is not None
                target = found[0] / found[1]["path"]
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
    except (OSError, tarfile.TarError) as exc:
        raise InfrastructureError(f"could not read the stored bundle: {exc}") from exc
    return dirs


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


def _engine_batch_argv(backend: SandboxBackend, task_dir: Path, ref: Path, params: dict, jobs_file: Path) -> list[str]:
    return score_batch_argv(backend.python_command(), task_dir=task_dir, ref_dir=ref,
                            params=json.dumps(params, sort_keys=True), jobs=f"@{jobs_file}")


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


def _stopped_or_crashed(result: SandboxResult) -> dict[str, Any] | None:
    """The zero outcome of a sandbox run that did not finish normally, else None."""
    if result.timed_out or result.limit:
        return _zero(f"the scorer was stopped: {result.reason or 'time limit'}")
    if result.returncode != 0:
        tail = " ".join(result.stderr_text.strip().splitlines()[-2:])[:500]
        return _zero(f"the scorer crashed (exit {result.returncode}): {tail}")
    return None


def _batch_lines(stdout: str) -> dict[str, str]:
    """{job id: its result line} from score-batch output (scorer chatter went to stderr)."""
    lines: dict[str, str] = {}
    for line in stdout.splitlines():
        try:
            job = json.loads(line).get("job") if line.startswith("{") else None
        except (ValueError, AttributeError):
            continue
        if job is not None:
            lines[str(job)] = line
    return lines


def results_score_in_sandbox(
    backend: SandboxBackend, task_dir: Path, reference: Path, params: dict, workdir: Path,
    staged: dict[int, tuple[str, Path]],
) -> dict[int, dict[str, Any]]:
    """Outcomes of the staged results {key: (prompt level, pred dir)} of one instance: one batch
    run, then one run per result it left without a line (the batch was killed or crashed part-way).
    `workdir` (writable inside) must hold the pred dirs."""
    mounts = [task_dir, reference.parent, *backend.runtime_mounts()]
    outcomes: dict[int, dict[str, Any]] = {}
    if len(staged) > 1:
        jobs = [{"job": str(key), "pred_dir": str(pred), "prompt_level": level}
                for key, (level, pred) in staged.items()]
        jobs_file = workdir / "jobs.json"
        jobs_file.write_text(json.dumps(jobs))
        single = scoring_limits()
        # Time for the whole batch scales with its size; memory and processes stay per process.
        limits = single.replace(wall_clock_seconds=single.wall_clock_seconds * len(jobs),
                                cpu_seconds=single.cpu_seconds * len(jobs))
        result = backend.run(_engine_batch_argv(backend, task_dir, reference, params, jobs_file),
                             workdir, mounts, limits)
        lines = _batch_lines(result.stdout_text)
        for entry_id in staged:
            if str(entry_id) in lines:
                outcomes[entry_id] = _interpret(lines[str(entry_id)])
        if len(outcomes) < len(staged):
            logger.warning("score-batch left %d of %d results without a line (%s); scoring them one by one",
                           len(staged) - len(outcomes), len(staged), _stopped_or_crashed(result) or "no reason")
    for key, (level, pred) in staged.items():
        if key in outcomes:
            continue
        result = backend.run(_engine_argv(backend, task_dir, pred, reference, params, level),
                             workdir, mounts, scoring_limits())
        outcomes[key] = _stopped_or_crashed(result) or _interpret(result.stdout_text)
    return outcomes


def instance_score(
    *, scoring_run_id: int, instance_id: str, backend: SandboxBackend | None = None
) -> list[InstanceScore]:
    """Score this run's not yet scored results of one instance in one sandbox; store each once."""
    run = ScoringRun.objects.select_related("submission").get(id=scoring_run_id)
    if run.status != ScoringRun.Status.RUNNING:
        return []
    scored = InstanceScore.objects.filter(scoring_run=run).values_list("entry_id", flat=True)
    entries = list(SubmissionEntry.objects.select_related("instance__task")
                   .filter(submission=run.submission, instance_id=instance_id).exclude(id__in=scored))
    if not entries:
        return []
    instance = entries[0].instance
    backend = backend or sandbox_backend()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="score-", dir=scratch_root()) as tmp:
        tmp_path = Path(tmp)
        workdir = tmp_path / "work"
        workdir.mkdir()
        outputs = _extract_outputs(run.submission, entries, tmp_path / "bundle")
        data = _extract_data(entries[0], tmp_path / "inputs")
        try:
            reference = reference_extract(instance, tmp_path / "private")
        except (OSError, tarfile.TarError) as exc:
            raise InfrastructureError(f"could not read the reference: {exc}") from exc
        outcomes: dict[int, dict[str, Any]] = {}
        staged: dict[int, tuple[str, Path]] = {}
        for entry in entries:
            try:
                staged[entry.id] = (entry.prompt_level, stage_prediction_dir(
                    data, outputs[entry.id], workdir / f"pred-{entry.id}", [o["path"] for o in entry.outputs]))
            except Exception as exc:  # the agent's outputs cannot be staged: that is the agent's zero
                outcomes[entry.id] = _zero(f"outputs could not be staged: {exc}")
        if staged:
            outcomes.update(results_score_in_sandbox(backend, Path(instance.task.source_dir), reference,
                                              instance.params, workdir, staged))
    # Shared start-up is split evenly, so per-result durations add up to the instance's.
    duration = round((time.monotonic() - started) / len(entries), 3)
    return [_score_store(run, entry, outcomes[entry.id], backend, duration) for entry in entries]


def _score_store(
    run: ScoringRun, entry: SubmissionEntry, outcome: dict[str, Any], backend: SandboxBackend, duration: float
) -> InstanceScore:
    instance = entry.instance
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
                "duration_seconds": duration,
            },
        )
    except IntegrityError:  # another worker stored it first
        score = InstanceScore.objects.get(scoring_run=run, entry=entry)
    return score


def scoring_run_pending_instances(run: ScoringRun) -> list[str]:
    """Instance ids that still have unscored results in this run: one scoring task each."""
    pending = scoring_run_pending_entries(run)
    return sorted(set(SubmissionEntry.objects.filter(id__in=pending).values_list("instance_id", flat=True)))


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

