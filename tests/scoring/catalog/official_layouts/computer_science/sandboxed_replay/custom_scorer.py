from __future__ import annotations

from pathlib import Path

from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.task import TaskLoader
from ai4sci_bench.core.types import ScoreDetail
from ai4sci_bench.runner.submission_sandbox import SandboxedSubmissionRunner

try:
    import numba  # optional: only speeds the replay up
except ImportError:
    numba = None


@register_scorer("replay_score")
class Replay(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        TaskLoader(Path(__file__).resolve().parents[2])
        SandboxedSubmissionRunner()
        return ScoreDetail("replay_score", 0.0, 1.0, False, {}, "")
