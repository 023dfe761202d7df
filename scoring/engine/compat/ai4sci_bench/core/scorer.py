from scoring.engine.registry import Scorer, register_scorer

__all__ = ["Scorer", "register_scorer"]
