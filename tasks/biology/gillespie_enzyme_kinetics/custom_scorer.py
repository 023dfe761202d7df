"""Sampling-error-aware scorers for biology.gillespie_enzyme_kinetics.

The reference statistics are exact (chemical master equation), so a correct
Monte-Carlo answer differs from them only by sampling noise.  Each estimator is
judged by its z-score, using the exact per-trajectory standard deviation stored
in ``sampling_ref.json`` and the number of trajectories the task requires
(an agent that runs more trajectories only gets smaller z-scores).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.types import ScoreDetail

# statistic -> (prediction file, reference file, how to pick values, sampling_ref key)
_STATISTICS = {
    "product_mean": ("product_moments.npy", "product_moments_ref.npy", (slice(None), 0), "mean_sd"),
    "product_variance": ("product_moments.npy", "product_moments_ref.npy", (slice(None), 1), "variance_sd"),
    "completion_mean": ("completion_time.npy", "completion_time_ref.npy", (slice(0, 1),), "completion_mean_sd"),
    "completion_sd": ("completion_time.npy", "completion_time_ref.npy", (slice(1, 2),), "completion_sd_sd"),
}


def _band(z: float, full: float, zero: float) -> float:
    if not math.isfinite(z):
        return 0.0
    if z <= full:
        return 1.0
    if z >= zero:
        return 0.0
    return 1.0 - (z - full) / (zero - full)


def _load_npy(path: Path) -> np.ndarray:
    return np.asarray(np.load(path, allow_pickle=False), dtype=np.float64)


@register_scorer("gillespie_mm_zscore")
class GillespieZScore(Scorer):
    """Per-element z-score credit: 1 for |z| <= z_full, 0 for |z| >= z_zero, linear between."""

    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        name = "gillespie_mm_zscore"
        w = float(config.get("weight", 1.0))
        stat = str(config.get("statistic", "product_mean"))
        z_full = float(config.get("z_full", 4.0))
        z_zero = float(config.get("z_zero", 10.0))
        try:
            pred_name, ref_name, sel, sd_key = _STATISTICS[stat]
            ref = _load_npy(Path(ref_dir) / ref_name)[sel].ravel()
            sampling = json.loads((Path(ref_dir) / "sampling_ref.json").read_text(encoding="utf-8"))
            sd = np.atleast_1d(np.asarray(sampling[sd_key], dtype=np.float64))
            n_traj = float(sampling["n_trajectories"])
        except Exception as exc:  # evaluator-side problem
            return ScoreDetail(name, 0.0, w, False, {"error": str(exc), "statistic": stat},
                               "reference unreadable")
        try:
            pred = _load_npy(Path(pred_dir) / pred_name)[sel].ravel()
            if pred.shape != ref.shape:
                raise ValueError(f"shape {pred.shape} != expected {ref.shape}")
        except Exception as exc:  # agent-side problem -> plain zero
            return ScoreDetail(name, 0.0, w, False, {"error": str(exc), "statistic": stat},
                               "prediction unreadable")
        se = sd / math.sqrt(n_traj)
        z = np.abs(pred - ref) / np.maximum(se, 1e-300)
        credits = [_band(float(v), z_full, z_zero) for v in z]
        frac = float(np.mean(credits))
        details = {"statistic": stat, "z_scores": [round(float(v), 4) if math.isfinite(v) else None for v in z],
                   "credits": credits, "z_full": z_full, "z_zero": z_zero, "n_trajectories": n_traj}
        return ScoreDetail(name, w * frac, w, frac > 0.0, details,
                           f"{stat}: max |z| = {float(np.max(z)):.3g}; credit {frac:.3f}")


@register_scorer("gillespie_mm_distribution_ks")
class GillespieDistributionKS(Scorer):
    """Kolmogorov-Smirnov distance of the reported P distribution, scaled by sqrt(N).

    A proper probability vector is required (non-negative, sums to 1 within 1e-6).
    sqrt(N) * D is bounded in law by the Kolmogorov distribution (conservative for
    discrete data), so sqrt(N) * D <= 2.3 has a false-fail probability below 1e-4.
    """

    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        name = "gillespie_mm_distribution_ks"
        w = float(config.get("weight", 1.0))
        k_full = float(config.get("ks_full", 2.3))
        k_zero = float(config.get("ks_zero", 6.0))
        try:
            ref = _load_npy(Path(ref_dir) / config.get("ref_file", "product_distribution_ref.npy"))
            sampling = json.loads((Path(ref_dir) / "sampling_ref.json").read_text(encoding="utf-8"))
            n_traj = float(sampling["n_trajectories"])
        except Exception as exc:
            return ScoreDetail(name, 0.0, w, False, {"error": str(exc)}, "reference unreadable")
        try:
            pred = _load_npy(Path(pred_dir) / config.get("pred_file", "product_distribution.npy"))
            if pred.shape != ref.shape:
                raise ValueError(f"shape {pred.shape} != expected {ref.shape}")
            if not np.all(np.isfinite(pred)) or pred.min() < 0.0 or abs(pred.sum() - 1.0) > 1e-6:
                raise ValueError("not a probability vector (negative entries or sum != 1)")
        except Exception as exc:
            return ScoreDetail(name, 0.0, w, False, {"error": str(exc)}, "prediction rejected")
        d = float(np.max(np.abs(np.cumsum(pred) - np.cumsum(ref))))
        ks = math.sqrt(n_traj) * d
        frac = _band(ks, k_full, k_zero)
        details = {"ks_distance": d, "sqrt_n_ks": ks, "ks_full": k_full, "ks_zero": k_zero,
                   "n_trajectories": n_traj}
        return ScoreDetail(name, w * frac, w, frac > 0.0, details,
                           f"sqrt(N)*D = {ks:.3g}; credit {frac:.3f}")
