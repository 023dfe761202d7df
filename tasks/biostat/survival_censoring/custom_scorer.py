"""Element-wise agreement scorer for biostat.survival_censoring.

All reference quantities are closed-form (Kaplan-Meier, Greenwood, log-rank,
KM median) or solved to 1e-12 (Cox/Breslow), so a correct answer agrees to
rounding error.  Each selected element earns credit from its relative error
e = |p - r| / max(|r|, abs_floor): 1 for e <= rel_full, 0 for e >= rel_zero,
log-linear in between (e = 1e-4 earns 2/3 with the default 1e-5 / 1e-2 band).
A different convention (Efron ties, the (O-E)^2/E log-rank approximation,
censored-before-event ordering at tied times, interpolated medians) moves
the numbers by 1e-3 or more and so loses most of the credit.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.types import ScoreDetail


@register_scorer("survival_km_relative_agreement")
class SurvivalRelativeAgreement(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        name = "survival_km_relative_agreement"
        w = float(config.get("weight", 1.0))
        pred_file = str(config.get("pred_file", ""))
        ref_file = str(config.get("ref_file", pred_file.replace(".npy", "_ref.npy")))
        full = float(config.get("rel_full", 1e-5))
        zero = float(config.get("rel_zero", 1e-2))
        floor = float(config.get("abs_floor", 1e-12))
        index = config.get("index")
        try:
            ref = np.asarray(np.load(Path(ref_dir) / ref_file, allow_pickle=False), dtype=np.float64)
        except Exception as exc:
            return ScoreDetail(name, 0.0, w, False, {"error": str(exc), "pred_file": pred_file},
                               "reference unreadable")
        try:
            pred = np.asarray(np.load(Path(pred_dir) / pred_file, allow_pickle=False), dtype=np.float64)
            if pred.shape != ref.shape:
                raise ValueError(f"shape {pred.shape} != expected {ref.shape}")
        except Exception as exc:
            return ScoreDetail(name, 0.0, w, False, {"error": str(exc), "pred_file": pred_file},
                               "prediction unreadable")
        if index is not None:
            pred = np.atleast_1d(pred.ravel()[int(index)])
            ref = np.atleast_1d(ref.ravel()[int(index)])
        err = np.abs(pred - ref) / np.maximum(np.abs(ref), floor)
        credit = np.where(err <= full, 1.0,
                          np.where(err >= zero, 0.0,
                                   1.0 - np.log(np.maximum(err, full) / full) / math.log(zero / full)))
        credit = np.where(np.isfinite(err), credit, 0.0)
        frac = float(credit.mean())
        finite = err[np.isfinite(err)]
        details = {"pred_file": pred_file, "index": index, "rel_full": full, "rel_zero": zero,
                   "max_rel_error": float(finite.max()) if finite.size else None,
                   "n_elements": int(err.size), "n_full_credit": int((credit >= 1.0).sum())}
        return ScoreDetail(name, w * frac, w, frac > 0.0, details,
                           f"{pred_file}[{'' if index is None else index}]: mean credit {frac:.3f}")
