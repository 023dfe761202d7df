"""Helpers shared by the built-in scorers."""

from __future__ import annotations

import traceback
from typing import Any

from ..types import ScoreDetail

CHECK_MODES = ("all_or_nothing", "per_check")


def weight_of(config: dict[str, Any]) -> float:
    return float(config.get("weight", 1.0))


def checks_score(mode: str, n_passed: int, n_total: int, weight: float) -> float:
    """``all_or_nothing`` / ``per_check`` scoring; an empty check list earns full weight."""
    if mode not in CHECK_MODES:
        raise ValueError(f"Unknown scoring_mode: {mode!r} (expected one of {', '.join(CHECK_MODES)})")
    if n_total == 0:
        return weight
    if mode == "all_or_nothing":
        return weight if n_passed == n_total else 0.0
    return weight * n_passed / n_total


def internal_error_detail(
    scorer_name: str,
    max_score: float,
    exc: BaseException,
    failure_kind: str = "evaluator_runtime_error",
) -> ScoreDetail:
    """The zero result the engine records for a scorer that raised (§2.4 detail keys)."""
    tail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip().splitlines()[-5:]
    return ScoreDetail(
        scorer_name,
        0.0,
        max_score,
        False,
        {
            "scorer_internal_error": True,
            "failure_kind": failure_kind,
            "exception_type": type(exc).__name__,
            "traceback_tail": tail,
        },
        f"Scorer crashed: {type(exc).__name__}: {exc}",
    )


def unavailable_detail(scorer_name: str, max_score: float, reason: str) -> ScoreDetail:
    return ScoreDetail(
        scorer_name,
        0.0,
        max_score,
        False,
        {
            "scorer_internal_error": True,
            "failure_kind": "evaluator_unavailable",
            "evaluator_status": "unavailable",
            "error": reason,
        },
        f"Evaluator unavailable: {reason}",
    )
