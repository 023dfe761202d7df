"""Custom scorers for math.homotopy_poly_roots: root sets compared up to permutation.

Predicted and reference roots are paired by a minimum-cost assignment (Hungarian method)
on the scaled distance  e = max_k |z_pred,k - z_ref,k| / max(1, max_k |z_ref,k|).
A matched root earns a log-linear credit: 1 for e <= full, 0 for e >= zero, and
(log zero - log e) / (log zero - log full) in between; the full threshold is looser for
roots of multiplicity > 1, whose attainable accuracy is limited by their conditioning.
Credits are divided by max(n_ref, n_pred), so missing roots and spurious extra roots
(duplicates, diverging endpoints reported as finite) both cost points.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.types import ScoreDetail
from scipy.optimize import linear_sum_assignment

ROOTS_NAME = "homotopy_root_set_match"
MULT_NAME = "homotopy_root_multiplicity_match"


def _load_roots(path: Path) -> np.ndarray:
    arr = np.load(path, allow_pickle=False)
    if arr.ndim != 2 or arr.shape[1] != 2 or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"roots must be a numeric (n, 2) array, got {arr.dtype} {arr.shape}")
    arr = arr.astype(np.complex128)
    if not np.all(np.isfinite(arr)):
        raise ValueError("roots contain NaN or Inf")
    return arr


def _match(pred: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Optimal pairing; returns (pred index, ref index, scaled error) per matched pair."""
    if len(pred) == 0 or len(ref) == 0:
        return np.zeros(0, int), np.zeros(0, int), np.zeros(0)
    scale = np.maximum(1.0, np.abs(ref).max(axis=1))
    cost = np.abs(pred[:, None, :] - ref[None, :, :]).max(axis=2) / scale[None, :]
    rows, cols = linear_sum_assignment(np.minimum(cost, 1e6))
    return rows, cols, cost[rows, cols]


def _log_band(err: float, full: float, zero: float) -> float:
    if err <= full:
        return 1.0
    if err >= zero:
        return 0.0
    return (math.log10(zero) - math.log10(err)) / (math.log10(zero) - math.log10(full))


@register_scorer(ROOTS_NAME)
class HomotopyRootSetMatch(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any]) -> ScoreDetail:
        weight = float(config.get("weight", 1.0))
        try:
            ref = _load_roots(Path(ref_dir) / config.get("ref_file", "roots_ref.npy"))
            ref_mult = np.load(Path(ref_dir) / config.get("ref_multiplicity_file", "multiplicities_ref.npy"))
        except Exception as exc:  # evaluator-side problem
            return ScoreDetail(ROOTS_NAME, 0.0, weight, False, {"error": str(exc)}, "reference unreadable")
        try:
            pred = _load_roots(Path(pred_dir) / config.get("pred_file", "roots.npy"))
        except Exception as exc:  # agent-side problem -> plain zero
            return ScoreDetail(ROOTS_NAME, 0.0, weight, False, {"error": str(exc)}, "prediction unreadable")
        zero = float(config.get("zero_error", 1e-3))
        full_simple = float(config.get("full_error_simple", 1e-8))
        full_multiple = float(config.get("full_error_multiple", 1e-6))
        rows, cols, errs = _match(pred, ref)
        credits = [_log_band(float(e), full_multiple if ref_mult[c] > 1 else full_simple, zero)
                   for c, e in zip(cols, errs, strict=True)]
        denom = max(len(ref), len(pred), 1)
        frac = float(sum(credits)) / denom
        details = {"n_ref": int(len(ref)), "n_pred": int(len(pred)),
                   "matched_errors": [float(f"{e:.3e}") for e in errs],
                   "credits": [round(c, 6) for c in credits]}
        return ScoreDetail(ROOTS_NAME, weight * frac, weight, frac >= 0.9, details,
                           f"root-set credit {frac:.4f} ({len(pred)} predicted, {len(ref)} reference)")


@register_scorer(MULT_NAME)
class HomotopyRootMultiplicityMatch(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any]) -> ScoreDetail:
        weight = float(config.get("weight", 1.0))
        try:
            ref = _load_roots(Path(ref_dir) / config.get("ref_roots_file", "roots_ref.npy"))
            ref_mult = np.load(Path(ref_dir) / config.get("ref_file", "multiplicities_ref.npy"))
        except Exception as exc:  # evaluator-side problem
            return ScoreDetail(MULT_NAME, 0.0, weight, False, {"error": str(exc)}, "reference unreadable")
        try:
            pred = _load_roots(Path(pred_dir) / config.get("pred_roots_file", "roots.npy"))
            mult = np.load(Path(pred_dir) / config.get("pred_file", "multiplicities.npy"), allow_pickle=False)
            mult = np.asarray(mult).reshape(-1)
            if mult.shape != (len(pred),):
                raise ValueError(f"need one multiplicity per root ({len(pred)}), got {mult.shape}")
        except Exception as exc:  # agent-side problem -> plain zero
            return ScoreDetail(MULT_NAME, 0.0, weight, False, {"error": str(exc)}, "prediction unreadable")
        zero = float(config.get("match_error", 1e-3))
        rows, cols, errs = _match(pred, ref)
        hits = sum(1 for r, c, e in zip(rows, cols, errs, strict=True)
                   if e < zero and float(mult[r]) == float(ref_mult[c]))
        frac = hits / max(len(ref), len(pred), 1)
        return ScoreDetail(MULT_NAME, weight * frac, weight, frac >= 0.9,
                           {"correct": int(hits), "n_ref": int(len(ref)), "n_pred": int(len(pred))},
                           f"{hits} multiplicities correct of max({len(ref)}, {len(pred)})")
