"""What a `score-batch` engine imports and reads once, before it forks a child per job.

Each job runs in a forked child (isolation.py), and whatever the child imports dies with it: a
task whose scorer imports scipy.optimize (300 ms in the sandbox) paid that for every result.
Imported in the parent, it is paid once per batch and shared copy-on-write by every child.

The parent never runs task code: it only *parses* the task's own modules (custom_scorer.py and
its helpers beside it) for the names they import, and imports the ones that belong to the
scientific runtime (`PRELOADABLE`) from the runtime's own sys.path, which holds no task file.
A name the task dir itself provides (a helper called `scipy.py`) is left alone: the child must
still find the task's own module first, as it did before.

The task definition (task_meta.yaml / task_eval.yaml) is read here too, with the engine's own
hardened YAML reader: parsing it cost each child 4-7 ms, most of a result's scoring.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path
from typing import Any

from .custom import CUSTOM_SCORER_FILE
from .taskdef import load_task

# Top-level packages of the sandbox's runtime whose import is worth sharing; nothing else is
# imported on a task's say-so (an arbitrary stdlib module may have import-time effects).
PRELOADABLE = frozenset({"numpy", "scipy", "pandas", "sympy", "networkx", "sklearn", "PIL", "statsmodels"})
# A task module larger than this is not parsed (the child still imports what it needs).
_MAX_SOURCE_BYTES = 1 << 20
_MAX_MODULES = 64


def _imported_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            # `from scipy import stats` imports a submodule, or just an attribute: tried as both.
            names.update(f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def _shadowed(task_dir: Path, top: str) -> bool:
    return (task_dir / f"{top}.py").exists() or (task_dir / top).is_dir()


def _parsed_imports(source: Path) -> set[str]:
    try:
        if not source.is_file() or source.stat().st_size > _MAX_SOURCE_BYTES:
            return set()
        return _imported_names(ast.parse(source.read_bytes(), filename=str(source)))
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
        return set()  # the child reports a broken scorer; preloading is only an optimisation


def task_runtime_imports(task_dir: Path) -> list[str]:
    """Runtime modules the task's scorer imports: custom_scorer.py and the task's own helper modules it
    imports in turn (not its generator or solution, which scoring never runs). Sorted, parents first."""
    task_dir = Path(task_dir)
    names: set[str] = set()
    todo, seen = [task_dir / CUSTOM_SCORER_FILE], set[Path]()
    while todo and len(seen) < _MAX_MODULES:
        source = todo.pop()
        if source in seen:
            continue
        seen.add(source)
        found = _parsed_imports(source)
        names |= found
        todo += [task_dir / f"{name.split('.')[0]}.py" for name in found]
    wanted = {name for name in names
              if all(part.isidentifier() for part in name.split("."))
              and name.split(".")[0] in PRELOADABLE and not _shadowed(task_dir, name.split(".")[0])}
    return sorted(wanted)[:_MAX_MODULES]


def preload_task_imports(task_dir: Path) -> list[str]:
    """Import what `task_runtime_imports` names, here in the engine process; the ones that loaded.

    A name that is an attribute rather than a module, or a package missing from the runtime, is
    skipped: the child meets the same ImportError and reports it as that result's failure.
    """
    loaded: list[str] = []
    for name in task_runtime_imports(task_dir):
        if name in sys.modules:
            loaded.append(name)
            continue
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 (an attribute, not a module; or not installed)
            continue
        loaded.append(name)
    return loaded


def preloaded_task(task_dir: Path) -> dict[str, Any] | None:
    """The task definition (`load_task`), read once here for every child; None when it does not load,
    so each child meets the same problem and reports it as its result's failure, as before."""
    try:
        return load_task(task_dir)
    except Exception:  # noqa: BLE001 (the child reports it: preloading is only an optimisation)
        return None
