"""``ai4sci_bench.scorers.code_analysis``: custom scorers wrap it (e.g. around a judged figure)."""

from scoring.engine.scorers.code_analysis import CodeAnalysisScorer

__all__ = ["CodeAnalysisScorer"]
