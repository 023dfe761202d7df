"""`asibench difficulty-check`: a same-agent trial of one task across prompt levels (contract §4.5).

Instances are generated locally from the task directory (as `validate --pre-submit` does),
the agent runs through the same `Runner` as `asibench run`, and every result is scored by
our engine in its own subprocess (as `asibench score` does). Any failed or timed-out agent
run aborts the check before anything is scored or saved. An evaluator crash is scored 0
and counted (contract §2.1).
"""

from __future__ import annotations

import json
import platform
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from cli_client import __version__
from cli_client.authoring.presubmit import GeneratorFailed, generator_run_local
from cli_client.errors import CliError, ExitStatus
from cli_client.running.local_score import ScoreJob, score_job
from cli_client.running.run_records import redact_agent_config, write_json_atomic
from cli_client.running.runner import SANDBOXES, Outcome, Runner, RunOptions, WorkItem, find_catalog_task
from contracts import PROMPT_LEVELS
from contracts import difficulty as policy
from contracts.task_files import SUBMISSION_FILE
from scoring.engine import instance_id_for_seed, sample_params
from scoring.engine.judge_models import has_judges, judge_config_problems
from scoring.engine.safe_yaml import untrusted_yaml_load
from scoring.engine.taskdef import mapping_at
from scoring.judging.local import endpoint_status


class DifficultyAborted(CliError):
    """Nothing was scored or saved (contract §4.5: exit 2)."""

    exit_status = ExitStatus.USAGE


@dataclass(frozen=True)
class CheckOptions:
    task_id: str
    tasks_dir: Path
    agent_cmd: str
    agent_config: dict[str, Any] = field(default_factory=dict)
    sandbox: str = "none"
    prompt_levels: tuple[str, ...] = PROMPT_LEVELS
    instances_per_task: int = 1
    seed: int = 42
    threshold: float = policy.DIFFICULTY_THRESHOLD
    timeout: int = 10800
    scorer_timeout: float = 600.0
    ro_mounts: tuple[Path, ...] = ()
    pass_env: tuple[str, ...] = ()


@dataclass
class CheckReport:
    task_id: str
    task_version: str
    task_dir: Path
    rows: list[dict[str, Any]]
    verdict: str
    evaluation: dict[str, Any]
    """The §4.5 evaluation entry appended to scores/<task_id>.json."""
    scores: list[dict[str, Any]]
    """Per (instance, level): final score and how it was obtained."""
    runtime_evidence: dict[str, Any]
    scorer_replay: dict[str, Any] | None


def check_options(options: CheckOptions) -> None:
    problem = policy.threshold_problem(options.threshold)
    if problem:
        raise DifficultyAborted(f"--threshold {problem}")
    if options.instances_per_task < 1:
        raise DifficultyAborted("--instances-per-task must be at least 1")
    bad = [level for level in options.prompt_levels if level not in PROMPT_LEVELS]
    if bad or not options.prompt_levels:
        raise DifficultyAborted(f"--prompt-levels must be a comma list of {', '.join(PROMPT_LEVELS)}")
    if options.sandbox not in SANDBOXES:
        raise DifficultyAborted(
            f"--sandbox {options.sandbox} is not available in this client: `asibench run` supports "
            f"{', '.join(SANDBOXES)}. Use --sandbox linux_ns (bubblewrap) or none.")


def _prompt_file(task: dict[str, Any], level: str) -> Path:
    prompts = mapping_at(task, "prompts")
    return Path(task["_task_dir"]).resolve() / str(prompts.get(level) or f"prompt_{level}.md")


