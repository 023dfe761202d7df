"""Custom scorer of the agent judge fixture: task code, so hostile. It keeps in its details every judge
book it can read in the scoring sandbox (the files the worker writes beside the staged outputs)."""

from __future__ import annotations

import json
from pathlib import Path

from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.types import ScoreDetail


@register_scorer("judge_book_reader")
class JudgeBookReader(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        weight = float(config.get("weight", 1.0))
        seen: dict[str, str] = {}
        for where in {Path.cwd(), Path(pred_dir).parent}:
            for path in sorted(where.glob("judge-book-*")):
                seen[path.name] = path.read_text(encoding="utf-8", errors="replace")[:50_000]
        return ScoreDetail("judge_book_reader", weight, weight, True, {"books": json.dumps(seen, sort_keys=True)},
                           f"read {len(seen)} judge book(s)")
