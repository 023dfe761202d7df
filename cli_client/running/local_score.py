"""Local, non-official scoring of a produce-only run against public seed31415 references (§7).

The whole batch is validated before anything is scored. Each result is then scored by
`python -m scoring.engine score` in a fresh subprocess, so a scorer that crashes, hangs or
exhausts memory invalidates that one evaluation instead of the command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli_client.errors import CliError
from cli_client.running.runner import find_catalog_task
from scoring.engine import StagingError, build_local_report, stage_prediction_dir
from scoring.engine.cli import read_result_line, score_argv
from scoring.judging.endpoint import PROVIDER_KEY_ENVS
from scoring.judging.local import score_with_judges

PUBLIC_REPO = "seed31415"
DEFAULT_REPORT = "local_score_seed31415.json"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
JUDGE_KEY_ENVS = tuple(name for names in PROVIDER_KEY_ENVS.values() for name in names)


@dataclass(frozen=True)
class ScoreJob:
    source_result: str
    task_id: str
    instance_id: str
    prompt_level: str
    attempt: int
    task_dir: Path
    outputs_dir: Path | None
    data_dir: Path
    reference_dir: Path
    parameters: dict[str, Any]
    requires_data: bool = False
    """The task declares input files, so the instance must have its data/ tree."""


def iter_result_files(results_dir: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in sorted(results_dir.glob("*/*.json")):
        if ".trajectory." in path.name or ".agent_model_output." in path.name:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("task_id") and data.get("instance_id"):
            yield path, data


def recorded_no_outputs(result: dict[str, Any]) -> bool:
    """The run itself recorded that the agent wrote no declared output (an ordinary zero)."""
    agent_output = result.get("agent_output")
    if not isinstance(agent_output, dict):
        return False
    if "persisted_outputs" not in agent_output:
        return agent_output.get("code_files") == [] and agent_output.get("data_files") == []
    persisted = agent_output["persisted_outputs"]
    return isinstance(persisted, dict) and persisted.get("dir") is None


def instance_parameters(result: dict[str, Any], instance_dir: Path) -> dict[str, Any]:
    """`params_used` of the instance (authoritative), else the result's own `parameters`, else {}."""
    try:
        meta = json.loads((instance_dir / "instance_meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = None
    if isinstance(meta, dict) and isinstance(meta.get("params_used"), dict):
        return meta["params_used"]
    params = result.get("parameters")
    return params if isinstance(params, dict) else {}


def prepare_jobs(results_dir: Path, instances_dir: Path, tasks_dir: Path) -> list[ScoreJob]:
    """Validate the complete batch; any problem aborts before a scorer runs."""
    for label, path in (("results", results_dir), ("instances", instances_dir), ("tasks", tasks_dir)):
        if not path.is_dir():
            raise CliError(f"{label} directory not found: {path}")
    results = list(iter_result_files(results_dir))
    if not results:
        raise CliError(f"No per-instance result JSON found under {results_dir}. Run `asibench run …` first.")
    tasks: dict[str, tuple[Path, bool]] = {}
    jobs = []
    for path, result in results:
        task_id, instance_id = str(result["task_id"]), str(result["instance_id"])
        if not instance_id.endswith("__seed31415"):
            raise CliError(f"Result {path} is not a seed31415 instance: {instance_id}")
        instance_dir = instances_dir / instance_id
        reference = instance_dir / "reference"
        if not reference.is_dir() or not any(reference.iterdir()):
            raise CliError(f"Public seed31415 reference directory is missing or empty: {reference}. "
                           "Re-run `asibench task pull --repo seed31415`.")
        outputs: Path | None = path.parent / f"{path.stem}.outputs"
        if outputs is not None and not outputs.is_dir():
            if not recorded_no_outputs(result):
                raise CliError(f"Persisted output directory not found for {path.name}: {outputs}")
            outputs = None
        if task_id not in tasks:
            task = find_catalog_task(tasks_dir, task_id)
            if task is None:
                raise CliError(f"Task {task_id} not found in {tasks_dir}")
            evaluation = task.get("evaluation")
            if not isinstance(evaluation, dict):
                raise CliError(f"Task {task_id} has no public evaluation contract under {tasks_dir}")
            if evaluation.get("runtime") not in (None, "task"):
                raise CliError(f"Task {task_id} has unsupported evaluation.runtime {evaluation['runtime']!r}; "
                               "expected 'task' or no runtime override")
            inputs = (task.get("input") or {}).get("files") if isinstance(task.get("input"), dict) else None
            tasks[task_id] = (Path(task["_task_dir"]).resolve(), bool(inputs))
        jobs.append(ScoreJob(
            source_result=path.relative_to(results_dir).as_posix(), task_id=task_id, instance_id=instance_id,
            prompt_level=str(result.get("prompt_level") or ""), attempt=int(result.get("attempt") or 1),
            task_dir=tasks[task_id][0], requires_data=tasks[task_id][1], outputs_dir=outputs,
            data_dir=instance_dir / "data",
            reference_dir=reference.resolve(), parameters=instance_parameters(result, instance_dir),
        ))
    return jobs


def invalid(kind: str, message: str) -> dict[str, Any]:
    return {"evaluation_status": "evaluation_invalid", "final_score": None, "max_score": 0.0,
            "scorer_internal_error": True, "failure_kind": kind, "error": message,
            "hard_gates_passed": False, "soft_gate_failures": 0, "gate_results": [], "score_results": []}


def engine_env() -> dict[str, str]:
    """The engine subprocess's environment: ours, minus every judge key (task code runs in there)."""
    secret = set(JUDGE_KEY_ENVS) | {os.environ.get("ASIBENCH_JUDGE_API_KEY_ENV") or ""}
    env = {k: v for k, v in os.environ.items() if k not in secret}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))
    return env


