"""What a sandbox must see read-only to run this interpreter on the project's own code."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[2]


def python_runtime_mounts(
    project_dir: Path = PROJECT_DIR, packages: Sequence[str] = ("scoring", "contracts")
) -> list[Path]:
    """The venv (sys.prefix), the base installation (sys.base_prefix), the interpreter's real
    location, and `packages` from the project — never the whole project dir, which holds
    `var/` (references, the embedded database) and `.env`.

    Inside, run `sys.executable` with `PYTHONPATH=<project_dir>` (see `python_runtime_env`).
    Paths under a mode-700 directory such as /root are fine for the bwrap backend: it binds
    each source through a file descriptor opened by the caller, so the sandbox user never
    traverses /root itself; the mounted trees must only be world-readable (pyenv's are).
    """
    interpreter = Path(sys.executable).resolve()
    candidates = [Path(sys.prefix), Path(sys.base_prefix), interpreter.parent.parent]
    candidates += [project_dir / p for p in packages]
    out: list[Path] = []
    for p in (c.resolve() for c in candidates):
        # A nested path is already visible through its ancestor's bind.
        if p.exists() and not any(p == q or q in p.parents for q in out):
            out = [q for q in out if p not in q.parents] + [p]
    return out


def python_runtime_env(project_dir: Path = PROJECT_DIR) -> dict[str, str]:
    return {"PYTHONPATH": str(project_dir)}
