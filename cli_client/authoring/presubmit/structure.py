"""The checks on a task directory's files before anything runs: required files, the task id, the generator's
declared contract (imported in a subprocess) and its agreement with task_meta.yaml."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from contracts import PROMPT_LEVELS
from contracts.task_files import PORTAL_TASK_ID_RE
from scoring.engine.static_checks import PORTAL_CHECK
from scoring.engine.taskdef import mapping_at

from .generation import output_tail, subprocess_env
from .report import Check, portal_check


def required_files_check(task_dir: Path, task: dict[str, Any] | None) -> Check:
    missing = []
    if not (task_dir / "task_meta.yaml").is_file() and not (task_dir / "task.yaml").is_file():
        missing.append("task_meta.yaml")
    if (task_dir / "task_meta.yaml").is_file() and not (task_dir / "task.yaml").is_file() \
            and not (task_dir / "task_eval.yaml").is_file():
        missing.append(f"task_eval.yaml {portal_check('the Portal reads the scoring contract from it')}")
    if not (task_dir / "generate_gt.py").is_file():
        missing.append("generate_gt.py")
    prompts = mapping_at(task, "prompts")
    for level in PROMPT_LEVELS:
        name = str(prompts.get(level) or f"prompt_{level}.md")
        if not (task_dir / name).is_file():
            # The official checks ask for b4 only when the task declares it.
            ours = level == "b4" and not prompts.get("b4")
            missing.append(f"{name} {portal_check('the Portal serves all four levels')}" if ours else name)
    if missing:
        return Check("required_files", False, f"missing: {', '.join(missing)}")
    return Check("required_files", True, "task_meta/task_eval, generate_gt.py and prompts b1–b4 present")


def task_id_check(task_dir: Path, task: dict[str, Any] | None) -> tuple[Check, list[str]]:
    """The id check and its warnings (a directory named other than the task, as the official checks warn)."""
    if task is None:
        return Check("task_id", False, "task metadata could not be loaded"), []
    task_id = str(task.get("id") or "")
    problems, warnings = [], []
    if not PORTAL_TASK_ID_RE.match(task_id):
        problems.append(f"id {task_id!r} must match {PORTAL_TASK_ID_RE.pattern} (lowercase <domain>.<name>) "
                        f"{portal_check('the catalog id rule')}")
    else:
        domain, name = task_id.split(".")
        if task.get("domain") != domain:
            problems.append(f"id prefix {domain!r} differs from domain {task.get('domain')!r}")
        if task_dir.resolve().name != name:
            warnings.append(f"directory name {task_dir.resolve().name!r} differs from task name {name!r}")
    if problems:
        return Check("task_id", False, problems[0], problems[1:]), warnings
    return Check("task_id", True, task_id), warnings


_INTROSPECT = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("generate_gt_under_validation", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
def names(spec):
    return [str(e.get("name")) for e in spec if isinstance(e, dict)] if isinstance(spec, list) else None
print(json.dumps({
    "generate": callable(getattr(module, "generate", None)),
    "default_params": getattr(module, "DEFAULT_PARAMS", None),
    "input_spec": names(getattr(module, "INPUT_SPEC", None)),
    "output_spec": names(getattr(module, "OUTPUT_SPEC", None)),
}, default=str))
"""


def generator_contract_check(task_dir: Path, timeout: float) -> tuple[Check, dict[str, Any]]:
    argv = [sys.executable, "-c", _INTROSPECT, str(task_dir / "generate_gt.py")]
    try:
        done = subprocess.run(argv, cwd=task_dir, capture_output=True, text=True, timeout=timeout,
                              env=subprocess_env(), check=False)
    except subprocess.TimeoutExpired:
        return Check("generator_contract", False, f"importing generate_gt.py took over {timeout:g} s"), {}
    try:
        info = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Check("generator_contract", False, "cannot import generate_gt.py", [output_tail(done.stderr)]), {}
    # Ours, not the official pre-submit's (it imports generate_gt.py and falls back to running it as a
    # script): the declared contract is advice for a proposal, so a gap is a warning, never a failure.
    missing = [name for name, present in (("generate()", info.get("generate")),
                                          ("DEFAULT_PARAMS", isinstance(info.get("default_params"), dict)),
                                          ("INPUT_SPEC", info.get("input_spec") is not None),
                                          ("OUTPUT_SPEC", info.get("output_spec") is not None)) if not present]
    if missing:
        return Check("generator_contract", True, "generate_gt.py imports",
                     [f"warning ({PORTAL_CHECK}): it lacks {', '.join(missing)}"]), info
    return Check("generator_contract", True, "generate, DEFAULT_PARAMS, INPUT_SPEC, OUTPUT_SPEC present"), info


def io_agreement_warnings(task: dict[str, Any], info: dict[str, Any]) -> list[str]:
    warnings = []
    inputs = [str(e.get("name")) for e in ((task.get("input") or {}).get("files") or []) if isinstance(e, dict)]
    outputs = [str(e.get("name")) for e in ((task.get("output") or {}).get("files") or [])
               if isinstance(e, dict) and e.get("type") != "code"]
    if info.get("input_spec") is not None and info.get("input_spec") != inputs:
        warnings.append(f"INPUT_SPEC {info.get('input_spec')} differs from input.files {inputs}")
    if info.get("output_spec") is not None and info.get("output_spec") != outputs:
        warnings.append(f"OUTPUT_SPEC {info.get('output_spec')} differs from non-code output.files {outputs}")
    return warnings

