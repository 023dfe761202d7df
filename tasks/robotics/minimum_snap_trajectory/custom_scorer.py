"""Custom scorer for robotics.minimum_snap_trajectory.

The built-in ``numerical`` scorers use linear error bands, which cannot tell a
well-conditioned solve (relative error ~1e-13) from an ill-conditioned one that
lost half of the significant digits (~1e-7).  This scorer grades the number of
correct significant digits: with e the relative error of the prediction,

    f = clip( (log10(zero) - log10(e)) / (log10(zero) - log10(full)), 0, 1 )

so e <= full earns the full weight and e >= zero earns nothing.

Config keys: pred_file, ref_file, metric (``relative_l2`` over the whole array,
or ``max_relative`` = largest element-wise |p - r| / |r|), full (default 1e-8),
zero (default 1e-2).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.types import ScoreDetail

NAME = "minimum_snap_log_accuracy"


def _error(pred: np.ndarray, ref: np.ndarray, metric: str) -> float:
    if metric == "relative_l2":
        nr = float(np.linalg.norm(ref))
        return float(np.linalg.norm(pred - ref)) / nr if nr > 0 else float(np.linalg.norm(pred))
    if metric == "max_relative":
        den = np.abs(ref)
        den = np.where(den > 0, den, 1.0)
        return float(np.max(np.abs(pred - ref) / den))
    raise ValueError(f"unknown metric {metric!r}")


@register_scorer(NAME)
class MinimumSnapLogAccuracy(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        weight = float(config.get("weight", 1.0))
        pred_name = str(config.get("pred_file", ""))
        ref_name = str(config.get("ref_file", ""))
        metric = str(config.get("metric", "relative_l2"))
        full = float(config.get("full", 1e-8))
        zero = float(config.get("zero", 1e-2))
        try:
            ref = np.asarray(np.load(Path(ref_dir) / ref_name, allow_pickle=False), dtype=np.float64)
        except Exception as exc:  # evaluator-side problem
            return ScoreDetail(NAME, 0.0, weight, False, {"error": str(exc)}, "reference unreadable")
        try:
            pred = np.asarray(np.load(Path(pred_dir) / pred_name, allow_pickle=False), dtype=np.float64)
        except Exception as exc:  # agent-side problem -> plain zero
            return ScoreDetail(
                NAME, 0.0, weight, False, {"error": str(exc), "pred_file": pred_name}, f"{pred_name}: unreadable"
            )
        if pred.shape != ref.shape:
            return ScoreDetail(
                NAME,
                0.0,
                weight,
                False,
                {
                    "error": "shape mismatch",
                    "pred_shape": list(pred.shape),
                    "ref_shape": list(ref.shape),
                    "pred_file": pred_name,
                },
                f"{pred_name}: shape {pred.shape} != {ref.shape}",
            )
        if not np.all(np.isfinite(pred)):
            return ScoreDetail(
                NAME,
                0.0,
                weight,
                False,
                {"error": "non-finite values", "pred_file": pred_name},
                f"{pred_name}: non-finite values",
            )
        err = _error(pred, ref, metric)
        if err <= full:
            frac = 1.0
        elif err >= zero or not math.isfinite(err):
            frac = 0.0
        else:
            frac = (math.log10(zero) - math.log10(err)) / (math.log10(zero) - math.log10(full))
        details = {"pred_file": pred_name, "metric": metric, "error": err, "full": full, "zero": zero, "fraction": frac}
        return ScoreDetail(
            NAME,
            weight * frac,
            weight,
            frac > 0.0,
            details,
            f"{pred_name}: {metric}={err:.3e} -> {frac:.3f} (log band {full:g}..{zero:g})",
        )
