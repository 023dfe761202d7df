"""Noise-scaled agreement scorer for medicine.two_compartment_pk_fit.

Each reported quantity q (parameter, half-life, AUC, predicted concentration) is
compared with the reference best fit r on the log scale, in units of the
reference's asymptotic standard error of log q (delta method at the optimum,
stored as ``<name>_se_ref.npy``):

    e = |ln q - ln r| / max(SE, rel_floor)

Credit is 1 for e <= k_full, 0 for e >= k_zero, linear in between; the entry's
score is the mean credit over all elements.  Well-determined quantities (AUC,
CL) are therefore held to tight tolerances and poorly-determined ones (Q, V2)
to looser ones, and any sound estimator for proportional error (log-scale
least squares, IRLS with 1/f^2 weights, extended least squares) lands well
inside k_full.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.types import ScoreDetail


def _load(path: Path) -> np.ndarray:
    return np.asarray(np.load(path, allow_pickle=False), dtype=np.float64)


@register_scorer("pk2c_log_se_agreement")
class PkLogSeAgreement(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        name = "pk2c_log_se_agreement"
        w = float(config.get("weight", 1.0))
        pred_file = str(config.get("pred_file", ""))
        ref_file = str(config.get("ref_file", pred_file.replace(".npy", "_ref.npy")))
        se_file = str(config.get("se_file", pred_file.replace(".npy", "_se_ref.npy")))
        k_full = float(config.get("k_full", 1.0))
        k_zero = float(config.get("k_zero", 4.0))
        floor = float(config.get("rel_floor", 0.005))
        try:
            ref = _load(Path(ref_dir) / ref_file)
            se = _load(Path(ref_dir) / se_file)
        except Exception as exc:
            return ScoreDetail(name, 0.0, w, False, {"error": str(exc), "pred_file": pred_file},
                               "reference unreadable")
        try:
            pred = _load(Path(pred_dir) / pred_file)
            if pred.shape != ref.shape:
                raise ValueError(f"shape {pred.shape} != expected {ref.shape}")
        except Exception as exc:
            return ScoreDetail(name, 0.0, w, False, {"error": str(exc), "pred_file": pred_file},
                               "prediction unreadable")
        valid = np.isfinite(pred) & (pred > 0.0)
        log_err = np.full(ref.shape, np.inf)
        log_err[valid] = np.abs(np.log(pred[valid]) - np.log(ref[valid]))
        e = log_err / np.maximum(se, floor)
        credit = np.clip((k_zero - e) / (k_zero - k_full), 0.0, 1.0)
        credit[~np.isfinite(e)] = 0.0
        frac = float(credit.mean())
        finite_e = e[np.isfinite(e)]
        details = {
            "pred_file": pred_file, "k_full": k_full, "k_zero": k_zero, "rel_floor": floor,
            "mean_credit": frac, "n_invalid": int((~valid).sum()),
            "max_scaled_error": float(finite_e.max()) if finite_e.size else None,
            "median_scaled_error": float(np.median(finite_e)) if finite_e.size else None,
        }
        return ScoreDetail(name, w * frac, w, frac > 0.0, details,
                           f"{pred_file}: mean credit {frac:.3f}")
