"""Task health: is a published task still sound? One check per task revision and dataset.

A check runs the task's own solutions in the scoring sandbox on each dataset's instance and scores
what they wrote with the engine, exactly as a submitted result is scored (`pipeline.results_score_in_sandbox`):

- the reference solution (`solution/solve.py`) must score 100 at every prompt level;
- the naive solution (`solution/naive.py`, what `examples/agents/naive_agent.py` runs) must stay under
  the B3/B4 difficulty gate (`contracts.difficulty`);
- adversarial predictions must not score above the naive one at any level: the reference outputs of
  the task's other instance (the other dataset's seed), the reference outputs' shapes with constant
  values, and the naive outputs carrying text addressed to the grader (`health_predictions`).

Judged tasks ask the Portal's configured judge endpoint (`judge_services`), and the check says which.
A task with nothing to check it with here (definition-only, no reference solution, a scorer that cannot
run here) is recorded as "not checkable here" with the reason, never as healthy. A check that cannot run
(sandbox, storage, judge endpoint) ends as an error: it says nothing about the task and opens no erratum.
"""

from __future__ import annotations

import logging
import os
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from contracts import PROMPT_LEVELS
from contracts.archives import extract_tree
from contracts.difficulty import DIFFICULTY_THRESHOLD, GATED_LEVELS
from scoring.engine import ENGINE_VERSION, stage_prediction_dir
from scoring.health_predictions import constant_outputs, grader_text_outputs
from scoring.judge_services import judge_client, judge_endpoint
from scoring.judging.local import answer_requests
from scoring.judging.settings import JUDGE_ROUNDS
from scoring.judging.verdicts import sandbox_reply
from scoring.models import Instance, InstanceScore, Task, TaskHealthCheck
from scoring.pipeline import INFRASTRUCTURE_ERRORS, error_outcome, results_score_in_sandbox
from scoring.sandbox import SandboxBackend, server_backend
from scoring.sandbox.limits import generation_limits
from scoring.sandbox.outputs import UnsafeOutput, collect_outputs
from scoring.sandbox.process import scratch_tree
from scoring.task_storage import reference_extract, scratch_root, task_source_dir

logger = logging.getLogger(__name__)

REFERENCE, NAIVE = "reference", "naive"
OTHER_INSTANCE, CONSTANT_VALUES, GRADER_TEXT = "other_instance", "constant_values", "grader_text"
PROBE_NAMES = {
    REFERENCE: "reference solution",
    NAIVE: "naive agent",
    OTHER_INSTANCE: "outputs of the task's other instance",
    CONSTANT_VALUES: "right shapes, constant values",
    GRADER_TEXT: "text addressed to the grader",
}
ADVERSARIAL = (OTHER_INSTANCE, CONSTANT_VALUES, GRADER_TEXT)
FULL_MARKS = 100.0 - 1e-6
TOLERANCE = 1e-6  # an adversarial prediction may tie the naive one, never beat it


class HealthCheckUnavailable(Exception):
    """The check could not run (no judge endpoint, a judge that gave no reply): an error, not a verdict."""


_UNAVAILABLE: tuple[type[Exception], ...] = (*INFRASTRUCTURE_ERRORS, HealthCheckUnavailable, tarfile.TarError)


@dataclass(frozen=True)
class SolutionRun:
    """What one of the task's solutions wrote on one instance: its outputs dir, or why there is none."""

    outputs: Path | None
    problem: str = ""


# ------------------------------------------------------------------ what cannot be checked here
def not_checkable_reason(task: Task, task_dir: Path | None) -> str:
    """Why `task` cannot be health-checked on this Portal, or "" when it can."""
    if task.status == Task.Status.DEFINITION_ONLY:
        return ("an official definition-only task: published without its generator and reference solution, "
                "so there is nothing to check it with here")
    if task.unscorable_reason:
        return f"its scorer cannot run here: {task.unscorable_reason}"
    if not task.instances.exists():
        return "no instance of it is generated here"
    if task_dir is not None and not (task_dir / "solution" / "solve.py").is_file():
        return "it has no reference solution (solution/solve.py) to check it with"
    return ""


