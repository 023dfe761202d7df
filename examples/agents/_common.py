"""Shared plumbing for the example agents: find the task behind an anonymised id, run a solver.

An agent only sees ``<workspace>/task_info.json`` whose ``task_id`` is
``task_`` + the first 12 hex digits of sha256(real task id) (client contract 5.9). The
example agents recover the task by hashing every ``id`` found in
``<tasks dir>/*/*/task_meta.yaml`` and then run one of that task's ``solution/`` scripts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

DEFAULT_TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"


class AgentError(Exception):
    """A problem the agent reports with a clear message and a non-zero exit status."""


def anonymise(task_id: str) -> str:
    return "task_" + hashlib.sha256(task_id.encode("utf-8")).hexdigest()[:12]


def find_task_dir(alias: str, tasks_dir: Path) -> Path:
    if not tasks_dir.is_dir():
        raise AgentError(f"tasks directory not found: {tasks_dir}")
    for meta_path in sorted(tasks_dir.glob("*/*/task_meta.yaml")):
        try:
            meta = yaml.safe_load(meta_path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(meta, dict) and anonymise(str(meta.get("id", ""))) == alias:
            return meta_path.parent
    raise AgentError(f"no task under {tasks_dir} matches anonymised id {alias!r}")


def run_agent(script_name: str, argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=f"Run the matching task's solution/{script_name}.")
    parser.add_argument("--workspace", required=True, type=Path)
    parser.add_argument("--tasks-dir", type=Path, default=None,
                        help="catalog root (default: $ASIBENCH_TASKS_DIR or the repository's tasks/)")
    args = parser.parse_args(argv)
    tasks_dir = args.tasks_dir or Path(os.environ.get("ASIBENCH_TASKS_DIR") or DEFAULT_TASKS_DIR)
    workspace = args.workspace.resolve()
    try:
        info_path = workspace / "task_info.json"
        try:
            alias = str(json.loads(info_path.read_text(encoding="utf-8"))["task_id"])
        except (OSError, ValueError, KeyError) as exc:
            raise AgentError(f"cannot read task_id from {info_path}: {exc}") from None
        task_dir = find_task_dir(alias, tasks_dir.resolve())
        script = task_dir / "solution" / script_name
        if not script.is_file():
            raise AgentError(f"task {task_dir.name} has no solution/{script_name}")
    except AgentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    completed = subprocess.run([sys.executable, str(script), "--workspace", str(workspace)],
                               cwd=workspace, check=False)
    return completed.returncode
