"""Loading a task's ``custom_scorer.py`` with an ``ai4sci_bench`` shim (contract §1.11)."""

from __future__ import annotations

import contextlib
import importlib.util
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import EngineError
from .registry import collecting_registrations
from .types import ScoreDetail

CUSTOM_SCORER_FILE = "custom_scorer.py"
SHIM_PACKAGE = "ai4sci_bench"
_COMPAT_DIR = Path(__file__).resolve().parent / "compat"


class CustomScorerLoadError(EngineError):
    pass


def _is_shim_module(name: str) -> bool:
    return name == SHIM_PACKAGE or name.startswith(SHIM_PACKAGE + ".")


def _is_under(module: Any, directory: Path) -> bool:
    file = getattr(module, "__file__", None)
    if not file:
        return False
    try:
        return Path(file).resolve().is_relative_to(directory)
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def custom_runtime(task_dir: Path) -> Iterator[None]:
    """Make ``ai4sci_bench`` (our shim) and the task's helper modules importable, then undo it.

    A real installed ``ai4sci_bench`` is stashed for the duration and restored afterwards;
    helper modules imported from the task directory are dropped on exit so another task's
    helper of the same name loads fresh. Not thread-safe: it edits sys.path/sys.modules.
    """
    task_dir = Path(task_dir).resolve()
    stashed = {name: sys.modules.pop(name) for name in list(sys.modules) if _is_shim_module(name)}
    before = set(sys.modules)
    saved_path = list(sys.path)
    saved_bytecode = sys.dont_write_bytecode
    sys.path[:0] = [str(_COMPAT_DIR), str(task_dir)]
    sys.dont_write_bytecode = True  # never leave __pycache__ in task dirs or the project tree
    try:
        yield
    finally:
        sys.path[:] = saved_path
        sys.dont_write_bytecode = saved_bytecode
        for name in list(sys.modules):
            if _is_shim_module(name) or (name not in before and _is_under(sys.modules[name], task_dir)):
                del sys.modules[name]
        sys.modules.update(stashed)


def custom_module_name(task_dir: Path) -> str:
    return f"custom_scorer_{Path(task_dir).name}"


def load_custom_scorers(task_dir: Path) -> dict[str, type]:
    """Execute ``custom_scorer.py`` (if any) and return the scorer classes it registered."""
    task_dir = Path(task_dir)
    path = task_dir / CUSTOM_SCORER_FILE
    if not path.is_file():
        return {}
    name = custom_module_name(task_dir)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CustomScorerLoadError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    registered: dict[str, type] = {}
    with custom_runtime(task_dir), collecting_registrations(registered):
        sys.modules[name] = module  # dataclasses and pickling look the module up by name
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:
            sys.modules.pop(name, None)
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise CustomScorerLoadError(f"{CUSTOM_SCORER_FILE}: {type(exc).__name__}: {exc}") from exc
    sys.modules[name] = module  # custom_runtime dropped it with the other task-dir modules
    return registered


def coerce_detail(value: Any) -> ScoreDetail:
    """Accept our ScoreDetail or any look-alike (e.g. a real ai4sci_bench one); refuse the rest."""
    if not isinstance(value, ScoreDetail):
        missing = [a for a in ("scorer_name", "score", "max_score", "passed") if not hasattr(value, a)]
        if missing:
            raise TypeError(f"scorer returned {type(value).__name__}, not a ScoreDetail")
        value = ScoreDetail(
            value.scorer_name,
            value.score,
            value.max_score,
            value.passed,
            getattr(value, "details", None) or {},
            getattr(value, "message", "") or "",
        )
    score, max_score = float(value.score), float(value.max_score)
    if not (math.isfinite(score) and math.isfinite(max_score)):
        raise ValueError(f"scorer returned a non-finite score ({value.score!r}/{value.max_score!r})")
    details = value.details if isinstance(value.details, dict) else {"details": value.details}
    return ScoreDetail(str(value.scorer_name), score, max_score, bool(value.passed), details, str(value.message or ""))
