"""Fixture custom scorers written against the official engine's API: a gate and a score that share
one config (the task_eval.yaml anchors it once and aliases it)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.types import ScoreDetail


def _tour(pred_dir: Path, config: dict, n: int) -> list[int] | None:
    try:
        order = [int(line) for line in (pred_dir / config["pred_file"]).read_text().split()]
    except (OSError, ValueError):
        return None
    return order if sorted(order) == list(range(n)) else None


def _cities(ref_dir: Path, config: dict) -> np.ndarray:
    return np.loadtxt(ref_dir / config["cities_file"], delimiter=",", skiprows=1)


def _length(cities: np.ndarray, order: list[int]) -> float:
    path = cities[order + order[:1]]
    return float(np.sum(np.linalg.norm(np.diff(path, axis=0), axis=1)))


@register_scorer("shared_tour_valid")
class SharedTourValid(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        weight = float(config.get("weight", 1.0))
        order = _tour(pred_dir, config, len(_cities(ref_dir, config)))
        if order is None:
            return ScoreDetail("shared_tour_valid", 0.0, weight, False, {}, "not a permutation of the cities")
        return ScoreDetail("shared_tour_valid", weight, weight, True, {"cities": len(order)}, "valid tour")


@register_scorer("shared_tour_length")
class SharedTourLength(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        weight = float(config.get("weight", 1.0))
        cities = _cities(ref_dir, config)
        order = _tour(pred_dir, config, len(cities))
        if order is None:
            return ScoreDetail("shared_tour_length", 0.0, weight, False, {}, "not a permutation of the cities")
        best = float(json.loads((ref_dir / config["best_length_file"]).read_text())["length"])
        excess = _length(cities, order) / best - 1.0
        fraction = min(1.0, max(0.0, 1.0 - excess / float(config.get("slack", 0.25))))
        return ScoreDetail("shared_tour_length", weight * fraction, weight, fraction > 0,
                           {"excess": excess}, f"{excess:.1%} longer than the best known tour")
