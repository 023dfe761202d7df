"""Scoring results into a scoring run: one sandboxed engine run per (submission, task).

The results of a task's instances in one submission (every instance, prompt level and attempt)
share the task's code, so they are scored together: one sandbox, one interpreter start, one
`python -m scoring.engine score-batch` that imports what the task's scorer needs once and forks a
child per result (each against its own instance's reference), printing a line per result. Should
that process die (a limit, a crash), the results it left without a line are scored again one
sandbox each, so every result still gets its own score or its own reason. What a sandbox may see
and hold is the isolation boundary in docs/architecture.md.

The caller (the submission side, which claims runs and moves their status) hands in plain
data: the run, the stored archive, the instances and their results; scoring imports nothing of it.
Every step is safe to repeat: InstanceScore is unique per (scoring run, result), so a result is
counted exactly once however many workers see it.
"""

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import tarfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import IntegrityError, InterfaceError, OperationalError

from contracts.archives import UnsafeArchive, extract_tree
from scoring import metrics
from scoring.engine import ENGINE_VERSION, stage_prediction_dir
from scoring.engine.cli import read_batch_lines, read_result_line, score_argv, score_batch_argv
from scoring.engine.judge_calls import requests_expanded
from scoring.judge_services import (
    judge_all_answered,
    judge_books,
    judge_calls_answer,
    judge_calls_summary,
    judge_failure,
    judge_replies,
    judge_requests_record,
)
from scoring.judging.settings import JUDGE_ROUNDS
from scoring.judging.verdicts import details_completed
from scoring.models import Instance, InstanceScore, ScoringRun
from scoring.sandbox import SandboxBackend, SandboxError, SandboxResult, server_backend
from scoring.sandbox.limits import batch_scoring_limits, scoring_limits
from scoring.sandbox.process import disk_usage, scratch_tree, tree_remove
from scoring.storage_errors import STORAGE_ERRORS
from scoring.task_storage import reference_extract, scratch_root, task_source_dir

logger = logging.getLogger(__name__)


class InfrastructureError(Exception):
    """Storage, sandbox or database trouble: retry the task, never score the result 0 for it."""


class StoredBundleMismatch(Exception):
    """The stored archive no longer holds the bytes intake verified: the run fails with this reason, no
    result is scored from it, and retrying cannot help."""


# What a scoring task retries (then fails the run with the reason); never a result's zero.
INFRASTRUCTURE_ERRORS: tuple[type[Exception], ...] = (
    InfrastructureError, SandboxError, OperationalError, InterfaceError, *STORAGE_ERRORS)
# Reading an archive from storage: the service failing, or the stream it sent breaking off.
READ_ERRORS: tuple[type[Exception], ...] = (*STORAGE_ERRORS, tarfile.TarError, UnsafeArchive)


@dataclass(frozen=True)
class ResultToScore:
    """One result of a run, as scoring needs it: its id (the InstanceScore's `entry`), prompt level
    and declared outputs [{"path", "member", ...}] (members of the stored bundle archive)."""

    entry_id: int
    prompt_level: str
    outputs: list[dict[str, Any]]


def bundle_outputs_extract(archive: str, results: Sequence[ResultToScore], dest: Path) -> dict[int, Path]:
    """Unpack only these results' declared outputs, in one pass over the stored archive:
    {entry id: its outputs dir}. Each must come out once, with the size and sha256 intake recorded:
    tarfile may read a member under another name than the verifier did (StoredBundleMismatch)."""
    dirs: dict[int, Path] = {}
    wanted: dict[str, tuple[Path, dict[str, Any]]] = {}
    for result in results:
        dirs[result.entry_id] = dest / str(result.entry_id) / "outputs"
        dirs[result.entry_id].mkdir(parents=True)
        wanted.update({o["member"]: (dirs[result.entry_id], o) for o in result.outputs})
    if not wanted:
        return dirs
    done: set[str] = set()
    try:
        with default_storage.open(archive, "rb") as handle, tarfile.open(fileobj=handle, mode="r|gz") as tar:
            for member in tar:
                rel = member.name.split("/", 1)[1] if "/" in member.name else ""
                found = wanted.get(rel)
                if found is None:
                    continue
                _extract_verified(tar, member, rel, found[0] / found[1]["path"], found[1], rel in done)
                done.add(rel)
    except READ_ERRORS as exc:
        raise InfrastructureError(f"could not read the stored bundle: {exc}") from exc
    missing = sorted(wanted.keys() - done)
    if missing:
        raise StoredBundleMismatch(f"{missing[0]}: verified at upload but not in the stored bundle")
    return dirs


