"""Model-backed judges (contract §2.12): recognised, but this engine has no model endpoint.

They return a zero flagged ``evaluator_unavailable`` so the instance becomes
``evaluation_invalid`` instead of being silently scored. A missing prediction file is still
the agent's zero, as upstream checks it before calling any model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..registry import Scorer, register_scorer
from ..types import ScoreDetail
from .common import unavailable_detail, weight_of


def _missing_prediction(
    name: str, pred_dir: Path, config: dict[str, Any], key: str, weight: float
) -> ScoreDetail | None:
    value = config.get(key)
    if not value:
        return ScoreDetail(name, 0.0, weight, False, {"error": f"'{key}' is required"}, f"{name}: '{key}' is required")
    if not (pred_dir / str(value)).exists():
        return ScoreDetail(name, 0.0, weight, False, {"error": f"Missing file: {value}"}, f"Missing file: {value}")
    return None


@register_scorer("llm_judge")
class LLMJudgeScorer(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any]) -> ScoreDetail:
        weight = weight_of(config)
        missing = _missing_prediction("llm_judge", Path(pred_dir), config, "pred_file", weight)
        return missing or unavailable_detail(
            "llm_judge", weight, "llm_judge needs a language-model endpoint, which this engine does not provide"
        )


@register_scorer("multimodal")
class MultimodalScorer(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any]) -> ScoreDetail:
        weight = weight_of(config)
        mode = str(config.get("mode", "vlm_judge"))
        name = f"multimodal:{mode}"
        missing = _missing_prediction(name, Path(pred_dir), config, "pred_image", weight)
        if missing is not None:
            return missing
        if mode == "pixel_sim":
            return unavailable_detail(
                name, weight, "pixel_sim needs an image decoder (Pillow), not installed in this engine"
            )
        return unavailable_detail(
            name, weight, f"{mode} needs a vision-model endpoint, which this engine does not provide"
        )


@register_scorer("agent_judge")
class AgentJudgeScorer(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any]) -> ScoreDetail:
        weight = weight_of(config)
        agent = config.get("agent", "codex")
        if agent not in ("codex", "claude_code"):
            raise ValueError(f"Unsupported judge agent: {agent!r}")
        return unavailable_detail(
            "agent_judge", weight, f"agent_judge needs the {agent} CLI, which this engine does not run"
        )
