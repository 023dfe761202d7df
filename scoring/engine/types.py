"""ScoreDetail, the value every scorer returns (contract §2.4)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

import numpy as np


@dataclass
class ScoreDetail:
    scorer_name: str
    score: float
    max_score: float
    passed: bool
    details: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    severity: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "scorer_name": str(self.scorer_name),
            "score": float(self.score),
            "max_score": float(self.max_score),
            "passed": bool(self.passed),
            "details": jsonable(self.details or {}),
            "message": str(self.message or ""),
            "severity": self.severity,
        }

    @property
    def internal_error(self) -> bool:
        return bool(isinstance(self.details, dict) and self.details.get("scorer_internal_error"))


def jsonable(value: Any) -> Any:
    """Strict-JSON copy: numpy → Python, paths → str, NaN/±Inf → None (Postgres JSON rejects them)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)
