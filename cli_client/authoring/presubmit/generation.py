"""Running the task's generator in a subprocess with a timeout, and the checks on what it generates:
determinism, further seeds, and the two official datasets' references differing."""

from __future__ import annotations

import filecmp
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from contracts.digests import has_volatile_keys, stable_json_digest
from scoring.engine import TaskDefinitionError, sample_params
from scoring.engine.taskdef import mapping_at

from .report import Check, portal_check

PROJECT_ROOT = Path(__file__).resolve().parents[3]


class GeneratorFailed(Exception):
    pass


def subprocess_env() -> dict[str, str]:
    # No bytecode: the generator must not leave __pycache__ in the task directory.
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}


def output_tail(text: str, lines: int = 6) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def generator_run_local(task_dir: Path, output_dir: Path, params: dict[str, Any], timeout: float) -> dict[str, Any]:
    """`python generate_gt.py --output-dir D --params JSON` (cwd = task dir); returns instance_meta.json."""
    argv = [sys.executable, str(task_dir / "generate_gt.py"), "--output-dir", str(output_dir),
            "--params", json.dumps(params)]
    try:
        done = subprocess.run(argv, cwd=task_dir, capture_output=True, text=True, timeout=timeout,
                              env=subprocess_env(), check=False)
    except subprocess.TimeoutExpired:
        raise GeneratorFailed(f"generate_gt.py did not finish within {timeout:g} s") from None
    if done.returncode != 0:
        raise GeneratorFailed(f"generate_gt.py exited with {done.returncode}: {output_tail(done.stderr)}")
    reference = output_dir / "reference"
    if not reference.is_dir() or not any(reference.iterdir()):
        raise GeneratorFailed("generate_gt.py produced no reference/ files")
    try:
        meta = json.loads((output_dir / "instance_meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        meta = {}
    return meta if isinstance(meta, dict) else {}


def tree_differences(a: Path, b: Path, under: str = "") -> list[str]:
    """Relative paths (below `under/` when given) that differ between two generated instance trees
    under the determinism rule."""
    def files(root: Path) -> set[str]:
        names = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
        return {n for n in names if n.startswith(f"{under}/")} if under else names
    files_a, files_b = files(a), files(b)
    diffs = [f"{name} (only in one run)" for name in sorted(files_a ^ files_b)]
    for name in sorted(files_a & files_b):
        if has_volatile_keys(name):  # compared without its volatile keys (the determinism rule)
            if stable_json_digest(a / name) != stable_json_digest(b / name):
                diffs.append(name)
            continue
        if not filecmp.cmp(a / name, b / name, shallow=False):
            diffs.append(name)
    return diffs


def preflight_params(task: dict[str, Any], default_params: dict[str, Any]) -> dict[str, Any]:
    """The representative parameters of §5.3: settings[0], or DEFAULT_PARAMS + YAML defaults."""
    generation = mapping_at(task, "generation")
    if generation.get("mode", "infinite") == "finite":
        settings = generation.get("settings") or []
        if not settings or not isinstance(settings[0], dict):
            raise GeneratorFailed("finite generation mode needs at least one setting")
        return {k: v for k, v in settings[0].items() if k != "id"}
    declared = {name: spec["default"] for name, spec in (generation.get("parameters") or {}).items()
                if isinstance(spec, dict) and "default" in spec}
    params = {**default_params, **declared}
    if generation.get("seed") and "seed" not in params:
        params["seed"] = 0
    return params


def extra_seeds(first: int) -> list[int]:
    rng, seeds = random.Random(12345), list[int]()
    while len(seeds) < 2:
        seed = rng.randint(0, 999999)
        if seed != first and seed not in seeds:
            seeds.append(seed)
    return seeds


OFFICIAL_SEEDS = (42, 31415)  # seed42: references private; seed31415: references public


def official_seeds_check(task_dir: Path, task: dict[str, Any], work: Path, timeout: float) -> Check:
    """The two datasets' references must differ, or the public one reveals the private one."""
    instances = []
    for seed in OFFICIAL_SEEDS:
        out = work / f"official_seed{seed}"
        try:
            generator_run_local(task_dir, out, sample_params(task, seed), timeout)
        except (GeneratorFailed, TaskDefinitionError) as exc:
            return Check("official_seeds", False, f"generation for seed{seed} failed: {exc} "
                         + portal_check("the Portal generates both datasets"))
        instances.append(out)
    if not tree_differences(instances[0], instances[1], under="reference"):
        return Check("official_seeds", False,
                     "the seed42 and seed31415 references are byte-identical, so the public seed31415 references "
                     "would reveal the private seed42 ones; make the generator depend on the seed "
                     + portal_check("the Portal publishes the seed31415 references"))
    return Check("official_seeds", True, "the seed42 and seed31415 references differ")