def _extract_verified(tar: tarfile.TarFile, member: tarfile.TarInfo, rel: str, target: Path,
                      verified: dict[str, Any], again: bool) -> None:
    if again:
        raise StoredBundleMismatch(f"{rel}: appears more than once in the stored bundle; one copy was verified")
    if not member.isfile():
        raise StoredBundleMismatch(f"{rel}: not a regular file in the stored bundle")
    if not isinstance(verified.get("sha256"), str):
        raise StoredBundleMismatch(f"{rel}: no sha256 was recorded for it at upload")
    if member.size != verified.get("bytes"):
        raise StoredBundleMismatch(f"{rel}: {member.size} bytes in the stored bundle, "
                                   f"{verified.get('bytes')} verified at upload")
    source = tar.extractfile(member)
    assert source is not None
    digest = hashlib.sha256()
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as out:
        while chunk := source.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != verified["sha256"].lower():
        raise StoredBundleMismatch(f"{rel}: sha256 in the stored bundle differs from the one verified at upload")


# A run's declared outputs are unpacked from its stored bundle once per worker host, into the scratch
# root, not once per task group: a 60-task run read its whole bundle (trajectories and logs included,
# up to BUNDLE_MAX_UNCOMPRESSED_BYTES) 60 times for a few outputs each. The copy is the host's, never
# a sandbox's (staging copies from it); the leftover sweep removes what a crashed host left.
_RUN_OUTPUTS_PREFIX = "run-outputs-"
_RUN_OUTPUTS_COMPLETE = "complete.json"


