"""Loading a task's ``custom_scorer.py`` with an ``ai4sci_bench`` shim (contract §1.11)."""

from __future__ import annotations

import ast
import contextlib
import importlib
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
# Also stood in for while task code runs: custom scorers call judge models through it (compat/litellm).
SHIM_PACKAGES = (SHIM_PACKAGE, "litellm")
_COMPAT_DIR = Path(__file__).resolve().parent / "compat"


class CustomScorerLoadError(EngineError):
    pass


def _is_shim_module(name: str) -> bool:
    return any(name == package or name.startswith(package + ".") for package in SHIM_PACKAGES)


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
    """Make ``ai4sci_bench`` and ``litellm`` (our shims) and the task's helper modules importable,
    then undo it.

    A real installed ``ai4sci_bench`` (or ``litellm``) is stashed for the duration and restored afterwards;
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


_OPTIONAL_IMPORT_GUARDS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def _guarded_nodes(tree: ast.AST) -> set[int]:
    """Import statements inside ``try: … except ImportError:`` (optional, so never missing)."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught: set[str] = set()
        for handler in node.handlers:
            if handler.type is None:
                caught.add("BaseException")
                continue
            for expr in handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]:
                if isinstance(expr, ast.Name):
                    caught.add(expr.id)
        if caught & _OPTIONAL_IMPORT_GUARDS:
            guarded.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    return guarded


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names imported from it) for every absolute, unguarded import in ``path``."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=path.name)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return []  # loading it reports the real error
    guarded = _guarded_nodes(tree)
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module, [alias.name for alias in node.names if alias.name != "*"]))
    return found


def _compat_has(module: str, names: list[str]) -> str | None:
    """None when our ``ai4sci_bench`` stand-in provides ``module`` (and ``names``), else what is missing."""
    try:
        loaded = importlib.import_module(module)
    except ImportError:
        return module
    for name in names:
        if hasattr(loaded, name):
            continue
        try:
            importlib.import_module(f"{module}.{name}")
        except ImportError:
            return f"{module}.{name}"
    return None


def unavailable_imports(task_dir: Path) -> list[str]:
    """What ``custom_scorer.py`` (and the task's helper modules it imports) needs that scoring here
    cannot give it: a part of ``ai4sci_bench`` outside our compatibility layer, or a module that is
    neither in the task directory, the standard library nor the scoring environment.

    Read from the source, without running it, so a task is known to be unscorable when it is
    loaded rather than when a submission is scored. Imports inside ``try/except ImportError``
    are optional and never count.
    """
    task_dir = Path(task_dir)
    first = task_dir / CUSTOM_SCORER_FILE
    if not first.is_file():
        return []
    missing: list[str] = []
    pending, visited = [first], set()
    with custom_runtime(task_dir):
        while pending:
            path = pending.pop()
            if path in visited:
                continue
            visited.add(path)
            for module, names in _imports(path):
                top = module.split(".")[0]
                if top == SHIM_PACKAGE:
                    gap = _compat_has(module, names)
                    if gap:
                        missing.append(f"{gap} (not part of this Portal's ai4sci_bench compatibility layer)")
                    continue
                helper = task_dir / f"{top}.py"
                if helper.is_file() or (task_dir / top / "__init__.py").is_file():
                    if helper.is_file():
                        pending.append(helper)
                    continue
                if top in sys.stdlib_module_names or importlib.util.find_spec(top) is not None:
                    continue
                missing.append(f"{top} (neither in the task directory nor installed in the scoring environment)")
    return sorted(set(missing))
