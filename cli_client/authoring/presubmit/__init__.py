"""Pre-submit validation of one task directory (scoring contract §5), as a pure function.

`validate_task_dir(path)` runs the static checks, the file and id rules of our catalog, the
generator contract, a byte-for-byte determinism check (two runs with the same parameters),
generation with two further seeds, and the GT self-check (the reference fed through the
task's own scoring contract must earn full marks). The generator and the scorer only ever
run in subprocesses with timeouts, so the Portal can call this on an untrusted proposal
from a worker (inside its own sandbox) without importing the author's code.

Our deviations from upstream's `validate --pre-submit`, all stricter: determinism is compared,
the seed42/seed31415 references are generated and compared, the generator runs as a subprocess
with a timeout, the task id follows the Portal's rule, and b4 and task_eval.yaml are required.
Each of these says so when it fails ("Portal check, not in the official pre-submit", with why
the Portal needs it); they stay failures because the catalog could not publish the task
otherwise. What the Portal merely recommends is a warning with the same label: the declared
generator contract (INPUT_SPEC/OUTPUT_SPEC/DEFAULT_PARAMS/generate), and a directory named
other than the task (a warning in the official static checks too).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from scoring.engine import TaskDefinitionError, load_task, static_validate
from scoring.engine.taskdef import mapping_at

from .generation import (
    GeneratorFailed,
    extra_seeds,
    generator_run_local,
    official_seeds_check,
    preflight_params,
    tree_differences,
)
from .judges import judges_config_check, run_judge_selfcheck
from .report import Check, ValidationReport, portal_check
from .selfcheck import run_selfcheck
from .structure import generator_contract_check, io_agreement_warnings, required_files_check, task_id_check

__all__ = ["Check", "GeneratorFailed", "ValidationReport", "generator_run_local", "validate_task_dir"]


def validate_task_dir(task_dir: Path, *, generator_timeout: float | None = None,
                      scorer_timeout: float = 300.0) -> ValidationReport:
    """Every pre-submit check for `task_dir`; never raises for a bad task, only reports it."""
    task_dir = Path(task_dir).resolve()
    report = ValidationReport(task_dir=task_dir)
    if not task_dir.is_dir():
        report.checks.append(Check("static", False, f"{task_dir} is not a directory"))
        return report

    errors, warnings = static_validate(task_dir)
    report.warnings.extend(warnings)
    report.checks.append(Check("static", not errors, "no errors" if not errors else f"{len(errors)} error(s)",
                               errors))
    try:
        task: dict[str, Any] | None = load_task(task_dir)
    except TaskDefinitionError:
        task = None
    report.task_id = str(task.get("id")) if task and task.get("id") else None
    report.checks.append(required_files_check(task_dir, task))
    id_check, id_warnings = task_id_check(task_dir, task)
    report.checks.append(id_check)
    report.warnings.extend(id_warnings)
    judges = judges_config_check(task) if task is not None else None
    if judges is not None:
        report.checks.append(judges)
    submission = task_dir / "task_submission.yaml"
    if not submission.is_file():
        report.warnings.append("task_submission.yaml is missing (`asibench task submit` requires it)")

    generation = mapping_at(task, "generation")
    timeout = float(generator_timeout or generation.get("timeout_seconds") or 300)
    if task is None or not (task_dir / "generate_gt.py").is_file() or errors:
        reason = "static errors" if errors else "no loadable task or generate_gt.py"
        for name in ("generator_contract", "determinism", "seeds", "official_seeds", "gt_selfcheck"):
            report.checks.append(Check(name, None, f"skipped ({reason})"))
        return report

    contract, info = generator_contract_check(task_dir, timeout)
    report.checks.append(contract)
    if not contract.ok:
        for name in ("determinism", "seeds", "official_seeds", "gt_selfcheck"):
            report.checks.append(Check(name, None, "skipped (generator contract)"))
        return report
    report.warnings.extend(io_agreement_warnings(task, info))

    with tempfile.TemporaryDirectory(prefix="asibench_validate_") as tmp:
        report.checks.extend(_generated_checks(task_dir, task, info, Path(tmp), timeout, scorer_timeout, judges))
    return report


def _generated_checks(task_dir: Path, task: dict[str, Any], info: dict[str, Any], work: Path, timeout: float,
                      scorer_timeout: float, judges: Check | None) -> list[Check]:
    """The checks that run the generator (determinism, seeds, the official seeds) and the scorer on what it made."""
    checks: list[Check] = []
    try:
        params = preflight_params(task, info.get("default_params") or {})
        first = work / "gen_a"
        meta = generator_run_local(task_dir, first, params, timeout)
        generator_run_local(task_dir, work / "gen_b", params, timeout)
    except GeneratorFailed as exc:
        checks.append(Check("determinism", False, str(exc)))
        for name in ("seeds", "official_seeds", "gt_selfcheck"):
            checks.append(Check(name, None, "skipped (generation failed)"))
        return checks
    diffs = tree_differences(first, work / "gen_b")
    checks.append(Check(
        "determinism", not diffs,
        f"two runs with {json.dumps(params, sort_keys=True)} are byte-identical" if not diffs
        else f"two runs with the same parameters differ in {len(diffs)} file(s): {', '.join(diffs[:5])} "
             + portal_check("the catalog generates every instance twice and keeps it only when both agree"),
        diffs[5:]))

    seed_details, seed_ok = [], True
    for seed in extra_seeds(int(params.get("seed", 42)) if str(params.get("seed", "")).isdigit() else 42):
        try:
            generator_run_local(task_dir, work / f"seed_{seed}", {**params, "seed": seed}, timeout)
            seed_details.append(f"seed {seed}: ok")
        except GeneratorFailed as exc:
            seed_ok = False
            seed_details.append(f"seed {seed}: {exc}")
    checks.append(Check("seeds", seed_ok, "generates with two more seeds" if seed_ok
                        else "generation failed for another seed", seed_details))

    checks.append(official_seeds_check(task_dir, task, work, timeout))

    used: dict[str, Any] = meta["params_used"] if isinstance(meta.get("params_used"), dict) else params
    selfcheck_work = work / "selfcheck"
    selfcheck_work.mkdir()
    checks.append(run_selfcheck(task, first, used, selfcheck_work, scorer_timeout))
    if judges is not None and judges.ok:
        judged = run_judge_selfcheck(task, first, selfcheck_work / "pred", used, selfcheck_work, scorer_timeout)
        if judged is not None:
            checks.append(judged)
    return checks
