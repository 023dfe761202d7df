"""``ai4sci_bench.scorers._judge_common`` as custom scorers use it.

Scoring here runs in a sandbox without network and without the operator's judge settings, so
endpoint resolution only sees a task's own (legacy) ``api_base``/``api_key`` values; the judge
calls themselves go through the engine's judge session (``scoring.engine.judge_calls``), which
the service answers with its own endpoint outside the sandbox.
"""

from __future__ import annotations

from typing import Any

from scoring.engine.judge_models import DEFAULT_MODEL, SUPPORTED_MODELS, resolve_model
from scoring.engine.judge_parse import JudgeVerdict, judge_detail
from scoring.engine.scorers.common import unavailable_detail
from scoring.engine.types import ScoreDetail

__all__ = [
    "BACKOFF_BASE",
    "DEFAULT_MODEL",
    "MAX_RETRIES",
    "SUPPORTED_MODELS",
    "aggregate_judge_scores",
    "evaluator_unavailable_result",
    "resolve_model",
    "resolve_scorer_api_params",
    "sanitize_judge_error",
]

MAX_RETRIES = 3
BACKOFF_BASE = 2.0


def resolve_scorer_api_params(config: dict[str, Any]) -> tuple[str | None, str | None]:
    api_base = config.get("api_base") or None
    api_key = config.get("api_key") or None
    if api_key is not None and not isinstance(api_key, str):
        raise ValueError("Judge api_key must be a string.")
    return (str(api_base) if api_base is not None else None), api_key


def sanitize_judge_error(error: Exception | str, *, secrets: tuple[str | None, ...] = ()) -> str:
    text = str(error)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "<redacted>")
    return text


def aggregate_judge_scores(
    scores: list[float | None],
    raw_responses: list[str],
    *,
    scorer_name: str,
    model: str,
    num_judges: int,
    max_score_value: float,
    weight: float,
    threshold: float,
    extra_details: dict[str, Any] | None = None,
    secrets: tuple[str | None, ...] = (),
) -> ScoreDetail:
    return judge_detail(scorer_name=scorer_name, model=model, verdicts=[JudgeVerdict(s) for s in scores],
                        raw_responses=[sanitize_judge_error(r, secrets=secrets) for r in raw_responses],
                        num_judges=num_judges, max_score_value=max_score_value, weight=weight,
                        threshold=threshold, extra_details=extra_details)


def evaluator_unavailable_result(
    *,
    scorer_name: str,
    weight: float,
    error: Exception | str,
    model: str | None = None,
    secrets: tuple[str | None, ...] = (),
    extra_details: dict[str, Any] | None = None,
) -> ScoreDetail:
    detail = unavailable_detail(scorer_name, weight, sanitize_judge_error(error, secrets=secrets))
    detail.details.update({"evaluator_unavailable": True, **({"model": model} if model else {}),
                           **(extra_details or {})})
    return detail