def generate_instances(task: dict[str, Any], options: CheckOptions, root: Path) -> list[Path]:
    """`<root>/<task_id>__seed<s>[_i<k>]/` with data/, reference/, instance_meta.json and the prompts."""
    task_dir = Path(task["_task_dir"]).resolve()  # the generator runs with the task dir as cwd
    generation = mapping_at(task, "generation")
    timeout = float(generation.get("timeout_seconds") or 300)
    instances = []
    for idx in range(options.instances_per_task):
        params = sample_params(task, options.seed, idx)
        name = instance_id_for_seed(options.task_id, options.seed)
        target = root / (name if idx == 0 else f"{name}_i{idx}")
        try:
            generator_run_local(task_dir, target, params, timeout)
        except GeneratorFailed as exc:
            raise DifficultyAborted(f"generating instance {target.name} failed: {exc}") from None
        for level in options.prompt_levels:
            rendered = target / f"prompt_{level}.md"
            if not rendered.is_file():
                source = _prompt_file(task, level)
                if not source.is_file():
                    raise DifficultyAborted(f"{options.task_id} has no {level} prompt ({source.name})")
                shutil.copyfile(source, rendered)
        instances.append(target)
    return instances


def _score_outcome(outcome: Outcome, results_dir: Path, task_dir: Path, timeout: float) -> dict[str, Any]:
    instance = outcome.item.instance
    outputs = results_dir / instance.task_id / f"{outcome.item.stem}.outputs"
    job = ScoreJob(
        source_result=f"{instance.task_id}/{outcome.item.stem}.json", task_id=instance.task_id,
        instance_id=instance.instance_id, prompt_level=outcome.item.level, attempt=outcome.item.attempt,
        task_dir=task_dir, outputs_dir=outputs if outputs.is_dir() else None, data_dir=instance.path / "data",
        reference_dir=instance.path / "reference", parameters=instance.parameters,
    )
    return score_job(job, timeout)


def _final(result: dict[str, Any]) -> float:
    # Contract §2.1: in a difficulty check an evaluator failure is scored 0 and counted.
    value = result.get("final_score")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def judges_check(evaluation: dict[str, Any], environ: Mapping[str, str]) -> None:
    """A task with model judges needs usable judge entries and an endpoint, or the check aborts before the
    agent runs: judged points scored without a judge would make B3/B4 look harder than they are."""
    problems = judge_config_problems(evaluation)
    if problems:
        raise DifficultyAborted("the task's judge scorers cannot be used: " + "; ".join(problems))
    if has_judges(evaluation):
        endpoint, why = endpoint_status(environ)
        if endpoint is None:
            raise DifficultyAborted(f"the task has model judges and {why}")


def run_check(options: CheckOptions, *, host_env: Mapping[str, str], repo_root: Path,
              on_start: Callable[[WorkItem], None] | None = None,
              on_done: Callable[[Outcome], None] | None = None,
              on_scored: Callable[[Outcome, float], None] | None = None) -> CheckReport:
    """Generate, run, score; raises DifficultyAborted (nothing produced) on any infrastructure failure."""
    check_options(options)
    task = find_catalog_task(options.tasks_dir, options.task_id)
    if task is None:
        raise DifficultyAborted(f"Task {options.task_id} not found in {options.tasks_dir} "
                                "(expected <tasks-dir>/<domain>/<name>/task_meta.yaml with that id)")
    task_dir = Path(task["_task_dir"]).resolve()
    judges_check(mapping_at(task, "evaluation"), host_env)
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="asibench_difficulty_") as tmp:
        work = Path(tmp)
        with _timed(seconds, "generation_seconds"):
            generate_instances(task, options, work / "instances")
        with _timed(seconds, "agent_execution_seconds"):
            outcomes = _run_agent(options, work, host_env=host_env, repo_root=repo_root, on_start=on_start,
                                  on_done=on_done)
        with _timed(seconds, "scoring_seconds"):
            scored = _score_all(outcomes, options, work / "results", task_dir, on_scored)
        replay = _scorer_replay(outcomes, scored.results, work / "results", task_dir, options)

    rows = [policy.level_row(level, scored.by_level[level], options.threshold) for level in options.prompt_levels]
    outcome_verdict = policy.verdict(rows)
    return CheckReport(
        task_id=options.task_id, task_version=str(task.get("version") or ""), task_dir=task_dir, rows=rows,
        verdict=outcome_verdict, evaluation=_evaluation_record(options, rows, outcome_verdict), scores=scored.scores,
        runtime_evidence={**{name: round(value, 2) for name, value in seconds.items()},
                          "environment": f"{platform.platform()}, Python {platform.python_version()}"},
        scorer_replay=replay,
    )


