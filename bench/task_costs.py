"""What each catalog task costs to generate, solve and score.

For every task (or the ones named) and each dataset seed, runs the generator as the contract's
subprocess, the reference solver (`solution/solve.py`) and then scores the prediction at one
level with our engine. Prints wall-clock and CPU seconds per step (CPU is what matters on a
shared machine: wall time there includes waiting for a core), plus the reference score.

    .venv/bin/python bench/task_costs.py [--seeds 42,31415] [--task physics.double_well_tunnelling ...]
"""

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scoring.engine import load_task, sample_params, score_instance  # noqa: E402
from scoring.generation import discover_task_dirs  # noqa: E402


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(step: Callable[[], object], cpu: Callable[[], float]) -> tuple[float, float, object]:
    wall0, cpu0 = time.perf_counter(), cpu()
    result = step()
    return time.perf_counter() - wall0, cpu() - cpu0, result


def measure(task_dir: Path, seed: int, root: Path) -> dict[str, float]:
    task = load_task(task_dir)
    params = sample_params(task, seed)
    instance = root / "instance"
    gen_wall, gen_cpu, _ = _timed(lambda: subprocess.run(
        [sys.executable, str(task_dir / "generate_gt.py"), "--output-dir", str(instance),
         "--params", json.dumps(params)], check=True, capture_output=True, cwd=task_dir), _children_cpu)
    params = json.loads((instance / "instance_meta.json").read_text())["params_used"]
    workspace = root / "workspace"
    shutil.copytree(instance / "data", workspace / "data")
    solve_wall, solve_cpu, _ = _timed(lambda: subprocess.run(
        [sys.executable, str(task_dir / "solution" / "solve.py"), "--workspace", str(workspace)],
        check=True, capture_output=True, cwd=workspace), _children_cpu)
    score_wall, score_cpu, result = _timed(
        lambda: score_instance(task_dir, workspace, instance / "reference", params, "b3"), _self_cpu)
    return {"gen_wall": gen_wall, "gen_cpu": gen_cpu, "solve_wall": solve_wall, "solve_cpu": solve_cpu,
            "score_wall": score_wall, "score_cpu": score_cpu, "score": float(result["final_score"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks-dir", type=Path, default=REPO / "tasks")
    parser.add_argument("--seeds", default="42,31415")
    parser.add_argument("--task", action="append", default=[], help="task id (repeatable; default: all)")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    dirs = [d for d in discover_task_dirs(args.tasks_dir)
            if not args.task or f"{d.parent.name}.{d.name}" in args.task]
    print(f"{'task':48} {'seed':>6} {'gen s (cpu)':>14} {'solve s (cpu)':>14} {'score s (cpu)':>14} {'ref':>6}")
    for task_dir in dirs:
        for seed in seeds:
            with tempfile.TemporaryDirectory() as tmp:
                m = measure(task_dir, seed, Path(tmp))
            print(f"{task_dir.parent.name + '.' + task_dir.name:48} {seed:>6} "
                  f"{m['gen_wall']:>6.2f} ({m['gen_cpu']:>5.2f}) {m['solve_wall']:>6.2f} ({m['solve_cpu']:>5.2f}) "
                  f"{m['score_wall']:>6.2f} ({m['score_cpu']:>5.2f}) {m['score']:>6.1f}", flush=True)


if __name__ == "__main__":
    main()