def run_engine(tmp: Path, argv_for: Callable[[Path | None], list[str]], timeout: float,
               book: dict[str, Any] | None) -> dict[str, Any]:
    """One engine subprocess (with the judge replies `book`, if any): its checked result, or why there is none."""
    book_file = None
    if book is not None:
        book_file = tmp / f"judge-book-{len(list(tmp.glob('judge-book-*')))}.json"
        book_file.write_text(json.dumps(book), encoding="utf-8")
    try:
        done = subprocess.run(argv_for(book_file), capture_output=True, text=True, timeout=timeout, cwd=tmp,
                              env=engine_env(), check=False)
    except subprocess.TimeoutExpired:
        return invalid("evaluator_runtime_error", f"scorer exceeded {timeout:g} s")
    if done.returncode != 0:
        tail = (done.stderr or "").strip().splitlines()[-3:]
        return invalid("evaluator_runtime_error",
                       f"scorer process exited with {done.returncode}: {' | '.join(tail)}")
    try:
        return read_result_line(done.stdout)
    except ValueError as exc:
        return invalid("evaluator_runtime_error", str(exc))


def score_job(job: ScoreJob, timeout: float) -> dict[str, Any]:
    """Score one result; its judges (if the task has any) are asked at the endpoint the environment names."""
    if job.requires_data and not job.data_dir.is_dir():
        return invalid("missing_evaluator_input", f"instance data directory is missing: {job.data_dir}")
    with tempfile.TemporaryDirectory(prefix="asibench_score_") as tmp:
        pred = Path(tmp) / "pred"
        try:
            stage_prediction_dir(job.data_dir if job.data_dir.is_dir() else None, job.outputs_dir, pred)
        except (StagingError, OSError) as exc:
            return invalid("missing_evaluator_input", str(exc))
        params_file = Path(tmp) / "params.json"
        params_file.write_text(json.dumps(job.parameters), encoding="utf-8")

        def argv_for(book: Path | None) -> list[str]:
            return score_argv([sys.executable], task_dir=job.task_dir, pred_dir=pred, ref_dir=job.reference_dir,
                              params=f"@{params_file}", prompt_level=job.prompt_level, judge_book=book)

        return score_with_judges(lambda book: run_engine(Path(tmp), argv_for, timeout, book),
                                 pred_dir=pred, ref_dir=job.reference_dir)


def score_results(results_dir: Path, instances_dir: Path, tasks_dir: Path, output: Path | None,
                  timeout: float = 600.0,
                  on_scored: Callable[[ScoreJob, dict[str, Any]], None] | None = None,
                  ) -> tuple[dict[str, Any], Path]:
    jobs = prepare_jobs(results_dir, instances_dir, tasks_dir)
    scored = []
    for job in jobs:
        result = score_job(job, timeout)
        result.update(source_result=job.source_result, task_id=job.task_id, instance_id=job.instance_id,
                      prompt_level=job.prompt_level, attempt=job.attempt)
        scored.append(result)
        if on_scored:
            on_scored(job, result)
    report = build_local_report(scored, PUBLIC_REPO)
    destination = output or results_dir / DEFAULT_REPORT
    destination.parent.mkdir(parents=True, exist_ok=True)
    tmp = destination.with_name(f".{destination.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(destination)
    return report, destination
