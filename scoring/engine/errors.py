"""One error vocabulary for the scoring engine."""

from __future__ import annotations


class EngineError(Exception):
    """Base class; ``failure_kind`` is the §2.4 classification when it ends an evaluation."""

    failure_kind = "evaluator_runtime_error"


class TaskDefinitionError(EngineError):
    """The task directory cannot be loaded (missing file, bad YAML, bad runtime block)."""


class TemplateError(EngineError, ValueError):
    """A ``'{…}'`` config template is malformed or uses a forbidden construct."""


class TemplateKeyError(TemplateError, KeyError):
    """A template names a parameter the instance does not have."""

    def __str__(self) -> str:  # KeyError.__str__ would repr() the message
        return str(self.args[0]) if self.args else ""


class EvaluationConfigError(EngineError):
    """The evaluation block is unusable (bad severity, score_divisor, weight)."""


class StagingError(EngineError):
    """The prediction directory could not be staged safely."""

    failure_kind = "missing_evaluator_input"


class ScorerUnavailable(EngineError):
    """A scorer needs an external evaluator (model endpoint, CLI) this engine lacks."""

    failure_kind = "evaluator_unavailable"
