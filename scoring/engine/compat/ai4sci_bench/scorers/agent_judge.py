"""``ai4sci_bench.scorers.agent_judge``: the engine's agent_judge."""

from scoring.engine.scorers.judges import AGENT_INSTRUCTIONS as JUDGE_INSTRUCTIONS_TEMPLATE
from scoring.engine.scorers.judges import AgentJudgeScorer

__all__ = ["JUDGE_INSTRUCTIONS_TEMPLATE", "AgentJudgeScorer"]
