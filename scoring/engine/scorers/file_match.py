"""``file_match``: existence, shape, dtype, NaN and range checks (contract §2.7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..arrays import ArrayLoadError, load_npy
from ..registry import Scorer, register_scorer
from ..types import ScoreDetail
from .common import checks_score, weight_of


def parse_shape(shape: Any) -> tuple[Any, ...]:
    if isinstance(shape, (list, tuple)):
        return tuple(shape)
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        return (int(shape),)
    if isinstance(shape, str):
        parts = [p.strip() for p in shape.strip().strip("{}").split(",") if p.strip()]
        return tuple(int(p) for p in parts)
    raise ValueError(f"Unsupported shape specification: {shape!r}")


@register_scorer("file_match")
class FileMatchScorer(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any]) -> ScoreDetail:
        weight = weight_of(config)
        mode = config.get("scoring_mode", "all_or_nothing")
        checks = config.get("checks") or []
        results = [self._run_check(Path(pred_dir), check) for check in checks]
        n_passed = sum(1 for r in results if r["passed"])
        score = checks_score(mode, n_passed, len(results), weight)
        failed = [r["message"] for r in results if not r["passed"]]
        return ScoreDetail(
            "file_match",
            score,
            weight,
            n_passed == len(results),
            {"checks": results, "scoring_mode": mode},
            "; ".join(failed),
        )

    def _run_check(self, pred_dir: Path, check: Any) -> dict[str, Any]:
        if isinstance(check, dict) and "check" in check:
            return self._property_check(pred_dir, check)
        if isinstance(check, dict) and "file" in check:
            return self._file_check(pred_dir, check)
        return {"passed": False, "message": f"Unknown check: {check!r}"}

    def _file_check(self, pred_dir: Path, check: dict[str, Any]) -> dict[str, Any]:
        name = str(check["file"])
        result: dict[str, Any] = {"file": name, "passed": False, "message": ""}
        path = pred_dir / name
        if not path.is_file():
            result["message"] = f"Missing file: {name}"
            return result
        wants_shape, wants_dtype = "shape" in check, "dtype" in check
        if not name.endswith(".npy") or not (wants_shape or wants_dtype):
            result.update(passed=True, message=f"{name} exists")
            return result
        try:
            arr = load_npy(path)
        except ArrayLoadError as exc:
            result["message"] = str(exc)
            return result
        result["actual_shape"] = list(arr.shape)
        result["actual_dtype"] = str(arr.dtype)
        if wants_shape:
            expected = parse_shape(check["shape"])
            result["expected_shape"] = list(expected)
            if arr.shape != expected:
                result["message"] = f"{name}: shape {arr.shape} != expected {expected}"
                return result
        if wants_dtype:
            result["expected_dtype"] = str(check["dtype"])
            if arr.dtype != np.dtype(check["dtype"]):
                result["message"] = f"{name}: dtype {arr.dtype} != expected {check['dtype']}"
                return result
        result.update(passed=True, message=f"{name} matches")
        return result

    def _property_check(self, pred_dir: Path, check: dict[str, Any]) -> dict[str, Any]:
        kind = check["check"]
        if kind == "no_nan_inf":
            return self._no_nan_inf(pred_dir)
        if kind == "value_range":
            return self._value_range(pred_dir, check)
        return {"check": kind, "passed": False, "message": f"Unknown check type: {kind}"}

    def _no_nan_inf(self, pred_dir: Path) -> dict[str, Any]:
        # Only top-level *.npy files, as upstream does (contract open question 6).
        bad = []
        for path in sorted(pred_dir.glob("*.npy")):
            if not path.is_file():
                continue
            try:
                arr = load_npy(path)
                finite = np.isfinite(arr).all()
            except (ArrayLoadError, TypeError):
                continue
            if not finite:
                bad.append(path.name)
        if bad:
            return {"check": "no_nan_inf", "passed": False, "message": f"NaN/Inf values in {', '.join(bad)}"}
        return {"check": "no_nan_inf", "passed": True, "message": "no NaN/Inf in top-level .npy files"}

    def _value_range(self, pred_dir: Path, check: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = {"check": "value_range", "passed": False, "message": ""}
        if "file" not in check:
            result["message"] = "value_range check needs a 'file'"
            return result
        name = str(check["file"])
        result["file"] = name
        path = pred_dir / name
        if not path.is_file():
            result["message"] = f"Missing file: {name}"
            return result
        # Deliberate deviation: upstream lets a corrupt prediction crash the scorer (→ "not
        # scored"); an agent must not be able to turn a zero into an invalid evaluation.
        try:
            arr = load_npy(path)
            low, high = float(np.min(arr)), float(np.max(arr))
        except (ArrayLoadError, TypeError, ValueError) as exc:
            result["message"] = f"{name}: unreadable for value_range: {exc}"
            return result
        result.update(actual_min=low, actual_max=high)
        if "min" in check and not low >= float(check["min"]):
            result["message"] = f"{name}: min {low} < {check['min']}"
            return result
        if "max" in check and not high <= float(check["max"]):
            result["message"] = f"{name}: max {high} > {check['max']}"
            return result
        result.update(passed=True, message=f"{name} within range")
        return result
