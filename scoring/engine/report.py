"""The schema-2 local score report (client contract §7, scoring contract §4.4)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from .types import jsonable

IDENTITY_KEYS = ("source_result", "task_id", "instance_id", "prompt_level", "attempt")
RESULT_KEYS = (
    "hard_gates_passed",
    "soft_gate_failures",
    "gate_results",
    "score_results",
    "evaluation_status",
    "final_score",
    "max_score",
    "score_divisor",
    "scorer_internal_error",
)


def build_local_report(results: list[dict[str, Any]], repo: str) -> dict[str, Any]:
    """Aggregate ``score_instance`` results (plus identity keys) into a schema-2 report.

    Every entry counts (attempts are not de-duplicated). Only ``completed`` results enter
    the totals; ``mean_percent`` is null when nothing scorable has a positive maximum.
    """
    entries, total, total_max, errors = [], 0.0, 0.0, 0
    for result in results:
        entry: dict[str, Any] = {key: result.get(key) for key in IDENTITY_KEYS}
        if entry["attempt"] is None:
            entry["attempt"] = 1
        entry.update({key: result.get(key) for key in RESULT_KEYS})
        entry["soft_gate_failures"] = int(entry["soft_gate_failures"] or 0)
        entry["hard_gates_passed"] = bool(entry["hard_gates_passed"])
        entry["gate_results"] = entry["gate_results"] or []
        entry["score_results"] = entry["score_results"] or []
        entry["scorer_internal_error"] = bool(entry["scorer_internal_error"])
        if result.get("evaluation_status") == "completed" and result.get("final_score") is not None:
            total += float(result["final_score"])
            total_max += float(result.get("max_score") or 0.0)
        else:
            errors += 1
            entry["evaluation_status"] = "evaluation_invalid"
            entry["final_score"] = None
            entry["scorer_internal_error"] = True
            entry["failure_kind"] = result.get("failure_kind") or "evaluator_runtime_error"
        entries.append(entry)
    return jsonable(
        {
            "schema_version": 2,
            "generated_at": datetime.now(UTC).isoformat(),
            "repo": repo,
            "official": False,
            "score_scope": "public_local",
            "instance_count": len(entries),
            "scored_instance_count": len(entries) - errors,
            "scorer_error_count": errors,
            "total_score": total,
            "total_max_score": total_max,
            "mean_percent": (100.0 * total / total_max) if total_max > 0 else None,
            "results": entries,
        }
    )
