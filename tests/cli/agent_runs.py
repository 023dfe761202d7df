"""Shared, real inputs for the run/score tests: seed31415 instances of two catalog tasks and
`asibench run` results of the example agents, each built once per test session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scoring.engine import instance_id_for_seed, load_task, sample_params
from tests.support import OUR_CLI, REPO, cli_env

TASKS = ("math/homotopy_poly_roots", "materials/diatomic_chain_phonons")
TASK_IDS = tuple(t.replace("/", ".") for t in TASKS)
AGENTS = {
    "reference": f"python {REPO}/examples/agents/reference_agent.py --workspace {{workspace}}",
    "naive": f"python {REPO}/examples/agents/naive_agent.py --workspace {{workspace}}",
}
# What the example agents read in linux_ns: their own code and the catalog's solution/ scripts.
AGENT_MOUNTS = ("--ro-mount", str(REPO / "examples"), "--ro-mount", str(REPO / "tasks"))
_cache: dict[object, Path] = {}


def cli(args: list[str], env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*OUR_CLI, *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO)


def make_instances(base: Path) -> Path:
    """`<base>/instances/<task_id>__seed31415/` as a seed31415 pull would have it (with reference/)."""
    if "instances" in _cache:
        return _cache["instances"]
    root = base / "instances"
    for task in TASKS:
        task_dir = REPO / "tasks" / task
        params = sample_params(load_task(task_dir), 31415)
        target = root / instance_id_for_seed(task.replace("/", "."), 31415)
        subprocess.run([sys.executable, str(task_dir / "generate_gt.py"), "--output-dir", str(target),
                        "--params", json.dumps(params)], check=True, cwd=task_dir, capture_output=True)
        assert (target / "reference").is_dir() and (target / "instance_meta.json").is_file()
    _cache["instances"] = root
    return root


def agent_run(base: Path, agent: str, sandbox: str, levels: str = "b1") -> Path:
    """Results dir of `asibench run` with an example agent over both instances (cached)."""
    key = (agent, sandbox, levels)
    if key in _cache:
        return _cache[key]
    instances = make_instances(base)
    out = base / f"run_{agent}_{sandbox}"
    args = ["run", "--instances-dir", str(instances), "--agent-cmd", AGENTS[agent], "--sandbox", sandbox,
            "--prompt-levels", levels, "--output-dir", str(out)]
    if sandbox == "linux_ns":
        args += AGENT_MOUNTS
    done = cli(args, cli_env(base / "home"))
    assert done.returncode == 0, done.stderr
    _cache[key] = out
    return out


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """path → (size, mtime_ns) of every file below root."""
    return {p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def synthetic_instance(root: Path, task_id: str, outputs: list[str], levels: tuple[str, ...] = ("b1",)) -> Path:
    """An instance of a task that is not in the catalog: its own task_info.json declares the outputs."""
    target = root / f"{task_id}__seed31415"
    (target / "data").mkdir(parents=True)
    (target / "data" / "input.txt").write_text("42\n")
    for level in levels:
        (target / f"prompt_{level}.md").write_text(f"prompt {level}\n")
    (target / "task_info.json").write_text(json.dumps({
        "schema_version": 3, "task_id": "task_000000000000", "prompt_level": "b1",
        "expected_outputs": [{"name": name, "type": "data"} for name in outputs], "timeout_seconds": 60}))
    return target