# ------------------------------------------------------------------ running the task's solutions
def _extract_workspace(instance: Instance, dest: Path) -> Path:
    """The instance as an agent gets it (inputs, prompts, task_info.json; never a reference)."""
    def public(name: str) -> bool:
        rel = name.split("/", 1)[1] if "/" in name else ""
        return not (rel == "reference" or rel.startswith("reference/") or rel == "instance_meta.json")

    with default_storage.open(instance.input_archive, "rb") as handle, tarfile.open(fileobj=handle, mode="r:gz") as tar:
        extract_tree(tar, dest, select=public)
    return dest / instance.instance_id


def solution_run(backend: SandboxBackend, task_dir: Path, instance: Instance, script: str,
                 scratch: Path) -> SolutionRun:
    """Run `solution/<script> --workspace <ws>` in the sandbox on the instance; its files, copied out."""
    if not (task_dir / "solution" / script).is_file():
        return SolutionRun(None, f"the task has no solution/{script}")
    workdir = scratch / "sandbox"
    workdir.mkdir(parents=True)
    workspace = _extract_workspace(instance, workdir)
    argv = [*backend.python_command(), str(task_dir / "solution" / script), "--workspace", str(workspace)]
    limits = generation_limits(settings, settings.TASK_HEALTH_SOLUTION_TIMEOUT_SECONDS)
    result = backend.run(argv, workdir, [task_dir, *backend.runtime_mounts()], limits)
    if result.timed_out or result.limit or result.returncode != 0:
        tail = " ".join(result.stderr_text.strip().splitlines()[-3:])[:500]
        return SolutionRun(None, f"solution/{script} failed: {result.reason or tail or f'exit {result.returncode}'}")
    try:
        collect_outputs(workspace, scratch / "outputs", max_bytes=settings.SANDBOX_SCRATCH_BYTES)
    except UnsafeOutput as exc:
        return SolutionRun(None, f"solution/{script} wrote what cannot be read: {exc}")
    return SolutionRun(scratch / "outputs")


# ------------------------------------------------------------------ scoring the predictions
def _judge_book(requests: list[dict[str, Any]], replies: dict[str, dict[str, Any]], book: dict[str, Any]) -> None:
    for request in requests:
        reply = replies.get(str(request["key"]), {}).get(str(request["index"]))
        if reply is not None:
            book["replies"].setdefault(str(request["key"]), {})[str(request["index"])] = sandbox_reply(request, reply)


def predictions_score(backend: SandboxBackend, task_dir: Path, reference: Path, params: dict[str, Any],
                      workdir: Path, staged: dict[int, tuple[str, Path]]) -> tuple[dict[int, dict[str, Any]], str]:
    """The engine's outcome of each staged prediction {key: (level, pred dir)}, and which judge answered
    ("" when none was asked). Judges are asked here, outside the sandbox, through the configured
    endpoint, as the workers ask them; any judge failure makes the whole check unavailable."""
    outcomes: dict[int, dict[str, Any]] = {}
    books: dict[int, dict[str, Any]] = {}
    models: set[str] = set()
    todo = dict(staged)
    for _ in range(JUDGE_ROUNDS + 1):
        outcomes.update(results_score_in_sandbox(backend, task_dir, reference, params, workdir, todo, books))
        todo = {key: value for key, value in todo.items() if "pending_judges" in outcomes[key]}
        if not todo:
            break
        endpoint = judge_endpoint()
        if not endpoint.configured():
            raise HealthCheckUnavailable("the task has judges and no judge endpoint is configured")
        for key, (_, pred) in todo.items():
            requests = outcomes[key]["pending_judges"]
            replies, errors = answer_requests(requests, client=judge_client(), pred_dir=pred, ref_dir=reference,
                                              environ=os.environ)
            if errors:
                raise HealthCheckUnavailable("the judge gave no reply: " + "; ".join(errors[:2]))
            _judge_book(requests, replies, books.setdefault(key, {"replies": {}}))
            models.update(str(r.get("model")) for r in requests)
    if todo:
        raise HealthCheckUnavailable(f"the judges still asked for more after {JUDGE_ROUNDS} rounds")
    judge = f"the configured judge endpoint, {judge_endpoint().describe()}; models {', '.join(sorted(models))}" \
        if models else ""
    return outcomes, judge