@contextmanager
def _timed(seconds: dict[str, float], name: str) -> Iterator[None]:
    started = time.monotonic()
    yield
    seconds[name] = time.monotonic() - started


def _run_agent(options: CheckOptions, work: Path, *, host_env: Mapping[str, str], repo_root: Path,
               on_start: Callable[[WorkItem], None] | None,
               on_done: Callable[[Outcome], None] | None) -> list[Outcome]:
    """The agent on every generated instance and level, as `asibench run` would; every run must complete."""
    run_options = RunOptions(
        instances_dir=work / "instances", output_dir=work / "results", agent_cmd=options.agent_cmd,
        sandbox=options.sandbox, tasks_dir=options.tasks_dir, tasks=(options.task_id,),
        prompt_levels=options.prompt_levels, timeout=options.timeout, ro_mounts=options.ro_mounts,
        pass_env=options.pass_env, agent_config=options.agent_config,
    )
    try:
        runner = Runner(run_options, host_env=host_env, repo_root=repo_root)
    except CliError as exc:
        raise DifficultyAborted(str(exc)) from None
    outcomes = runner.run(on_start=on_start, on_done=on_done)
    broken = [o for o in outcomes if o.status != "completed"]
    if broken:
        listing = ", ".join(f"{o.item.stem} {o.status}" for o in broken)
        raise DifficultyAborted(f"{len(broken)} of {len(outcomes)} agent runs did not complete ({listing}); "
                                "the check is aborted and nothing was scored or saved")
    return outcomes


@dataclass
class _Scored:
    scores: list[dict[str, Any]] = field(default_factory=list)
    by_level: dict[str, list[float]] = field(default_factory=dict)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)


def _score_all(outcomes: list[Outcome], options: CheckOptions, results_dir: Path, task_dir: Path,
               on_scored: Callable[[Outcome, float], None] | None) -> _Scored:
    scored = _Scored(by_level={level: [] for level in options.prompt_levels})
    for outcome in outcomes:
        result = _score_outcome(outcome, results_dir, task_dir, options.scorer_timeout)
        final = _final(result)
        scored.results[outcome.item.stem] = result
        scored.by_level[outcome.item.level].append(final)
        scored.scores.append({"instance_id": outcome.item.instance.instance_id, "prompt_level": outcome.item.level,
                              "final_score": final, "evaluation_status": result.get("evaluation_status"),
                              "error": result.get("error")})
        if on_scored:
            on_scored(outcome, final)
    return scored


def _evaluation_record(options: CheckOptions, rows: list[dict[str, Any]], outcome_verdict: str) -> dict[str, Any]:
    """The `scores/<task_id>.json` evaluation entry (scoring contract §4.5)."""
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "trigger": "manual",
        "trigger_ref": None,
        "threshold": options.threshold,
        "verdict": outcome_verdict,
        "tool_mode": "restricted",
        "sandbox": options.sandbox,
        "instances_per_task": options.instances_per_task,
        "seeds": [options.seed],
        "results": [{
            **agent_identity(options.agent_config),
            "agent_config": redact_agent_config(options.agent_config),
            "framework_version": __version__,
            "scores": {row["prompt_level"]: {k: row[k] for k in ("mean", "max", "min", "n")} for row in rows},
        }],
    }


