"""The gate → score loop (contract §2.2–§2.5, §2.13) for one instance at one prompt level."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import scorers as _builtin_scorers  # noqa: F401  (registers the built-in scorers)
from .custom import CustomScorerLoadError, coerce_detail, custom_runtime, load_custom_scorers
from .errors import EngineError, EvaluationConfigError
from .judge_calls import JUDGE_PROTOCOL_VERSION, JudgeSession, judge_session
from .registry import ScorerRegistry, using_registry
from .scorers.common import internal_error_detail
from .taskdef import load_task
from .templates import resolve_templates
from .types import ScoreDetail, jsonable
from .version import COMPAT_FRAMEWORK, ENGINE_VERSION

SEVERITIES = ("hard", "soft")
HARD_FAIL_MODES = ("zero", "gate_score_sum")


def validate_score_divisor(value: Any) -> float:
    if value is None:
        return 1.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EvaluationConfigError(f"score_divisor must be a finite positive number, got {value!r}")
    divisor = float(value)
    if not math.isfinite(divisor) or divisor <= 0:
        raise EvaluationConfigError(f"score_divisor must be a finite positive number, got {value!r}")
    return divisor


def _entries(evaluation: dict[str, Any], key: str) -> list[dict[str, Any]]:
    entries = evaluation.get(key) or []
    if not isinstance(entries, list):
        raise EvaluationConfigError(f"evaluation.{key} must be a list")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not entry.get("scorer"):
            raise EvaluationConfigError(f"evaluation.{key}[{i}] must be a mapping with a 'scorer'")
        if entry.get("config") is not None and not isinstance(entry["config"], dict):
            raise EvaluationConfigError(f"evaluation.{key}[{i}].config must be a mapping")
    return entries


def _weight(entry: dict[str, Any], where: str) -> float:
    raw = entry.get("weight", 1.0)
    try:
        weight = float(raw)
    except (TypeError, ValueError):
        raise EvaluationConfigError(f"{where}: weight {raw!r} is not a number") from None
    if isinstance(raw, bool) or not math.isfinite(weight):
        raise EvaluationConfigError(f"{where}: weight {raw!r} is not a finite number")
    return weight


def _severity(entry: dict[str, Any], where: str) -> str:
    severity = str(entry.get("severity") or "hard").lower()
    if severity not in SEVERITIES:
        raise EvaluationConfigError(f"{where}: severity {entry.get('severity')!r} is not hard or soft")
    return severity


class _Evaluation:
    """State of one run of the loop; kept small so score_instance reads like §2.2."""

    def __init__(self, pred_dir: Path, ref_dir: Path, params: dict[str, Any], prompt_level: str | None) -> None:
        self.pred_dir, self.ref_dir = pred_dir, ref_dir
        self.params, self.prompt_level = params, prompt_level
        self.registry = ScorerRegistry()

    def config_for(self, entry: dict[str, Any], weight: float) -> dict[str, Any]:
        # Outside the per-scorer guard on purpose: a template error invalidates the instance.
        config = resolve_templates(dict(entry.get("config") or {}), self.params)
        if self.prompt_level is not None:
            config["prompt_level"] = self.prompt_level
        config["weight"] = weight
        return config

    def run(self, name: str, config: dict[str, Any], max_score: float) -> ScoreDetail:
        try:
            return coerce_detail(self.registry.get(name).score(self.pred_dir, self.ref_dir, config))
        except (Exception, SystemExit) as exc:  # a scorer calling sys.exit() must not end the engine
            return internal_error_detail(name, max_score, exc)


@dataclass(frozen=True)
class _Plan:
    """A task's evaluation block, read and checked before anything is scored."""

    gates: list[dict[str, Any]]
    severities: list[str]
    scoring: list[dict[str, Any]]
    weights: list[float]
    mode: str


def _plan(task: dict[str, Any]) -> _Plan:
    evaluation = task.get("evaluation")
    if not isinstance(evaluation, dict):
        raise EvaluationConfigError("task has no evaluation mapping")
    if evaluation.get("runtime") not in (None, "task"):
        raise EvaluationConfigError(f"evaluation.runtime {evaluation['runtime']!r} is not supported (only 'task')")
    gates, scoring = _entries(evaluation, "gates"), _entries(evaluation, "scoring")
    return _Plan(
        gates=gates,
        severities=[_severity(entry, f"gates[{i}] ({entry['scorer']})") for i, entry in enumerate(gates)],
        scoring=scoring,
        weights=[_weight(entry, f"scoring[{i}] ({entry['scorer']})") for i, entry in enumerate(scoring)],
        mode=str(evaluation.get("hard_fail_score_mode") or "zero"),
    )


class _Result:
    """The result dict of one scoring, and the three ways it ends: invalid, judges pending, completed."""

    def __init__(self, prompt_level: str | None, params: dict[str, Any]) -> None:
        self.started = time.monotonic()
        self.gate_results: list[ScoreDetail] = []
        self.score_results: list[ScoreDetail] = []
        self.data: dict[str, Any] = {
            "engine_version": ENGINE_VERSION,
            "compat_framework": COMPAT_FRAMEWORK,
            "task_id": None,
            "prompt_level": prompt_level,
            "parameters": jsonable(params),
            "hard_gates_passed": False,
            "gates_passed": False,
            "soft_gate_failures": 0,
            "gate_results": [],
            "score_results": [],
            "raw_score": None,
            "final_score": None,
            "max_score": 0.0,
            "score_divisor": None,
            "percent": None,
            "hard_fail_score_mode": "zero",
            "evaluation_status": "evaluation_invalid",
            "scorer_internal_error": False,
        }

    def _seconds(self) -> float:
        return round(time.monotonic() - self.started, 3)

    def details(self) -> None:
        self.data.update(gate_results=[d.to_dict() for d in self.gate_results],
                         score_results=[d.to_dict() for d in self.score_results])

    def invalid(self, kind: str, message: str) -> dict[str, Any]:
        self.data.update(evaluation_status="evaluation_invalid", final_score=None, percent=None, failure_kind=kind,
                         error=message, scoring_seconds=self._seconds())
        return self.data

    def pending(self, session: JudgeSession) -> dict[str, Any]:
        self.details()
        self.data.update(evaluation_status="judges_pending", final_score=None, percent=None,
                         judge_protocol=JUDGE_PROTOCOL_VERSION, judge_requests=session.pending,
                         scoring_seconds=self._seconds())
        return self.data

    def completed(self, final: float) -> dict[str, Any]:
        max_score = self.data["max_score"]
        self.data.update(evaluation_status="completed", final_score=final,
                         percent=(final / max_score * 100.0) if max_score > 0 else 0.0,
                         scoring_seconds=self._seconds())
        return self.data


