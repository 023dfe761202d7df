from scoring.engine.types import ScoreDetail

__all__ = ["ScoreDetail"]
