"""Custom scorer for astronomy.nbody_close_encounters: timing of the closest approaches.

The time of a pair's global minimum is ill-posed when the pair has several nearly equally
deep minima (e.g. successive pericentres of a bound pair). The reference therefore stores
every local minimum of every pair (plus the two endpoints). A predicted time earns credit
against each reference candidate as

    timing(|t_pred - t_c| / tau_c)  x  depth((r_c - r_min) / r_min)

where tau_c = r_c / v_rel,c is that encounter's own duration and both factors are linear
bands (1 at or below the full threshold, 0 at or above the zero threshold). The pair
score is the best candidate; the scorer returns weight x mean over pairs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.types import ScoreDetail

NAME = "nbody_close_encounter_timing"


def _band(err: float, full: float, zero: float) -> float:
    if not np.isfinite(err):
        return 0.0
    if err <= full:
        return 1.0
    if err >= zero:
        return 0.0
    return 1.0 - (err - full) / (zero - full)


@register_scorer(NAME)
class NBodyCloseEncounterTiming(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any]) -> ScoreDetail:
        weight = float(config.get("weight", 1.0))
        try:
            ref = json.loads((Path(ref_dir) / config.get("minima_file", "pair_minima_ref.json"))
                             .read_text(encoding="utf-8"))
            pairs = ref["pairs"]
        except Exception as exc:  # evaluator-side problem
            return ScoreDetail(NAME, 0.0, weight, False, {"error": str(exc)}, "reference unreadable")
        try:
            pred = np.load(Path(pred_dir) / config.get("pred_file", "min_time.npy"), allow_pickle=False)
            pred = np.asarray(pred, dtype=np.float64).reshape(-1)
            if pred.size != len(pairs):
                raise ValueError(f"expected {len(pairs)} times, got {pred.size}")
        except Exception as exc:  # agent-side problem -> plain zero
            return ScoreDetail(NAME, 0.0, weight, False, {"error": str(exc)}, "prediction unreadable")

        t_full = float(config.get("full_fraction_of_encounter_time", 0.02))
        t_zero = float(config.get("zero_fraction_of_encounter_time", 1.0))
        d_full = float(config.get("depth_full_rtol", 1e-4))
        d_zero = float(config.get("depth_zero_rtol", 1e-2))
        per_pair = []
        for t_pred, entry in zip(pred, pairs, strict=True):
            cands = entry["candidates"]
            r_min = min(c["r"] for c in cands)
            best = 0.0
            for c in cands:
                tau = c["r"] / max(c["v_rel"], 1e-300)
                timing = _band(abs(float(t_pred) - c["t"]) / tau, t_full, t_zero)
                depth = _band((c["r"] - r_min) / r_min, d_full, d_zero)
                best = max(best, timing * depth)
            per_pair.append(round(best, 6))
        frac = float(np.mean(per_pair)) if per_pair else 0.0
        return ScoreDetail(NAME, weight * frac, weight, frac >= 0.5,
                           {"per_pair": per_pair, "n_pairs": len(per_pair)},
                           f"mean timing credit {frac:.4f} over {len(per_pair)} pairs")
