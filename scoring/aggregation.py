"""Aggregating instance scores the way the benchmark does (scoring contract §4.1-4.2). Pure Python."""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from contracts import PROMPT_LEVELS


@dataclass(frozen=True)
class ScoredResult:
    instance_id: str
    task_id: str
    prompt_level: str
    attempt: int
    completed: bool  # the result's own status was "completed"
    percent: float  # 0-100
    execution_seconds: float = 0.0


def representatives(results: Iterable[ScoredResult]) -> list[ScoredResult]:
    """Best of N per (instance, level): prefer clean completions, then the score, then speed."""
    best: dict[tuple[str, str], ScoredResult] = {}
    for result in results:
        key = (result.instance_id, result.prompt_level)
        current = best.get(key)
        rank = (result.completed, result.percent, -result.execution_seconds)
        if current is None or rank > (current.completed, current.percent, -current.execution_seconds):
            best[key] = result
    return sorted(best.values(), key=lambda r: (r.instance_id, r.prompt_level))


def _mean(values: list[float]) -> float | None:
    return round(fmean(values), 4) if values else None


def aggregate(results: Iterable[ScoredResult]) -> dict[str, Any]:
    """Per level (micro-average), per task (pooled levels), per domain (mean of task means), overall."""
    chosen = representatives(results)
    by_level: dict[str, list[float]] = defaultdict(list)
    by_task: dict[str, list[float]] = defaultdict(list)
    by_task_level: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for result in chosen:
        by_level[result.prompt_level].append(result.percent)
        by_task[result.task_id].append(result.percent)
        by_task_level[result.task_id][result.prompt_level].append(result.percent)
    task_means = {task: _mean(values) for task, values in sorted(by_task.items())}
    by_domain: dict[str, list[float]] = defaultdict(list)
    for task, mean in task_means.items():
        if mean is not None:
            by_domain[task.split(".", 1)[0]].append(mean)
    return {
        "levels": {level: _mean(by_level.get(level, [])) for level in PROMPT_LEVELS},
        "tasks": {
            task: {"mean": mean, "levels": {lv: _mean(by_task_level[task].get(lv, [])) for lv in PROMPT_LEVELS}}
            for task, mean in task_means.items()
        },
        "domains": {domain: _mean(values) for domain, values in sorted(by_domain.items())},
        "overall": _mean([r.percent for r in chosen]),
        "results_counted": len(chosen),
    }
