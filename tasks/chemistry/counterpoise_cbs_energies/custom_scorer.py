"""Custom scorer for chemistry.counterpoise_cbs_energies.

Quantum chemists judge interaction energies by absolute errors in kcal/mol
(e.g. "within 0.01 kcal/mol of the benchmark"), not by relative errors, which
blow up for weakly bound or HF-repulsive dimers whose components are close to
zero.  This scorer takes the mean absolute error (kcal/mol) of a prediction
array, optionally restricted to one column, and maps it linearly onto the
weight: MAE <= full_kcal -> full weight, MAE >= zero_kcal -> 0.

Config keys: pred_file, ref_file, column (optional int, last axis),
full_kcal (default 0.001), zero_kcal (default 0.05).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.types import ScoreDetail

NAME = "counterpoise_cbs_mae_band"


@register_scorer(NAME)
class CounterpoiseCbsMaeBand(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        weight = float(config.get("weight", 1.0))
        pred_name = str(config.get("pred_file", ""))
        ref_name = str(config.get("ref_file", ""))
        column = config.get("column")
        full = float(config.get("full_kcal", 0.001))
        zero = float(config.get("zero_kcal", 0.05))
        label = pred_name if column is None else f"{pred_name}[:, {int(column)}]"
        try:
            ref = np.asarray(np.load(Path(ref_dir) / ref_name, allow_pickle=False), dtype=np.float64)
        except Exception as exc:  # evaluator-side problem
            return ScoreDetail(NAME, 0.0, weight, False, {"error": str(exc)}, "reference unreadable")
        try:
            pred = np.asarray(np.load(Path(pred_dir) / pred_name, allow_pickle=False), dtype=np.float64)
        except Exception as exc:  # agent-side problem -> plain zero
            return ScoreDetail(
                NAME, 0.0, weight, False, {"error": str(exc), "pred_file": pred_name}, f"{label}: unreadable"
            )
        if pred.shape != ref.shape:
            return ScoreDetail(
                NAME,
                0.0,
                weight,
                False,
                {"error": "shape mismatch", "pred_shape": list(pred.shape), "ref_shape": list(ref.shape)},
                f"{label}: shape {pred.shape} != {ref.shape}",
            )
        if column is not None:
            pred = pred[..., int(column)]
            ref = ref[..., int(column)]
        if not np.all(np.isfinite(pred)):
            return ScoreDetail(NAME, 0.0, weight, False, {"error": "non-finite values"}, f"{label}: non-finite")
        abs_err = np.abs(pred - ref)
        mae = float(np.mean(abs_err))
        if mae <= full:
            frac = 1.0
        elif mae >= zero:
            frac = 0.0
        else:
            frac = 1.0 - (mae - full) / (zero - full)
        details = {
            "pred_file": pred_name,
            "column": column,
            "mae_kcal_per_mol": mae,
            "max_abs_error_kcal_per_mol": float(np.max(abs_err)),
            "full_kcal": full,
            "zero_kcal": zero,
            "fraction": frac,
        }
        return ScoreDetail(
            NAME,
            weight * frac,
            weight,
            frac > 0.0,
            details,
            f"{label}: MAE={mae:.2e} kcal/mol -> {frac:.3f} (band {full:g}..{zero:g})",
        )
