"""``composite``: a weighted blend of sub-scorers (contract §2.10)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..registry import Scorer, active_registry, register_scorer
from ..types import ScoreDetail
from .common import weight_of


@register_scorer("composite")
class CompositeScorer(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any]) -> ScoreDetail:
        from ..custom import coerce_detail  # custom imports registry; keep import order simple

        weight = weight_of(config)
        subs = config.get("sub_scorers") or []
        if not subs:
            return ScoreDetail(
                "composite", 0.0, weight, False, {"error": "no sub_scorers configured"}, "composite: no sub_scorers"
            )
        registry = active_registry()
        results, total_weight, blended = [], 0.0, 0.0
        internal: dict[str, Any] | None = None
        for sub in subs:
            sub_weight = float(sub.get("weight", 1))
            sub_config = dict(sub.get("config") or {})
            sub_config["weight"] = 1.0
            # Sub-scorer exceptions propagate: the whole composite crashes (upstream rule).
            result = coerce_detail(registry.get(sub["scorer"]).score(pred_dir, ref_dir, sub_config))
            fraction = result.score / result.max_score if result.max_score > 0 else 0.0
            blended += fraction * sub_weight
            total_weight += sub_weight
            if internal is None and result.internal_error:
                internal = result.details
            results.append(
                {
                    "scorer": sub["scorer"],
                    "score": result.score,
                    "max_score": result.max_score,
                    "passed": result.passed,
                    "details": result.details,
                    "message": result.message,
                }
            )
        score = blended / total_weight * weight
        details: dict[str, Any] = {"sub_results": results}
        if internal is not None:
            # An unavailable judge inside a composite must not be silently scored as zero.
            details["scorer_internal_error"] = True
            details["failure_kind"] = internal.get("failure_kind", "evaluator_runtime_error")
        return ScoreDetail(
            "composite",
            score,
            weight,
            all(r["passed"] for r in results),
            details,
            f"composite of {len(results)} sub-scorers: {score:.4f}/{weight}",
        )
