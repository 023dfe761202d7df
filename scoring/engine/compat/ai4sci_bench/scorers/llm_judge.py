"""``ai4sci_bench.scorers.llm_judge``: the engine's llm_judge, and the names custom scorers borrow."""

from scoring.engine.judge_models import DEFAULT_MODEL, SUPPORTED_MODELS, resolve_model
from scoring.engine.scorers.judges import DEFAULT_RUBRIC, JUDGE_SYSTEM_PROMPT, LLMJudgeScorer

from ._judge_common import BACKOFF_BASE, MAX_RETRIES

__all__ = ["BACKOFF_BASE", "DEFAULT_MODEL", "DEFAULT_RUBRIC", "JUDGE_SYSTEM_PROMPT", "LLMJudgeScorer", "MAX_RETRIES",
           "SUPPORTED_MODELS", "_resolve_model", "resolve_model"]


def _resolve_model(model: str) -> str:
    return resolve_model(model)