def _run_gates(state: _Evaluation, plan: _Plan, result: _Result) -> tuple[bool, int]:
    """Every gate at weight 1 (§2.5): whether all hard gates passed, and how many soft ones failed."""
    hard_ok, soft_failures = True, 0
    for entry, severity in zip(plan.gates, plan.severities, strict=True):
        detail = state.run(entry["scorer"], state.config_for(entry, 1.0), 1.0)
        detail.severity = severity
        result.gate_results.append(detail)
        if not detail.passed:
            if severity == "hard":
                hard_ok = False
            else:
                soft_failures += 1
    return hard_ok, soft_failures


def _run_scoring(state: _Evaluation, plan: _Plan, result: _Result) -> float:
    """Every scoring entry at its weight; the raw score is their sum."""
    raw = 0.0
    for entry, weight in zip(plan.scoring, plan.weights, strict=True):
        detail = state.run(entry["scorer"], state.config_for(entry, weight), weight)
        result.score_results.append(detail)
        raw += detail.score
    return raw


def score_instance(
    task_dir: Path,
    pred_dir: Path,
    ref_dir: Path,
    params: dict[str, Any] | None,
    prompt_level: str | None,
    judge_book: dict[str, Any] | None = None,
    task: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score one staged prediction directory; never raises for task or scorer problems.

    Returns a JSON-serialisable dict. ``evaluation_status`` is ``completed`` (a real score,
    possibly 0), ``evaluation_invalid`` (``final_score``/``percent`` null, ``failure_kind``
    and ``error`` say why: an internal scorer error, a broken evaluation block, or missing
    reference/prediction directories), or ``judges_pending``: a judge needs a reply that
    ``judge_book`` (see `judge_calls`) does not hold; ``judge_requests`` lists what to ask, and
    the caller scores again with the replies. While a judge gate waits, the scoring entries are
    not run, so no judge is asked about an output a gate may still reject. `task` is the task
    definition `load_task(task_dir)` already read (a batch parses it once for all its results);
    it may be changed here, so pass a copy you still need.
    """
    task_dir, pred_dir, ref_dir = Path(task_dir), Path(pred_dir), Path(ref_dir)
    params = dict(params or {})
    result = _Result(prompt_level, params)
    try:
        task = task if task is not None else load_task(task_dir)
        result.data["task_id"] = task.get("id")
        plan = _plan(task)
        result.data["max_score"] = sum(plan.weights)
        divisor = validate_score_divisor(task["evaluation"].get("score_divisor"))
    except EngineError as exc:
        return result.invalid(exc.failure_kind, str(exc))
    result.data.update(score_divisor=divisor, max_score=sum(plan.weights) / divisor, hard_fail_score_mode=plan.mode)

    if not pred_dir.is_dir():
        return result.invalid("missing_evaluator_input", f"prediction directory {pred_dir} does not exist")
    if not ref_dir.is_dir() or not any(ref_dir.iterdir()):
        return result.invalid("missing_evaluator_input", f"reference directory {ref_dir} is missing or empty")

    state = _Evaluation(pred_dir, ref_dir, params, prompt_level)
    try:
        state.registry = ScorerRegistry(load_custom_scorers(task_dir))
    except CustomScorerLoadError as exc:
        crash = internal_error_detail("custom_scorer_loader", result.data["max_score"], exc.__cause__ or exc)
        result.data["score_results"] = [crash.to_dict()]
        result.data["scorer_internal_error"] = True
        return result.invalid("evaluator_runtime_error", crash.message)

    raw = 0.0
    session = JudgeSession()
    try:
        with custom_runtime(task_dir), using_registry(state.registry), judge_session(judge_book) as session:
            hard_ok, soft_failures = _run_gates(state, plan, result)
            if session.pending:
                return result.pending(session)
            if hard_ok:
                raw = _run_scoring(state, plan, result)
            elif plan.mode == "gate_score_sum":
                raw = sum(d.score for d in result.gate_results)
    except EngineError as exc:  # template errors: the whole instance is invalid (§2.2 notes)
        result.details()
        return result.invalid(exc.failure_kind, str(exc))

    if session.pending:
        return result.pending(session)
    result.details()
    result.data.update(
        hard_gates_passed=hard_ok, gates_passed=hard_ok, soft_gate_failures=soft_failures, raw_score=raw,
        # Which recorded judge replies this score rests on (none: no model was involved).
        judge_calls_used=session.used,
    )
    broken = [d for d in result.gate_results + result.score_results if d.internal_error]
    if broken:
        result.data["scorer_internal_error"] = True
        first = broken[0]
        return result.invalid(
            str(first.details.get("failure_kind") or "evaluator_runtime_error"), f"{first.scorer_name}: {first.message}"
        )
    return result.completed(raw / divisor)
