from enum import Enum

from scoring.engine.types import ScoreDetail

__all__ = ["GenerationMode", "ScoreDetail", "TaskLifecycle"]


class GenerationMode(Enum):
    INFINITE = "infinite"
    FINITE = "finite"


class TaskLifecycle(Enum):
    IN_DEVELOPMENT = "in_development"
    TEST = "test"
    SAMPLE = "sample"
    FINAL = "final"
    ABANDONED = "abandoned"
