"""``ai4sci_bench.scorers.multimodal``: the engine's multimodal scorer (vlm_judge, pixel_sim)."""

from scoring.engine.scorers.judges import DEFAULT_VLM_RUBRIC, VLM_SYSTEM_PROMPT, MultimodalScorer

__all__ = ["DEFAULT_VLM_RUBRIC", "MultimodalScorer", "VLM_SYSTEM_PROMPT"]