def _probe(probe: str, level: str, outcome: dict[str, Any], limit: float | None, passed: bool) -> dict[str, Any]:
    return {"probe": probe, "level": level, "percent": round(float(outcome.get("percent", 0.0)), 4),
            "limit": limit, "passed": passed, "error": outcome.get("outcome") == InstanceScore.Outcome.ERROR,
            "reason": str(outcome.get("reason") or "")[:500]}


def probes_judged(outcomes: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """Each (probe, level) outcome with its verdict: the reference at full marks, the naive under the
    gate at B3/B4, every adversarial prediction at or under the naive one at the same level."""
    rows = []
    for level in PROMPT_LEVELS:
        reference = outcomes[(REFERENCE, level)]
        rows.append(_probe(REFERENCE, level, reference, 100.0, float(reference.get("percent", 0)) >= FULL_MARKS))
        naive = outcomes[(NAIVE, level)]
        gated = level in GATED_LEVELS
        rows.append(_probe(NAIVE, level, naive, DIFFICULTY_THRESHOLD if gated else None,
                           not gated or float(naive.get("percent", 0)) < DIFFICULTY_THRESHOLD))
        for probe in ADVERSARIAL:
            if (probe, level) in outcomes:
                percent = float(outcomes[(probe, level)].get("percent", 0))
                rows.append(_probe(probe, level, outcomes[(probe, level)], float(naive.get("percent", 0)),
                                   percent <= float(naive.get("percent", 0)) + TOLERANCE))
    return rows


def failure_summary(rows: list[dict[str, Any]], notes: list[str]) -> str:
    """What failed, one phrase per failing probe (first level named), then the notes."""
    phrases = []
    for probe in PROBE_NAMES:
        failed = [row for row in rows if row["probe"] == probe and not row["passed"]]
        if not failed:
            continue
        row = failed[0]
        levels = ", ".join(r["level"].upper() for r in failed)
        if probe == REFERENCE:
            phrases.append(f"the reference solution scored {row['percent']:g} (not 100) at {levels}")
        elif probe == NAIVE:
            phrases.append(f"the naive agent scored {row['percent']:g} at {levels}, not under the "
                           f"{DIFFICULTY_THRESHOLD:g} gate")
        else:
            phrases.append(f"{PROBE_NAMES[probe]} scored {row['percent']:g} at {levels}, above the naive agent's "
                           f"{row['limit']:g}")
    return "; ".join(phrases + notes)


# ------------------------------------------------------------------ one check of one task
def _stage(data: Path, outputs: Path | None, dest: Path, declared: list[str]) -> Path | str:
    try:
        return stage_prediction_dir(data, outputs, dest, declared)
    except Exception as exc:  # what a solution wrote cannot be staged: that prediction's zero
        return f"outputs could not be staged: {exc}"


def _predictions(runs: dict[str, SolutionRun], other: SolutionRun | None, declared: list[dict[str, Any]],
                 scratch: Path) -> dict[str, Path | None]:
    predictions: dict[str, Path | None] = {REFERENCE: runs[REFERENCE].outputs, NAIVE: runs[NAIVE].outputs}
    if other is not None and other.outputs is not None:
        predictions[OTHER_INSTANCE] = other.outputs
    solved = runs[REFERENCE].outputs
    if solved is not None:
        predictions[CONSTANT_VALUES] = constant_outputs(solved, scratch / "constant")
    predictions[GRADER_TEXT] = grader_text_outputs(runs[NAIVE].outputs, declared, scratch / "grader-text")
    return predictions


def dataset_check(backend: SandboxBackend, task_dir: Path, instance: Instance, runs: dict[str, SolutionRun],
                  other: SolutionRun | None, scratch: Path) -> tuple[list[dict[str, Any]], list[str], str]:
    """The judged probes of one instance, the notes that explain missing predictions, and the judge."""
    data = _extract_workspace(instance, scratch / "inputs") / "data"
    reference = reference_extract(instance, scratch / "private")
    workdir = scratch / "work"
    workdir.mkdir()
    declared = list(instance.task.declared_outputs)
    names = [str(o["name"]) for o in declared]
    staged: dict[int, tuple[str, Path]] = {}
    keys: dict[int, tuple[str, str]] = {}
    outcomes: dict[tuple[str, str], dict[str, Any]] = {}
    for i, (probe, outputs) in enumerate(_predictions(runs, other, declared, scratch).items()):
        for j, level in enumerate(PROMPT_LEVELS):
            if probe == REFERENCE and outputs is None:  # the reference solution did not run through
                outcomes[(probe, level)] = error_outcome(runs[REFERENCE].problem)
                continue
            # A naive solution that wrote nothing (or is missing) is scored as such: missing outputs.
            pred = _stage(data, outputs, workdir / f"pred-{probe}-{level}", names)
            if isinstance(pred, str):
                outcomes[(probe, level)] = error_outcome(pred)
            else:
                staged[i * 10 + j] = (level, pred)
                keys[i * 10 + j] = (probe, level)
    scored, judge = predictions_score(backend, task_dir, reference, instance.params, workdir, staged) \
        if staged else ({}, "")
    outcomes.update({keys[key]: outcome for key, outcome in scored.items()})
    notes = [f"{runs[p].problem}" for p in (REFERENCE, NAIVE) if runs[p].problem]
    if other is None or other.outputs is None:
        notes.append("no other instance's reference outputs to try")
    return probes_judged(outcomes), notes, judge


def running(task: Task) -> bool:
    """Whether a check of the task is running (a row left running by a worker that died counts only for
    as long as a check can take: both solutions on both datasets, and scoring)."""
    stale = timezone.now() - timedelta(seconds=settings.TASK_HEALTH_SOLUTION_TIMEOUT_SECONDS * 6 + 3600)
    return TaskHealthCheck.objects.filter(task=task, outcome=TaskHealthCheck.Outcome.RUNNING,
                                          started_at__gte=stale).exists()


def _checks_claim(task: Task, base: dict[str, Any], datasets: list[Any]) -> list[TaskHealthCheck]:
    """The running rows of this check, or [] when another check of the task is still running (the task
    row is locked while looking, so two workers never check one task at once)."""
    with transaction.atomic():
        Task.objects.select_for_update().filter(id=task.id).first()
        if running(task):
            return []
        return [TaskHealthCheck.objects.create(**base, dataset=dataset) for dataset in datasets]


def _finish(check: TaskHealthCheck, outcome: str, reason: str, probes: list[dict[str, Any]] | None = None,
            judge: str = "") -> None:
    check.outcome, check.reason, check.probes, check.judge = outcome, reason[:4000], probes or [], judge
    check.finished_at = timezone.now()
    check.save(update_fields=["outcome", "reason", "probes", "judge", "finished_at"])


def task_health_check(*, task_id: str, trigger: str, requested_by_id: Any = None,
                      backend: SandboxBackend | None = None) -> list[TaskHealthCheck]:
    """Check the task's current revision on every dataset it has an instance in; one row per dataset
    (one row without a dataset when it is not checkable here). [] when the task is gone or retired, or
    another check of it is still running. A failing row calls the failure hooks (errata)."""
    task = Task.objects.filter(id=task_id).exclude(status=Task.Status.RETIRED).first()
    if task is None:
        return []
    base = {"task": task, "task_revision": task.revision, "task_source_hash": task.source_hash,
            "engine_version": ENGINE_VERSION, "trigger": trigger, "requested_by_id": requested_by_id}
    try:
        task_dir = None if task.status == Task.Status.DEFINITION_ONLY else task_source_dir(task)
    except INFRASTRUCTURE_ERRORS + (tarfile.TarError,) as exc:
        checks = _checks_claim(task, base, [None])
        for check in checks:
            _finish(check, TaskHealthCheck.Outcome.ERROR, f"the task's files could not be read: {exc}")
        return checks
    unchecked = not_checkable_reason(task, task_dir)
    instances = {i.dataset_id: i for i in Instance.objects.filter(task=task).select_related("dataset", "task")}
    checks = _checks_claim(task, base, [None] if unchecked else [i.dataset for i in instances.values()])
    if unchecked or not checks:
        for check in checks:
            _finish(check, TaskHealthCheck.Outcome.NOT_CHECKABLE, unchecked)
        return checks
    assert task_dir is not None
    try:
        _checks_run(checks, task_dir, instances, backend or server_backend(settings.SCORING_SANDBOX))
    except _UNAVAILABLE as exc:
        for check in checks:
            if check.outcome == TaskHealthCheck.Outcome.RUNNING:
                _finish(check, TaskHealthCheck.Outcome.ERROR, f"the check could not run: {exc}")
    except Exception as exc:
        logger.exception("health check of %s failed", task.id)
        for check in checks:
            if check.outcome == TaskHealthCheck.Outcome.RUNNING:
                _finish(check, TaskHealthCheck.Outcome.ERROR, f"the check broke: {type(exc).__name__}: {exc}")
    for check in checks:
        if check.outcome == TaskHealthCheck.Outcome.FAILING:
            health_failure_hooks(check.id)
    return checks


def _checks_run(checks: list[TaskHealthCheck], task_dir: Path, instances: dict[str, Instance],
                backend: SandboxBackend) -> None:
    with scratch_tree("asibench-health-", scratch_root()) as tmp:
        runs = {name: {script_key: solution_run(backend, task_dir, instance, script, tmp / name / script_key)
                       for script_key, script in ((REFERENCE, "solve.py"), (NAIVE, "naive.py"))}
                for name, instance in instances.items()}
        for check in checks:
            name = check.dataset_id
            assert name is not None
            other = next((runs[o][REFERENCE] for o in sorted(runs) if o != name), None)
            rows, notes, judge = dataset_check(backend, task_dir, instances[name], runs[name], other,
                                               tmp / name / "check")
            failing = [row for row in rows if not row["passed"]]
            if failing:
                _finish(check, TaskHealthCheck.Outcome.FAILING, failure_summary(rows, notes), rows, judge)
            else:
                _finish(check, TaskHealthCheck.Outcome.HEALTHY, "; ".join(notes), rows, judge)


def health_failure_hooks(check_id: int) -> None:
    """What follows a failing check (`settings.TASK_HEALTH_FAILURE_HOOKS`, dotted paths of functions taking
    the check's id: the leaderboard's errata), named in settings so that scoring imports none of them."""
    from django.utils.module_loading import import_string

    for path in settings.TASK_HEALTH_FAILURE_HOOKS:
        hook: Callable[[int], None] = import_string(path)
        try:
            hook(check_id)
        except Exception:  # a follow-up must never undo the check's record
            logger.exception("health failure hook %s failed for check %s", path, check_id)


def task_health_checks_due() -> list[str]:
    """The tasks the beat job checks: every task not retired (a definition-only one is recorded as not
    checkable, so /status counts it as unchecked with the reason)."""
    return list(Task.objects.exclude(status=Task.Status.RETIRED).values_list("id", flat=True))

