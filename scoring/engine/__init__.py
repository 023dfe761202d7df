"""Pure-Python scoring engine compatible with ``asibench`` 0.2.0 task definitions.

No Django imports here: this package also runs alone inside the scoring sandbox
(``python -m scoring.engine score …``).
"""

from .errors import (
    EngineError,
    EvaluationConfigError,
    ScorerUnavailable,
    StagingError,
    TaskDefinitionError,
    TemplateError,
    TemplateKeyError,
)
from .registry import Scorer, register_scorer
from .report import build_local_report
from .scoring import score_instance
from .staging import stage_prediction_dir
from .static_checks import static_validate
from .taskdef import (
    anonymised_task_id,
    declared_outputs,
    instance_id_for_params,
    instance_id_for_seed,
    load_task,
    public_task_eval,
    sample_params,
)
from .templates import resolve_templates
from .types import ScoreDetail
from .version import ENGINE_VERSION

__all__ = [
    "ENGINE_VERSION",
    "EngineError",
    "EvaluationConfigError",
    "ScoreDetail",
    "Scorer",
    "ScorerUnavailable",
    "StagingError",
    "TaskDefinitionError",
    "TemplateError",
    "TemplateKeyError",
    "anonymised_task_id",
    "build_local_report",
    "declared_outputs",
    "instance_id_for_params",
    "instance_id_for_seed",
    "load_task",
    "public_task_eval",
    "register_scorer",
    "resolve_templates",
    "sample_params",
    "score_instance",
    "stage_prediction_dir",
    "static_validate",
]
