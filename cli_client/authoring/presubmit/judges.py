"""The task's model judges: their configuration checked before anything runs, and the reference fed to them
when an endpoint is configured."""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path
from typing import Any

from cli_client.running.local_score import run_engine
from scoring.engine.cli import score_argv
from scoring.engine.judge_models import JUDGE_SCORERS, agent_judge_timeout_notes, judge_config_problems
from scoring.engine.taskdef import mapping_at
from scoring.judging.local import agent_judge_ceiling, endpoint_status, score_with_judges

from .report import Check
from .selfcheck import selfcheck_task_copy


def _model_judge(entry: Any) -> bool:
    return isinstance(entry, dict) and entry.get("scorer") in JUDGE_SCORERS and not (
        entry.get("scorer") == "multimodal" and mapping_at(entry, "config").get("mode") == "pixel_sim")


def judges_config_check(task: dict[str, Any]) -> Check | None:
    """The task's judge entries, checked before anything runs: a model that routes, a usable rubric,
    sane numbers (None when the task has no judge scorer)."""
    evaluation = mapping_at(task, "evaluation")
    entries = [e for key in ("gates", "scoring") for e in evaluation.get(key) or []
               if isinstance(e, dict) and (e.get("scorer") in JUDGE_SCORERS or e.get("scorer") == "composite")]
    problems = judge_config_problems(evaluation)
    if not entries:
        return None
    # The ceiling the Portal's workers and local scoring apply (ASIBENCH_AGENT_JUDGE_MAX_TIMEOUT, default
    # 1800 s): a longer timeout is clamped, not refused.
    clamped = [f"[warning] {note}" for note in
               agent_judge_timeout_notes(evaluation, agent_judge_ceiling(os.environ), "the scoring")]
    if problems:
        return Check("judges", False, f"{len(problems)} problem(s) with the judge scorers", problems + clamped)
    return Check("judges", True, "every judge scorer names a model that routes and a usable rubric", clamped)


def run_judge_selfcheck(task: dict[str, Any], instance: Path, pred: Path, params: dict[str, Any], work: Path,
                        timeout: float, environ: Any = None) -> Check | None:
    """The reference fed to the task's model judges, when an endpoint is configured: each judge must
    accept it (its normalized score reaches its threshold). Without an endpoint the check says so."""
    evaluation = mapping_at(task, "evaluation")
    judged = [e for e in evaluation.get("scoring") or [] if _model_judge(e)]
    if not judged:
        return None
    points = sum(float(e.get("weight", 1.0)) for e in judged)
    endpoint, why = endpoint_status(environ)
    if endpoint is None:
        return Check("gt_selfcheck_judges", None, f"not run: {why}",
                     [f"[info] {points:g} points of model judges ({len(judged)} scorer(s)) were not checked"])
    task_copy = selfcheck_task_copy(task, {**copy.deepcopy(evaluation), "scoring": copy.deepcopy(judged)},
                                     work / "judges-task" / Path(task["_task_dir"]).name)
    params_file = work / "judges-params.json"
    params_file.write_text(json.dumps(params), encoding="utf-8")

    def argv_for(book: Path | None) -> list[str]:
        return score_argv([sys.executable], task_dir=task_copy, pred_dir=pred, ref_dir=instance / "reference",
                          params=f"@{params_file}", judge_book=book)

    result = score_with_judges(lambda book: run_engine(work, argv_for, timeout, book), pred_dir=pred,
                               ref_dir=instance / "reference", environ=environ)
    if result.get("evaluation_status") != "completed":
        return Check("gt_selfcheck_judges", False, f"the judges could not score the reference: {result.get('error')}",
                     [why])
    details, ok = [why], bool(result.get("hard_gates_passed"))
    for entry in result.get("score_results") or []:
        info = entry.get("details") or {}
        reasons = [r for r in info.get("reasonings") or [] if r]
        details.append(f"{entry.get('scorer_name')}: {entry.get('score'):.4g}/{entry.get('max_score'):.4g} "
                       f"(median {info.get('median_score')}, threshold {info.get('threshold')})"
                       + (f" — {reasons[0][:200]}" if reasons else ""))
        ok = ok and bool(entry.get("passed"))
    summary = (f"the judges give the reference {float(result.get('final_score') or 0):.4g}/{points:g}"
               + ("" if ok else "; a judge does not accept the reference (check its rubric and max_score_value)"))
    return Check("gt_selfcheck_judges", ok, summary, details)

