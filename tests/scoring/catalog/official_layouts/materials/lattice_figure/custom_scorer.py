"""Fixture custom scorer written against the official engine's API: compares a figure with Pillow."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.types import ScoreDetail
from PIL import Image, UnidentifiedImageError


def _grey(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("L"), dtype=np.float64)


@register_scorer("lattice_figure_match")
class LatticeFigureMatch(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        weight = float(config.get("weight", 1.0))
        ref = _grey(ref_dir / config["ref_image"])
        try:
            got = _grey(pred_dir / config["pred_image"])
        except (OSError, UnidentifiedImageError) as exc:
            return ScoreDetail("lattice_figure_match", 0.0, weight, False, {"error": str(exc)}, "not an image")
        if got.shape != ref.shape:
            return ScoreDetail("lattice_figure_match", 0.0, weight, False, {"shape": list(got.shape)},
                               f"image is {got.shape[1]}x{got.shape[0]}, expected {ref.shape[1]}x{ref.shape[0]}")
        error = float(np.mean(np.abs(got - ref)))
        fraction = max(0.0, 1.0 - error / float(config.get("max_mean_abs_error", 64)))
        return ScoreDetail("lattice_figure_match", weight * fraction, weight, fraction > 0,
                           {"mean_abs_error": error}, f"mean absolute grey error {error:.2f}")