def _run_outputs_dir(scoring_run_id: int, archive: str) -> Path:
    digest = hashlib.sha256(archive.encode()).hexdigest()[:16]
    return scratch_root() / f"{_RUN_OUTPUTS_PREFIX}{scoring_run_id}-{digest}"


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """This host's exclusive hold on `directory` (flock on the directory itself: dropped with the process)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def run_outputs_unpacked(*, scoring_run_id: int, archive: str, results: Sequence[ResultToScore],
                         every: Sequence[ResultToScore] = ()) -> Iterator[dict[int, Path]]:
    """{entry id: its outputs dir} for `results`, from this host's copy of the run's outputs, held for the
    duration (copy what you need out of them). The first caller on a host unpacks the outputs of `every`
    (the run's results) and `results` in one pass over the stored bundle, checked as `bundle_outputs_extract`
    checks them; the others wait for it, then only read. A pass that fails leaves nothing for the next."""
    cache = _run_outputs_dir(scoring_run_id, archive)
    cache.mkdir(exist_ok=True)
    with _locked(cache):
        complete, unpacked = cache / _RUN_OUTPUTS_COMPLETE, cache / "outputs"
        held = set(json.loads(complete.read_text())) if complete.exists() else set()
        if not {result.entry_id for result in results} <= held:
            complete.unlink(missing_ok=True)
            if unpacked.exists():
                tree_remove(unpacked)
            chosen = list({result.entry_id: result for result in [*every, *results]}.values())
            try:
                bundle_outputs_extract(archive, chosen, unpacked)
            except BaseException:
                tree_remove(unpacked)  # nothing half-unpacked is kept for the next caller
                raise
            complete.write_text(json.dumps(sorted(result.entry_id for result in chosen)))
        os.utime(complete)  # in use: the sweep judges a tree by its newest change
        yield {result.entry_id: unpacked / str(result.entry_id) / "outputs" for result in results}


def run_outputs_drop(scoring_run_id: int) -> None:
    """Remove this host's copy of the run's outputs (the run is over), waiting for a reader to finish."""
    for cache in scratch_root().glob(f"{_RUN_OUTPUTS_PREFIX}{scoring_run_id}-*"):
        with contextlib.suppress(FileNotFoundError), _locked(cache):
            tree_remove(cache)


def instance_inputs_extract(instance: Instance, dest: Path) -> Path:
    try:
        with default_storage.open(instance.input_archive, "rb") as handle, tarfile.open(
            fileobj=handle, mode="r:gz"
        ) as tar:
            extract_tree(tar, dest, select=lambda name: name.startswith(f"{instance.instance_id}/data/"))
    except READ_ERRORS as exc:
        raise InfrastructureError(f"could not read the instance inputs: {exc}") from exc
    return dest / instance.instance_id / "data"


def _engine_argv(backend: SandboxBackend, task_dir: Path, pred: Path, ref: Path, params: dict, level: str,
                 book: Path | None = None) -> list[str]:
    return score_argv(backend.python_command(), task_dir=task_dir, pred_dir=pred, ref_dir=ref,
                      params=json.dumps(params, sort_keys=True), prompt_level=level, judge_book=book)


def _engine_batch_argv(backend: SandboxBackend, task_dir: Path, ref: Path, params: dict, jobs_file: Path) -> list[str]:
    return score_batch_argv(backend.python_command(), task_dir=task_dir, ref_dir=ref,
                            params=json.dumps(params, sort_keys=True), jobs=f"@{jobs_file}")


def error_outcome(reason: str) -> dict[str, Any]:
    """The InstanceScore fields of a result that could not be scored, with the reason (never a silent 0:
    its outcome is ERROR and says why)."""
    return {"outcome": InstanceScore.Outcome.ERROR, "final_score": 0.0, "max_score": 100.0, "percent": 0.0,
            "hard_gates_passed": False, "reason": reason, "result": {}}


def _interpret(stdout: str) -> dict[str, Any]:
    try:
        return _outcome(read_result_line(stdout))
    except ValueError as exc:
        return error_outcome(str(exc))


def _outcome(result: dict[str, Any]) -> dict[str, Any]:
    """The InstanceScore fields of a result that passed `read_result_line`'s check (finite, in range);
    for a result whose judges have not answered yet, {"pending_judges": [requests]}."""
    if result.get("evaluation_status") == "judges_pending" and isinstance(result.get("judge_requests"), list):
        return {"pending_judges": requests_expanded(result["judge_requests"])}
    if result.get("evaluation_status") != "completed" or result.get("final_score") is None:
        kind = result.get("failure_kind") or "evaluation_invalid"
        reason = f"scoring could not complete ({kind}): {result.get('error') or ''}".strip()
        return {**error_outcome(reason), "result": result}
    final, maximum = float(result["final_score"]), float(result.get("max_score") or 0)
    messages = [str(r.get("message")) for r in result.get("gate_results", []) + result.get("score_results", [])
                if r.get("message") and not r.get("passed", True)]
    return {
        "outcome": InstanceScore.Outcome.SCORED,
        "final_score": final,
        "max_score": maximum,
        "percent": round(float(result["percent"]), 6),
        "hard_gates_passed": bool(result.get("hard_gates_passed")),
        "reason": "; ".join(messages)[:2000],
        "result": {k: result.get(k) for k in ("final_score", "max_score", "hard_gates_passed", "soft_gate_failures",
                                              "gate_results", "score_results", "engine_version",
                                              "judge_calls_used")},
    }


def _stopped_or_crashed(result: SandboxResult) -> dict[str, Any] | None:
    """The zero outcome of a sandbox run that did not finish normally, else None."""
    if result.timed_out or result.limit:
        return error_outcome(f"the scorer was stopped: {result.reason or 'time limit'}")
    if result.returncode != 0:
        tail = " ".join(result.stderr_text.strip().splitlines()[-2:])[:500]
        return error_outcome(f"the scorer crashed (exit {result.returncode}): {tail}")
    return None


def _book_files(workdir: Path, books: dict[int, dict[str, Any]]) -> dict[int, Path]:
    """Each result's recorded judge replies, in a file of this round the engine reads before any task code runs."""
    paths: dict[int, Path] = {}
    for key, book in books.items():
        paths[key] = workdir / f"judge-book-{key}-{time.monotonic_ns()}.json"
        paths[key].write_text(json.dumps(book), encoding="utf-8")
    return paths


@dataclass(frozen=True)
class StagedResult:
    """One result ready for the engine: its prompt level, staged prediction dir, and its instance's
    private reference dir and parameters."""

    prompt_level: str
    pred_dir: Path
    reference: Path
    params: dict[str, Any]


def results_score_in_sandbox(
    backend: SandboxBackend, task_dir: Path, reference: Path, params: dict, workdir: Path,
    staged: dict[int, tuple[str, Path]], books: dict[int, dict[str, Any]] | None = None,
) -> dict[int, dict[str, Any]]:
    """Outcomes of the staged results {key: (prompt level, pred dir)} of one instance (see
    `staged_score_in_sandbox`)."""
    return staged_score_in_sandbox(backend, task_dir, workdir, {
        key: StagedResult(level, pred, reference, params) for key, (level, pred) in staged.items()}, books)


def _batch_jobs(staged: dict[int, StagedResult], book_files: dict[int, Path]) -> list[dict[str, Any]]:
    return [{"job": str(key), "pred_dir": str(one.pred_dir), "prompt_level": one.prompt_level,
             "ref_dir": str(one.reference), "params": one.params,
             **({"judge_book": str(book_files[key])} if key in book_files else {})}
            for key, one in staged.items()]


def _same_params(line: dict[str, Any], params: dict[str, Any]) -> bool:
    """Whether a batch line was scored with its job's parameters (the engine echoes them)."""
    if "parameters" not in line:
        return True
    return json.dumps(line["parameters"], sort_keys=True) == json.dumps(params, sort_keys=True, default=str)


def staged_score_in_sandbox(
    backend: SandboxBackend, task_dir: Path, workdir: Path, staged: dict[int, StagedResult],
    books: dict[int, dict[str, Any]] | None = None,
) -> dict[int, dict[str, Any]]:
    """Outcomes of the staged results of one task in one submission: one batch run (one sandbox,
    one engine that forks a child per result), then one run per result it left without a line
    (the batch was killed or crashed part-way). `workdir` (writable inside) must hold the pred dirs
    and nothing of another submission; `books` the judge replies per result.

    The sandbox sees this task's files, the references of these results' instances, and `workdir`:
    never another task's code nor another submission's outputs (docs/architecture.md, isolation)."""
    references = list(dict.fromkeys(one.reference for one in staged.values()))
    mounts = [task_dir, *(reference.parent for reference in references), *backend.runtime_mounts()]
    outcomes: dict[int, dict[str, Any]] = {}
    book_files = _book_files(workdir, {key: book for key, book in (books or {}).items() if key in staged})
    # The staged outputs are the agent's and already bounded by intake; the scorer (the task
    # author's code) may add SCORING_SCRATCH_BYTES on top of them, no more.
    scratch_cap = disk_usage(workdir) + (1 << 20) + settings.SCORING_SCRATCH_BYTES
    if len(staged) > 1:
        jobs = _batch_jobs(staged, book_files)
        jobs_file = workdir / f"jobs-{time.monotonic_ns()}.json"
        jobs_file.write_text(json.dumps(jobs))
        limits = batch_scoring_limits(settings, jobs=len(jobs), max_scratch_bytes=scratch_cap)
        first = next(iter(staged.values()))
        result = backend.run(_engine_batch_argv(backend, task_dir, first.reference, first.params, jobs_file),
                             workdir, mounts, limits)
        lines = read_batch_lines(result.stdout_text)
        for entry_id in staged:
            line = lines.get(str(entry_id))
            if isinstance(line, dict) and not _same_params(line, staged[entry_id].params):
                continue  # an engine that ignored the job's own instance (an older image): scored alone below
            if isinstance(line, ValueError):
                outcomes[entry_id] = error_outcome(str(line))
            elif line is not None:
                outcomes[entry_id] = _outcome(line)
        if len(outcomes) < len(staged):
            logger.warning("score-batch left %d of %d results without a line (%s); scoring them one by one",
                           len(staged) - len(outcomes), len(staged), _stopped_or_crashed(result) or "no reason")
    for key, one in staged.items():
        if key in outcomes:
            continue
        argv = _engine_argv(backend, task_dir, one.pred_dir, one.reference, one.params, one.prompt_level,
                            book_files.get(key))
        result = backend.run(argv, workdir, [task_dir, one.reference.parent, *backend.runtime_mounts()],
                             scoring_limits(settings).replace(max_scratch_bytes=scratch_cap))
        outcomes[key] = _stopped_or_crashed(result) or _interpret(result.stdout_text)
    return outcomes


def instance_results_score(
    *, scoring_run_id: int, archive: str, instance_id: str, results: Sequence[ResultToScore],
    backend: SandboxBackend | None = None,
) -> list[InstanceScore]:
    """Score the given results of one instance (see `task_results_score`)."""
    return task_results_score(scoring_run_id=scoring_run_id, archive=archive, instances={instance_id: results},
                              backend=backend)


def task_results_score(
    *, scoring_run_id: int, archive: str, instances: Mapping[str, Sequence[ResultToScore]],
    backend: SandboxBackend | None = None, run_results: Sequence[ResultToScore] = (),
) -> list[InstanceScore]:
    """Score the given results of some instances of one task {instance id: its results} (outputs in
    the stored bundle `archive`) into the scoring run, in one sandbox, each stored once; results the
    run already scored are skipped. Returns their scores; [] when the run is no longer open or nothing
    is left. Results whose judges have not answered yet are not stored: their calls wait, and the
    sweep scores them again. `run_results` (every result of the run) lets the first task group on a
    host unpack the outputs of all the others in the same pass over the bundle."""
    run = ScoringRun.objects.get(id=scoring_run_id)
    if run.status != ScoringRun.Status.RUNNING:
        run_outputs_drop(run.id)
        return []
    scored = set(InstanceScore.objects.filter(scoring_run=run).values_list("entry_id", flat=True))
    pending = {instance_id: [result for result in results if result.entry_id not in scored]
               for instance_id, results in instances.items()}
    pending = {instance_id: results for instance_id, results in pending.items() if results}
    if not pending:
        return []
    rows = {row.instance_id: row for row in Instance.objects.select_related("task").filter(instance_id__in=pending)}
    if rows.keys() != pending.keys():
        raise Instance.DoesNotExist(f"no instance {sorted(pending.keys() - rows.keys())[0]}")
    if {row.task_id for row in rows.values()} != {rows[next(iter(pending))].task_id}:
        raise ValueError("one sandbox scores the instances of one task: these belong to several")
    backend = backend or server_backend(settings.SCORING_SANDBOX)
    started = time.monotonic()
    every = [result for results in pending.values() for result in results]
    with scratch_tree("score-", scratch_root()) as tmp_path:
        workdir = tmp_path / "work"
        workdir.mkdir()
        outcomes: dict[int, dict[str, Any]] = {}
        staged = _stage_task_results(run, rows, pending, archive, run_results, tmp_path, workdir, outcomes)
        if staged:
            task_dir = _task_dir(rows[next(iter(pending))])
            outcomes.update(results_score_with_judges(run, backend, task_dir, workdir, staged, tmp_path))
    waiting = [entry_id for entry_id, outcome in outcomes.items() if "pending_judges" in outcome]
    if waiting:
        logger.info("scoring run %s: %d result(s) of %s wait for their judges", run.id, len(waiting),
                    ", ".join(pending))
    # Shared start-up is split evenly, so per-result durations add up to the batch's.
    duration = round((time.monotonic() - started) / len(every), 3)
    return [_score_store(run, rows[instance_id], result.entry_id, outcomes[result.entry_id], backend, duration)
            for instance_id, results in pending.items() for result in results if result.entry_id not in waiting]


def _task_dir(instance: Instance) -> Path:
    try:
        return task_source_dir(instance.task)
    except READ_ERRORS as exc:
        raise InfrastructureError(f"could not read the task's files: {exc}") from exc


def _stage_task_results(run: ScoringRun, rows: dict[str, Instance], pending: dict[str, list[ResultToScore]],
                        archive: str, run_results: Sequence[ResultToScore], tmp_path: Path, workdir: Path,
                        outcomes: dict[int, dict[str, Any]]) -> dict[int, StagedResult]:
    """Every pending result staged in `workdir` with its instance's inputs and reference (unpacked under
    `tmp_path`) and its outputs (from the host's copy of the run's, `run_outputs_unpacked`); a result whose
    outputs cannot be staged gets its zero in `outcomes` instead."""
    inputs: dict[str, tuple[Path, Path]] = {}
    for instance_id in pending:
        data = instance_inputs_extract(rows[instance_id], tmp_path / "inputs")
        try:
            inputs[instance_id] = data, reference_extract(rows[instance_id], tmp_path / "private")
        except READ_ERRORS as exc:
            raise InfrastructureError(f"could not read the reference: {exc}") from exc
    staged: dict[int, StagedResult] = {}
    wanted = [result for results in pending.values() for result in results]
    with run_outputs_unpacked(scoring_run_id=run.id, archive=archive, results=wanted, every=run_results) as outputs:
        for instance_id, results in pending.items():
            data, reference = inputs[instance_id]
            for result in results:
                try:
                    pred = stage_prediction_dir(data, outputs[result.entry_id], workdir / f"pred-{result.entry_id}",
                                                [o["path"] for o in result.outputs])
                except Exception as exc:  # the agent's outputs cannot be staged: that is the agent's zero
                    outcomes[result.entry_id] = error_outcome(f"outputs could not be staged: {exc}")
                    continue
                staged[result.entry_id] = StagedResult(result.prompt_level, pred, reference,
                                                       rows[instance_id].params)
    return staged


def results_score_with_judges(run: ScoringRun, backend: SandboxBackend, task_dir: Path, workdir: Path,
                       staged: dict[int, StagedResult], scratch: Path) -> dict[int, dict[str, Any]]:
    """Score in the sandbox; while results come back waiting for judges, record their requests, ask the
    models here (outside the sandbox) and score those results again with the replies. A result whose
    judge was given up on fails with the reason; one still waiting keeps {"pending_judges"}."""
    outcomes: dict[int, dict[str, Any]] = {}
    todo = dict(staged)
    for round_number in range(JUDGE_ROUNDS + 1):
        books = judge_books(scoring_run_id=run.id, entry_ids=todo)
        outcomes.update(staged_score_in_sandbox(backend, task_dir, workdir, todo, books))
        todo = {key: todo[key] for key in todo if "pending_judges" in outcomes[key]}
        if not todo:
            break
        for key in todo:
            judge_requests_record(run=run, entry_id=key, requests=outcomes[key]["pending_judges"])
        if round_number == JUDGE_ROUNDS:
            for key in todo:
                outcomes[key] = error_outcome(
                    f"the judges of this result still asked for more after {JUDGE_ROUNDS} rounds")
            break
        judge_calls_answer(run=run, staged={key: (one.pred_dir, one.reference) for key, one in todo.items()},
                           scratch=scratch)
        for key in todo:
            failed = judge_failure(scoring_run_id=run.id, entry_id=key)
            if failed is not None:
                outcomes[key] = error_outcome(f"evaluator unavailable: the {failed.scorer} judge ({failed.model}) "
                                              f"gave no reply after {failed.attempts} round(s): {failed.last_error}")
        # Results whose every call has its reply are scored again now; the others wait for the sweep.
        todo = {key: value for key, value in todo.items()
                if "pending_judges" in outcomes[key] and judge_all_answered(scoring_run_id=run.id, entry_id=key)}
        if not todo:
            break
    for key, outcome in outcomes.items():
        result = outcome.get("result")
        if isinstance(result, dict) and result.get("judge_calls_used"):
            # The judges' raw replies and reasonings never entered the sandbox: they are put back here.
            details_completed(result, judge_replies(scoring_run_id=run.id, entry_id=key))
        if outcome.get("outcome") == InstanceScore.Outcome.SCORED and outcome["result"].get("judge_calls_used"):
            outcome["result"]["judged"] = True
            outcome["result"]["judge_calls"] = judge_calls_summary(scoring_run_id=run.id, entry_id=key)
    return outcomes


def _score_store(
    run: ScoringRun, instance: Instance, entry_id: int, outcome: dict[str, Any], backend: SandboxBackend,
    duration: float,
) -> InstanceScore:
    try:
        score, created = InstanceScore.objects.get_or_create(
            scoring_run=run,
            entry_id=entry_id,
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
        return InstanceScore.objects.get(scoring_run=run, entry_id=entry_id)
    if created:
        metrics.result_scored(outcome=score.outcome, seconds=duration)
    return score
