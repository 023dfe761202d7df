from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.types import ScoreDetail


@register_scorer("rate_table_score")
class RateTable(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        weight = float(config.get("weight", 1.0))
        ref = pd.read_csv(ref_dir / config["ref_file"])
        try:
            got = pd.read_csv(pred_dir / config["pred_file"])
            err = float(np.mean(np.abs(np.log(got["k"].to_numpy()) - np.log(ref["k"].to_numpy()))))
        except Exception as exc:
            return ScoreDetail("rate_table_score", 0.0, weight, False, {"error": str(exc)}, "prediction unreadable")
        fraction = max(0.0, 1.0 - err)
        return ScoreDetail("rate_table_score", weight * fraction, weight, True, {"mean_log_error": err}, "")
