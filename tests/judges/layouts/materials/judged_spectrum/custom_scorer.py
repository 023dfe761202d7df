"""Custom scorer of the judge fixture: asks a model itself through litellm, as official custom scorers do."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import litellm
from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.types import ScoreDetail
from ai4sci_bench.scorers._judge_common import resolve_scorer_api_params
from ai4sci_bench.scorers.llm_judge import JUDGE_SYSTEM_PROMPT


@register_scorer("judged_spectrum_peak")
class PeakJudge(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        weight = float(config.get("weight", 1.0))
        report = pred_dir / str(config.get("pred_file", "report.md"))
        if not report.is_file():
            return ScoreDetail("judged_spectrum_peak", 0.0, weight, False, {"error": "no report"}, "no report")
        api_base, api_key = resolve_scorer_api_params(config)
        response = litellm.completion(
            model=str(config.get("model")),
            messages=[{"role": "system", "content": JUDGE_SYSTEM_PROMPT},
                      {"role": "user", "content": "Peak check, answer with a JSON score 0-10.\n"
                                                  + report.read_text(encoding="utf-8")[:500]}],
            temperature=0.0, max_tokens=60, api_base=api_base, api_key=api_key)
        raw = response.choices[0].message.content or ""
        found = re.search(r'"score"\s*:\s*([0-9.]+)', raw)
        value = min(10.0, float(found.group(1))) if found else 0.0
        # What this process can see of its environment: names, and digests of the values.
        seen = {name: hashlib.sha256(value_.encode()).hexdigest() for name, value_ in os.environ.items()}
        return ScoreDetail("judged_spectrum_peak", value / 10.0 * weight, weight, value >= 5,
                           {"raw": raw, "environment": json.dumps(seen, sort_keys=True)}, f"peak judge {value}/10")
