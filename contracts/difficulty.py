"""The B3/B4 difficulty policy and the `scores/<task_id>.json` record (scoring contract §4.5).

Shared by `asibench difficulty-check` (which writes records) and the Portal (which gates
proposals on the recorded scores and shows the latest evaluation in the catalog). Pure
Python: no Django, no network.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contracts import PROMPT_LEVELS

DIFFICULTY_THRESHOLD = 40.0
"""The acceptance ceiling: a gated level passes iff its mean is strictly below this."""
THRESHOLD_RANGE = (1.0, 40.0)
GATED_LEVELS = ("b3", "b4")


def threshold_problem(value: float) -> str | None:
    """Why a --threshold is refused (outside 1–40, or nan), else None."""
    low, high = THRESHOLD_RANGE
    if not low <= value <= high:
        return f"must be between {low:g} and {high:g} (got {value:g}); lower values make the check stricter"
    return None


def level_row(level: str, scores: list[float], threshold: float) -> dict[str, Any]:
    """One (agent, level) row: mean/max/min/n; only B3/B4 are enforced, B1/B2 are recorded."""
    mean = sum(scores) / len(scores) if scores else 0.0
    enforced = level in GATED_LEVELS
    return {
        "prompt_level": level,
        "mean": mean,
        "max": max(scores) if scores else 0.0,
        "min": min(scores) if scores else 0.0,
        "n": len(scores),
        "enforced": enforced,
        "passed": (mean < threshold) if enforced else True,
    }


def verdict(rows: list[dict[str, Any]]) -> str:
    """pass iff every enforced row passes (vacuously pass when no B3/B4 level was run)."""
    return "pass" if all(row["passed"] for row in rows if row["enforced"]) else "fail"


def _as_number(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return float(value)  # frozen revision fields keep non-finite floats as strings
        except ValueError:
            return value
    return value


def too_easy_problems(scores: Mapping[str, Any], threshold: float = DIFFICULTY_THRESHOLD) -> list[str]:
    """The B3/B4 scores that are numbers at or above the threshold, each as a reason."""
    problems = []
    for level in GATED_LEVELS:
        value = _as_number(scores.get(level))
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
                and value >= threshold:
            problems.append(f"{level.upper()} scored {value:g}, not below {threshold:g}: the task is too easy "
                            f"without the method (B3 and B4 must stay below {threshold:g})")
    return problems


def gate_problems(scores: Mapping[str, Any], threshold: float = DIFFICULTY_THRESHOLD) -> list[str]:
    """Why recorded per-level scores break the acceptance rule (B3 and B4 below the threshold).

    A missing or non-finite B3/B4 score is a problem too: it cannot show the task is hard.
    """
    problems = []
    for level in GATED_LEVELS:
        value = _as_number(scores.get(level))
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            problems.append(f"no usable {level.upper()} score is recorded ({scores.get(level)!r})")
    return problems + too_easy_problems(scores, threshold)


# ------------------------------------------------------------------ scores/<task_id>.json
def record_path(scores_dir: Path, task_id: str) -> Path:
    return Path(scores_dir) / f"{task_id}.json"


def read_record(path: Path) -> dict[str, Any] | None:
    """The record at `path`, or None when it is absent or not a record (never raises)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("evaluations"), list):
        return None
    return data


def append_evaluation(record: dict[str, Any] | None, *, task_id: str, task_version: str,
                      evaluation: dict[str, Any]) -> dict[str, Any]:
    """The record with `evaluation` appended last (the latest is the last element)."""
    evaluations = list((record or {}).get("evaluations") or [])
    evaluations.append(evaluation)
    return {"task_id": task_id, "task_version": task_version, "evaluations": evaluations}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def public_summary(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """The latest evaluation of a record, reduced to what a public page may show.

    Whitelisted fields only: the agent configuration (which may carry endpoints or
    settings) and the generation seeds are left out.
    """
    evaluations = [e for e in (record or {}).get("evaluations") or [] if isinstance(e, dict)]
    if not evaluations:
        return None
    latest = evaluations[-1]
    threshold = _number(latest.get("threshold")) or DIFFICULTY_THRESHOLD
    agents = []
    for result in latest.get("results") or []:
        if not isinstance(result, dict) or not isinstance(result.get("scores"), dict):
            continue
        rows = []
        for level in PROMPT_LEVELS:
            stats = result["scores"].get(level)
            if not isinstance(stats, dict) or _number(stats.get("mean")) is None:
                continue
            mean = _number(stats.get("mean"))
            enforced = level in GATED_LEVELS
            row: dict[str, Any] = {key: _number(stats.get(key)) for key in ("mean", "max", "min")}
            row["n"] = stats.get("n") if isinstance(stats.get("n"), int) else None
            row["prompt_level"] = level
            row["enforced"] = enforced
            row["passed"] = (mean is not None and mean < threshold) if enforced else True
            rows.append(row)
        agents.append({"agent": str(result.get("agent") or "")[:60], "model": str(result.get("model") or "")[:120],
                       "rows": rows})
    return {
        "date": str(latest.get("date") or "")[:40],
        "verdict": "pass" if latest.get("verdict") == "pass" else "fail",
        "threshold": threshold,
        "sandbox": str(latest.get("sandbox") or "")[:20],
        "instances_per_task": latest.get("instances_per_task") if isinstance(latest.get("instances_per_task"),
                                                                             int) else None,
        "agents": agents,
    }
