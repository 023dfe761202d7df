"""Scorer base class and the name → class registry (contract §1.11, §2.11)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from .types import ScoreDetail

__all__ = ["Scorer", "ScorerRegistry", "UnknownScorer", "active_registry", "register_scorer"]


class Scorer:
    """One method: turn (pred_dir, ref_dir, config) into a ScoreDetail, or raise."""

    name: str = ""

    def score(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any]) -> ScoreDetail:
        raise NotImplementedError


class UnknownScorer(KeyError):
    def __str__(self) -> str:
        return f"Unknown scorer: {self.args[0]}"


S = TypeVar("S", bound=type)

_BUILTINS: dict[str, type] = {}
# While a task's custom_scorer.py executes, registrations land in that task's own dict, so
# one task's names never leak into another evaluation in the same process.
_custom_sink: contextvars.ContextVar[dict[str, type] | None] = contextvars.ContextVar("custom_sink", default=None)


def register_scorer(name: str) -> Callable[[S], S]:
    def decorator(cls: S) -> S:
        if not getattr(cls, "name", None):
            setattr(cls, "name", name)  # noqa: B010 (S is any class: no attribute to assign statically)
        sink = _custom_sink.get()
        (sink if sink is not None else _BUILTINS)[name] = cls
        return cls

    return decorator


class ScorerRegistry:
    """Built-in scorers overlaid with one task's custom scorers (last registration wins)."""

    def __init__(self, custom: dict[str, type] | None = None) -> None:
        self.custom = dict(custom or {})

    def get(self, name: str) -> Any:
        cls = self.custom.get(name) or _BUILTINS.get(name)
        if cls is None:
            raise UnknownScorer(name)
        return cls()

    def is_custom(self, name: str) -> bool:
        return name in self.custom

    def names(self) -> list[str]:
        return sorted(set(_BUILTINS) | set(self.custom))


_active: contextvars.ContextVar[ScorerRegistry | None] = contextvars.ContextVar("active_registry", default=None)


def active_registry() -> ScorerRegistry:
    """The registry of the evaluation in progress (composite looks sub-scorers up here)."""
    return _active.get() or ScorerRegistry()


@contextlib.contextmanager
def using_registry(registry: ScorerRegistry) -> Iterator[ScorerRegistry]:
    token = _active.set(registry)
    try:
        yield registry
    finally:
        _active.reset(token)


@contextlib.contextmanager
def collecting_registrations(sink: dict[str, type]) -> Iterator[dict[str, type]]:
    token = _custom_sink.set(sink)
    try:
        yield sink
    finally:
        _custom_sink.reset(token)
