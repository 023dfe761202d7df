"""The judge-endpoint resolution custom scorers call before they ask a model.

Scoring here runs without network and without an operator judge override or a
``configs/scoring.yaml``, so only the task's own (legacy) ``api_base``/``api_key`` values count.
"""

from __future__ import annotations

from typing import Any

__all__ = ["resolve_scorer_api_params"]


def resolve_scorer_api_params(config: dict[str, Any]) -> tuple[str | None, str | None]:
    api_base = config.get("api_base") or None
    api_key = config.get("api_key") or None
    if api_key is not None and not isinstance(api_key, str):
        raise ValueError("Judge api_key must be a string.")
    return (str(api_base) if api_base is not None else None), api_key
