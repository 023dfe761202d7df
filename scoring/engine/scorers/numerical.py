"""``numerical``: array metrics against a reference with banded scoring (contract §2.8)."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..arrays import load_npy, read_csv_column
from ..registry import Scorer, register_scorer
from ..types import ScoreDetail
from .common import weight_of

Metric = Callable[[Path, Path, dict[str, Any], float], ScoreDetail]


def band_fraction(error: float, config: dict[str, Any]) -> tuple[float, bool, dict[str, Any]]:
    """The shared error → fraction helper: non-finite, linear, threshold, proportional."""
    if not math.isfinite(error):
        return 0.0, False, {"scoring_mode": "non_finite_error", "raw_fraction": 0.0}
    if config.get("scoring") == "linear_interpolation":
        full = float(config.get("full_score_threshold", 0.0))
        zero = float(config.get("zero_score_threshold", 1.0))
        if error <= full:
            fraction = 1.0
        elif error >= zero:
            fraction = 0.0
        else:
            fraction = 1.0 - (error - full) / (zero - full)
        info = {"scoring_mode": "linear_interpolation", "full_score_threshold": full, "zero_score_threshold": zero}
        return fraction, True, {**info, "raw_fraction": fraction}
    if "threshold" in config:
        threshold = float(config["threshold"])
        ok = error <= threshold
        fraction = 1.0 if ok else 0.0
        return fraction, ok, {"scoring_mode": "threshold", "threshold": threshold, "raw_fraction": fraction}
    fraction = max(0.0, 1.0 - error)
    return fraction, True, {"scoring_mode": "proportional", "raw_fraction": fraction}


def _band_message(metric: str, error: float, score: float, info: dict[str, Any]) -> str:
    text = f"{metric}={error:.6f}; score={score:.4f}"
    mode = info["scoring_mode"]
    if mode == "linear_interpolation":
        full, zero = info["full_score_threshold"], info["zero_score_threshold"]
        return f"{text}; linear interpolation with full<={full}, zero>={zero}"
    if mode == "threshold":
        return f"{text}; threshold<={info['threshold']}"
    return f"{text}; {mode.replace('_', ' ')}"


def _relative_norm(pred: np.ndarray, ref: np.ndarray) -> float:
    ref_norm = float(np.linalg.norm(ref))
    if ref_norm == 0:
        return float(np.linalg.norm(pred))
    return float(np.linalg.norm(pred - ref)) / ref_norm


@register_scorer("numerical")
class NumericalScorer(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any]) -> ScoreDetail:
        metric = str(config.get("metric", "relative_l2"))
        name = f"numerical:{metric}"
        weight = weight_of(config)
        method: Metric | None = getattr(self, f"_metric_{metric}", None)
        if method is None:
            return ScoreDetail(
                name, 0.0, weight, False, {"error": f"Unknown metric: {metric}"}, f"Unknown metric: {metric}"
            )
        try:
            with np.errstate(all="ignore"):
                return method(Path(pred_dir), Path(ref_dir), config, weight)
        except Exception as exc:  # any data problem is the prediction's zero, not a crash (§2.8)
            return ScoreDetail(name, 0.0, weight, False, {"error": str(exc)}, f"Scoring error: {exc}")

    # -- loading ---------------------------------------------------------------------

    def _load_pair(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        pred_name = config.get("pred_file", config.get("file"))
        ref_name = config.get("ref_file", config.get("file"))
        if not pred_name or not ref_name:
            raise ValueError("numerical needs pred_file and ref_file (or file)")
        pred_path, ref_path = pred_dir / str(pred_name), ref_dir / str(ref_name)
        if str(pred_name).endswith(".csv") or str(ref_name).endswith(".csv"):
            column = config.get("column")
            if column is None:
                raise ValueError("CSV comparison requires 'column'")
            pred, ref = read_csv_column(pred_path, str(column)), read_csv_column(ref_path, str(column))
        else:
            pred, ref = load_npy(pred_path), load_npy(ref_path)
            if config.get("row") is not None:
                row = int(config["row"])
                pred, ref = pred[row : row + 1], ref[row : row + 1]
        if pred.shape != ref.shape:
            raise ValueError(f"Shape mismatch: pred {pred.shape} vs ref {ref.shape}")
        return pred.astype(np.float64), ref.astype(np.float64)

    def _banded(
        self, metric: str, error: float, weight: float, config: dict[str, Any], extra: dict[str, Any]
    ) -> ScoreDetail:
        fraction, passed, info = band_fraction(error, config)
        score = fraction * weight
        details = {metric: error, **extra, **info}
        return ScoreDetail(
            f"numerical:{metric}", score, weight, passed, details, _band_message(metric, error, score, info)
        )

    # -- metrics ---------------------------------------------------------------------

    def _metric_relative_l2(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any], weight: float) -> ScoreDetail:
        pred, ref = self._load_pair(pred_dir, ref_dir, config)
        pred, ref = pred.ravel(), ref.ravel()
        if config.get("nan_policy") == "omit":
            keep = np.isfinite(pred) & np.isfinite(ref)
            pred, ref = pred[keep], ref[keep]
        error = _relative_norm(pred, ref)
        pred_file = config.get("pred_file", config.get("file"))
        return self._banded("relative_l2", error, weight, config, {"pred_file": pred_file})

    def _metric_mean_relative_l2(
        self, pred_dir: Path, ref_dir: Path, config: dict[str, Any], weight: float
    ) -> ScoreDetail:
        pred, ref = self._load_pair(pred_dir, ref_dir, config)
        if pred.ndim == 0:
            raise ValueError("mean_relative_l2 needs at least a 1-D array")
        per_frame = [_relative_norm(pred[i], ref[i]) for i in range(pred.shape[0])]
        if not per_frame:
            raise ValueError("mean_relative_l2 of an empty array")
        error = float(np.mean(per_frame))
        return self._banded("mean_relative_l2", error, weight, config, {"per_frame_errors": per_frame})

    def _metric_per_frame_relative_l2(
        self, pred_dir: Path, ref_dir: Path, config: dict[str, Any], weight: float
    ) -> ScoreDetail:
        pred, ref = self._load_pair(pred_dir, ref_dir, config)
        n_items = int(config["items"]) if "items" in config else int(pred.shape[0])
        if n_items <= 0:
            raise ValueError("per_frame_relative_l2 needs at least one frame")
        threshold = float(config.get("threshold", 0.30))
        per_item = float(config.get("per_item_score", weight / n_items))
        alignment = config.get("alignment") or {}
        max_shift = int(alignment.get("max_shift", 0)) if alignment.get("enabled") else 0
        details: dict[str, Any] = {}
        total, n_hit = 0.0, 0
        for i in range(n_items):
            frame_pred, frame_ref = pred[i], ref[i]
            best, shift = _relative_norm(frame_pred, frame_ref), [0, 0]
            if max_shift > 0:
                for dx in range(-max_shift, max_shift + 1):
                    for dy in range(-max_shift, max_shift + 1):
                        err = _relative_norm(np.roll(frame_pred, (dx, dy), axis=(0, 1)), frame_ref)
                        if err < best:
                            best, shift = err, [dx, dy]
            points = per_item if best <= threshold else 0.0
            n_hit += points > 0
            total += points
            details[f"frame_{i}"] = {"rel_err": round(best, 6), "shift": shift, "pts": points}
        details.update(threshold=threshold, per_item_score=per_item, n_frames=n_items)
        return ScoreDetail(
            "numerical:per_frame_relative_l2",
            total,
            weight,
            True,
            details,
            f"per_frame_relative_l2: {n_hit}/{n_items} frames within {threshold}; score={total:.4f}",
        )

    def _metric_rmse(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any], weight: float) -> ScoreDetail:
        pred, ref = self._load_pair(pred_dir, ref_dir, config)
        error = float(np.sqrt(np.mean((pred - ref) ** 2)))
        return self._banded("rmse", error, weight, config, {})

    def _metric_mape(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any], weight: float) -> ScoreDetail:
        pred, ref = self._load_pair(pred_dir, ref_dir, config)
        nonzero = ref != 0
        error = float(np.mean(np.abs(pred[nonzero] - ref[nonzero]) / np.abs(ref[nonzero]))) if nonzero.any() else 0.0
        return self._banded("mape", error, weight, config, {})

    def _metric_relative_error(
        self, pred_dir: Path, ref_dir: Path, config: dict[str, Any], weight: float
    ) -> ScoreDetail:
        pred, ref = self._load_pair(pred_dir, ref_dir, config)
        denom = np.abs(ref)
        error = float(np.max(np.abs(pred - ref) / np.where(denom == 0, 1.0, denom)))
        if "scoring" in config or "threshold" in config:
            detail = self._banded("relative_error", error, weight, config, {})
            detail.details["max_relative_error"] = detail.details.pop("relative_error")
            return detail
        tolerance = float(config.get("tolerance", 1e-4))
        passed = error <= tolerance
        score = weight if passed else 0.0
        details = {
            "max_relative_error": error,
            "scoring_mode": "threshold",
            "threshold": tolerance,
            "raw_fraction": 1.0 if passed else 0.0,
        }
        return ScoreDetail(
            "numerical:relative_error",
            score,
            weight,
            passed,
            details,
            f"relative_error={error:.6f}; score={score:.4f}; tolerance<={tolerance}",
        )

    def _metric_absolute_error(
        self, pred_dir: Path, ref_dir: Path, config: dict[str, Any], weight: float
    ) -> ScoreDetail:
        pred, ref = self._load_pair(pred_dir, ref_dir, config)
        error = float(np.max(np.abs(pred - ref)))
        tolerance = float(config.get("tolerance", 1e-6))
        passed = error <= tolerance
        return ScoreDetail(
            "numerical:absolute_error",
            weight if passed else 0.0,
            weight,
            passed,
            {"max_absolute_error": error, "tolerance": tolerance},
        )

    def _metric_exact_match(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any], weight: float) -> ScoreDetail:
        pred, ref = self._load_pair(pred_dir, ref_dir, config)
        match = bool(np.array_equal(pred, ref))
        return ScoreDetail("numerical:exact_match", weight if match else 0.0, weight, match, {"match": match})

    def _metric_cosine_similarity(
        self, pred_dir: Path, ref_dir: Path, config: dict[str, Any], weight: float
    ) -> ScoreDetail:
        pred, ref = self._load_pair(pred_dir, ref_dir, config)
        p, r = pred.ravel(), ref.ravel()
        norms = float(np.linalg.norm(p)) * float(np.linalg.norm(r))
        similarity = float(np.dot(p, r)) / norms if norms != 0 else 0.0
        threshold = float(config.get("threshold", 0.99))
        passed = similarity >= threshold
        return ScoreDetail(
            "numerical:cosine_similarity",
            weight if passed else 0.0,
            weight,
            passed,
            {"cosine_similarity": similarity, "threshold": threshold},
        )

    def _metric_correlation(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any], weight: float) -> ScoreDetail:
        pred, ref = self._load_pair(pred_dir, ref_dir, config)
        r = float(np.corrcoef(pred.ravel(), ref.ravel())[0, 1])
        if config.get("scoring") == "linear_interpolation":
            full = float(config.get("full_score_threshold", 0.95))
            zero = float(config.get("zero_score_threshold", 0.50))
            if not math.isfinite(r):
                fraction = 0.0
            elif r >= full:
                fraction = 1.0
            elif r <= zero:
                fraction = 0.0
            else:
                fraction = (r - zero) / (full - zero)
            score = fraction * weight
            details = {
                "correlation": r,
                "scoring_mode": "linear_interpolation",
                "full_score_threshold": full,
                "zero_score_threshold": zero,
                "raw_fraction": fraction,
            }
            return ScoreDetail(
                "numerical:correlation",
                score,
                weight,
                True,
                details,
                f"correlation={r:.6f}; score={score:.4f}; linear interpolation with full>={full}, zero<={zero}",
            )
        threshold = float(config.get("threshold", 0.95))
        passed = r >= threshold
        return ScoreDetail(
            "numerical:correlation",
            weight if passed else 0.0,
            weight,
            passed,
            {"correlation": r, "threshold": threshold, "scoring_mode": "threshold"},
        )

    def _metric_max_ratio(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any], weight: float) -> ScoreDetail:
        name = config.get("file", config.get("pred_file"))
        if not name:
            raise ValueError("max_ratio needs 'file'")
        values = load_npy(pred_dir / str(name)).astype(np.float64)
        if values.ndim != 1:
            raise ValueError(f"max_ratio needs a 1-D array, got shape {values.shape}")
        first = float(values[0])
        if first == 0:
            ratio = math.inf if np.any(values != 0) else 1.0
        else:
            ratio = float(np.max(np.abs(values))) / abs(first)
        threshold = float(config.get("threshold", 2.0))
        passed = ratio <= threshold
        return ScoreDetail(
            "numerical:max_ratio",
            weight if passed else 0.0,
            weight,
            passed,
            {"ke_ratio": round(ratio, 4) if math.isfinite(ratio) else ratio, "threshold": threshold},
            f"max_ratio={ratio:.4f}; threshold<={threshold}",
        )
