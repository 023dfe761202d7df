"""Board figures from a scoring aggregate: level means, mean, intervals, for all tasks or one domain.

Pure: the input is the ``tasks`` part of a ScoringRun aggregate
(``{task_id: {"mean": x, "levels": {"b1": x, ...}}}``). A level's figure is the mean over tasks
of that task's level score (one instance per task and dataset, so this is the aggregate's own
micro-average); "mean" is the mean of task means. Intervals resample tasks.
"""

from typing import Any

from django.conf import settings

from contracts import PROMPT_LEVELS
from leaderboard.stats import Interval, bootstrap_ci

COLUMNS = (*PROMPT_LEVELS, "mean")


def domain_of(task_id: str) -> str:
    return task_id.split(".", 1)[0]


def figures(tasks: dict[str, Any], domain: str | None = None) -> dict[str, Any]:
    """{"b1".."b4", "mean": value or None, "intervals": {col: [lo, hi]}, "instances_scored", "task_count"}."""
    chosen = {t: v for t, v in tasks.items() if domain is None or domain_of(t) == domain}
    out: dict[str, Any] = {"intervals": {}, "task_count": len(chosen)}
    counted = 0
    for level in PROMPT_LEVELS:
        values = [v["levels"].get(level) for v in chosen.values() if v.get("levels", {}).get(level) is not None]
        counted += len(values)
        _put(out, level, bootstrap_ci(values, confidence=settings.BOARD_INTERVAL_CONFIDENCE))
    _put(out, "mean", bootstrap_ci([v["mean"] for v in chosen.values() if v.get("mean") is not None],
                                  confidence=settings.BOARD_INTERVAL_CONFIDENCE))
    out["instances_scored"] = counted
    return out


def _put(out: dict[str, Any], column: str, interval: Interval | None) -> None:
    out[column] = interval.mean if interval else None
    out["intervals"][column] = [interval.low, interval.high] if interval else None


def domain_breakdown(tasks: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"domain": d, **figures(tasks, d)} for d in sorted({domain_of(t) for t in tasks})]
