"""Fixture custom scorer written against the official engine's API (and pandas)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.task import TaskLoader
from ai4sci_bench.core.types import ScoreDetail

TASK_DIR = Path(__file__).resolve().parent


def _table(path: Path) -> dict[str, float]:
    frame = pd.read_csv(path)
    return {str(k): float(v) for k, v in zip(frame["name"], frame["value"], strict=True)}


@register_scorer("damped_fit_params")
class DampedFitParams(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        from ai4sci_bench.scorers._judge_common import resolve_scorer_api_params

        weight = float(config.get("weight", 1.0))
        api_base, _api_key = resolve_scorer_api_params(config)
        meta = TaskLoader(TASK_DIR.parents[1]).load_task_metadata(TASK_DIR / "task.yaml")
        low, high = meta["generation"]["parameters"]["damping"]["range"]
        try:
            ref = _table(ref_dir / config.get("ref_file", "params_ref.csv"))
        except Exception as exc:
            return ScoreDetail("damped_fit_params", 0.0, weight, False, {"error": str(exc)}, "reference unreadable")
        try:
            got = _table(pred_dir / config.get("pred_file", "params.csv"))
        except Exception as exc:
            return ScoreDetail("damped_fit_params", 0.0, weight, False, {"error": str(exc)}, "prediction unreadable")
        tol = float(config.get("rel_tol", 0.05))
        hits = [k for k, v in ref.items() if k in got and abs(got[k] - v) <= tol * abs(v)]
        fraction = len(hits) / max(len(ref), 1)
        details = {"hits": sorted(hits), "damping_range": [low, high], "judge": api_base is not None,
                   "mode": meta["_generation_mode"].value}
        return ScoreDetail("damped_fit_params", weight * fraction, weight, fraction > 0, details,
                           f"{len(hits)}/{len(ref)} parameters within {tol:.0%}")