def _scorer_replay(outcomes: list[Outcome], results: dict[str, dict[str, Any]], results_dir: Path,
                   task_dir: Path, options: CheckOptions) -> dict[str, Any] | None:
    """Score the first gated result (else the first result) a second time: is the scorer stable?"""
    if not outcomes:
        return None
    chosen = next((o for o in outcomes if o.item.level in policy.GATED_LEVELS), outcomes[0])
    again = _score_outcome(chosen, results_dir, task_dir, options.scorer_timeout)
    return {"prompt_level": chosen.item.level, "first_score": round(_final(results[chosen.item.stem]), 4),
            "second_score": round(_final(again), 4), "tolerance": 0}


def agent_identity(agent_config: Mapping[str, Any]) -> dict[str, Any]:
    """agent/model/effort/agent_version as the §4.5 record names them, from --agent-config."""
    def text(key: str) -> str | None:
        value = agent_config.get(key)
        return str(value) if value not in (None, "") else None

    return {"agent": text("agent") or "agent_cmd", "model": text("model"), "effort": text("effort"),
            "agent_version": text("agent_version")}


# ------------------------------------------------------------------ persisting
def save_evaluation(report: CheckReport, scores_dir: Path) -> Path:
    path = policy.record_path(scores_dir, report.task_id)
    existing = policy.read_record(path)
    if path.exists() and existing is None:
        raise CliError(f"{path} exists but is not a difficulty record; move it away and run the check again")
    write_json_atomic(path, policy.append_evaluation(existing, task_id=report.task_id,
                                                     task_version=report.task_version,
                                                     evaluation=report.evaluation))
    return path


def local_test_entry(report: CheckReport, agent_config: Mapping[str, Any]) -> dict[str, Any]:
    """One `local_test_results` item of task_submission.yaml (scoring contract §1.14)."""
    identity = agent_identity(agent_config)
    entry: dict[str, Any] = {
        "provider": str(agent_config.get("provider") or ""),
        "family": str(agent_config.get("family") or identity["model"] or ""),
        "version": str(agent_config.get("version") or "base"),
        "agent": identity["agent"],
        "sandbox": report.evaluation["sandbox"],
        "results": [{"prompt_level": row["prompt_level"], "score": round(row["mean"], 2)} for row in report.rows],
        "runtime_evidence": report.runtime_evidence,
    }
    if report.scorer_replay:
        entry["scorer_replay"] = {k: report.scorer_replay[k] for k in ("first_score", "second_score", "tolerance")}
    return entry


def _same_run(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(str(a.get(k) or "") == str(b.get(k) or "") for k in ("provider", "family", "version", "agent",
                                                                       "sandbox"))


def write_submission_results(report: CheckReport, agent_config: Mapping[str, Any]) -> Path:
    """Put this check's results into `<task>/task_submission.yaml` `local_test_results`.

    The entry for the same provider/model/agent/sandbox is replaced, others are kept.
    `local_testing_done` is set only when all four levels were run. The file is rewritten
    with PyYAML, so comments in it are not kept.
    """
    path = report.task_dir / SUBMISSION_FILE
    data: Any = {}
    if path.is_file():
        try:
            data = untrusted_yaml_load(path.read_text(encoding="utf-8")) or {}
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise CliError(f"{path} is not valid YAML ({exc}); fix it before writing results into it") from None
        if not isinstance(data, dict):
            raise CliError(f"{path} must contain a YAML mapping")
    else:
        data = {"schema_version": 1}
    entry = local_test_entry(report, agent_config)
    existing = data.get("local_test_results")
    entries = [e for e in existing if isinstance(e, dict)] if isinstance(existing, list) else []
    replaced = [entry if _same_run(e, entry) else e for e in entries]
    data["local_test_results"] = replaced if any(_same_run(e, entry) for e in entries) else [*entries, entry]
    if {row["prompt_level"] for row in report.rows} == set(PROMPT_LEVELS):
        data["local_testing_done"] = True
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(yaml.safe_dump(json.loads(json.dumps(data)), sort_keys=False, allow_unicode=True),
                   encoding="utf-8")
    tmp.replace(path)
    return path
