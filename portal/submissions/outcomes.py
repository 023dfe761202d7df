"""How each result of a scoring ended, and what share of the benchmark a run covers validly. Pure.

Every result ends in exactly one outcome. The agent-side ones (`agent_error`, `agent_timeout`,
`missing_outputs`) score 0, as the official engine scores them; `scored` is a real score (0 included:
a failed gate is the agent's). Evaluation (the scorer), judge and infrastructure errors are never a
zero: a scoring with one leaves that result out of every figure and counts it as invalid, and a run
is complete only when every (task, level) of the dataset's official task set has a valid result and
none is invalid (`coverage`). Infrastructure errors are retried by the worker first; a result that
still has no score when its scoring ends is an infrastructure error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from contracts import PROMPT_LEVELS

OUTCOMES = {
    "scored": "scored",
    "agent_error": "agent error",
    "agent_timeout": "agent timeout",
    "missing_outputs": "missing outputs",
    "evaluation_error": "evaluation error (scorer)",
    "judge_error": "judge error",
    "infrastructure_error": "infrastructure error",
}
# Counted in the figures (agent-side failures as 0); the others are invalid, never a silent 0.
VALID_OUTCOMES = frozenset({"scored", "agent_error", "agent_timeout", "missing_outputs"})
INVALID_OUTCOMES = frozenset(OUTCOMES) - VALID_OUTCOMES

# The pipeline's words for a zero it made itself (scoring/pipeline.py `error_outcome` callers), by what they mean.
_AGENT_SIDE_REASONS = ("outputs could not be staged",)
_JUDGE_REASONS = ("evaluator unavailable", "the judges of this result")
_JUDGE_FAILURE_KINDS = frozenset({"evaluator_unavailable"})


@dataclass(frozen=True)
class ResultEnd:
    """What `result_outcome` reads of one result and its score (None: the scoring stored none)."""

    result_status: str  # the result's own status: completed | failed | timeout | …
    has_outputs: bool
    missing_outputs: bool
    score_outcome: str | None  # InstanceScore.outcome: scored | error; None: no score
    reason: str = ""
    failure_kind: str = ""


def result_outcome(end: ResultEnd) -> str:
    if end.score_outcome is None:
        return "infrastructure_error"
    if end.score_outcome == "error":
        if end.reason.startswith(_AGENT_SIDE_REASONS):
            return "missing_outputs"
        if end.reason.startswith(_JUDGE_REASONS) or end.failure_kind in _JUDGE_FAILURE_KINDS:
            return "judge_error"
        return "evaluation_error"
    if end.result_status == "timeout":
        return "agent_timeout"
    if end.result_status not in ("completed", ""):
        return "agent_error"
    if end.missing_outputs and not end.has_outputs:
        return "missing_outputs"
    return "scored"


def score_end(entry: Any, score: Any | None) -> ResultEnd:
    """The ResultEnd of a SubmissionEntry and its InstanceScore (or None)."""
    result = (score.result or {}) if score is not None else {}
    return ResultEnd(result_status=entry.result_status or "", has_outputs=bool(entry.outputs),
                     missing_outputs=bool(entry.missing_outputs),
                     score_outcome=score.outcome if score is not None else None,
                     reason=score.reason if score is not None else "",
                     failure_kind=str(result.get("failure_kind") or "") if isinstance(result, dict) else "")


def coverage(cells: Iterable[tuple[str, str, str]], official_tasks: Iterable[str]) -> dict[str, Any]:
    """The share of the official task set × B1–B4 a run scored validly, from its results' (task, level,
    outcome). A cell is valid when one of its results is; the run is complete when every cell is and
    no result is invalid."""
    official = set(official_tasks)
    outcomes: Counter[str] = Counter()
    valid: set[tuple[str, str]] = set()
    for task, level, outcome in cells:
        outcomes[outcome] += 1
        if outcome in VALID_OUTCOMES and task in official:
            valid.add((task, level))
    expected = len(official) * len(PROMPT_LEVELS)
    invalid = sum(n for outcome, n in outcomes.items() if outcome in INVALID_OUTCOMES)
    tasks_full = {t for t in official if all((t, lv) in valid for lv in PROMPT_LEVELS)}
    return {
        "valid": len(valid), "expected": expected,
        "percent": round(100.0 * len(valid) / expected, 1) if expected else 0.0,
        "tasks_covered": len({t for t, _ in valid}), "tasks_complete": len(tasks_full), "tasks_expected": len(official),
        "levels_missing": [lv for lv in PROMPT_LEVELS if not any(level == lv for _, level in valid)],
        "invalid": invalid,
        "outcomes": {k: outcomes[k] for k in OUTCOMES if outcomes.get(k)},
        "complete": bool(expected) and len(valid) == expected and invalid == 0,
    }


def coverage_from_levels(tasks: dict[str, Any], official_tasks: Iterable[str]) -> dict[str, Any]:
    """Coverage of a scoring made before outcomes were recorded, from its per-task level figures: every
    level with a figure was scored (then, every result counted, errors as 0)."""
    return coverage(((task, level, "scored") for task, figures in (tasks or {}).items()
                     for level, value in ((figures or {}).get("levels") or {}).items() if value is not None),
                    official_tasks)


def coverage_line(cov: dict[str, Any]) -> str:
    """ "8 of 48 task-levels (16.7 %), 2 of 12 tasks; 1 invalid result" for warnings and logs."""
    text = (f"{cov.get('valid', 0)} of {cov.get('expected', 0)} task-levels ({cov.get('percent', 0)} %), "
            f"{cov.get('tasks_covered', 0)} of {cov.get('tasks_expected', 0)} tasks")
    if cov.get("levels_missing"):
        text += f", no {'/'.join(lv.upper() for lv in cov['levels_missing'])}"
    if cov.get("invalid"):
        text += f"; {cov['invalid']} invalid result(s)"
    return text
