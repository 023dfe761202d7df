"""Scoring throughput with the bubblewrap sandbox versus no sandbox.

Generates one instance of every catalog task, solves it with the task's reference solver,
then scores every task at b1..b4 through `python -m scoring.engine score` run by each sandbox
backend, exactly as the Celery worker does. Prints instances per minute for bwrap and none,
the sandbox overhead (target: under 10 %), and the sandbox's own start cost per instance.

    .venv/bin/python bench/scoring_throughput.py [--repeat 2] [--tasks-dir tasks]
"""

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scoring.engine import load_task, sample_params, stage_prediction_dir  # noqa: E402
from scoring.generation import discover_task_dirs  # noqa: E402
from scoring.sandbox import Limits, get_backend, python_runtime_env  # noqa: E402

LEVELS = ("b1", "b2", "b3", "b4")


def prepare(task_dir: Path, root: Path) -> tuple[Path, Path, dict]:
    """One instance (seed 42), solved by the reference solver: (pred dir, reference dir, params)."""
    params = sample_params(load_task(task_dir), 42)
    instance = root / "instance"
    subprocess.run([sys.executable, str(task_dir / "generate_gt.py"), "--output-dir", str(instance),
                    "--params", json.dumps(params)], check=True, capture_output=True)
    meta = json.loads((instance / "instance_meta.json").read_text())
    workspace = root / "workspace"
    shutil.copytree(instance / "data", workspace / "data")
    before = {p.relative_to(workspace) for p in workspace.rglob("*")}
    subprocess.run([sys.executable, str(task_dir / "solution" / "solve.py"), "--workspace", str(workspace)],
                   check=True, capture_output=True)
    outputs = root / "outputs"
    for path in workspace.rglob("*"):
        rel = path.relative_to(workspace)
        if path.is_file() and rel not in before:
            (outputs / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, outputs / rel)
    pred = stage_prediction_dir(instance / "data", outputs, root / "work" / "pred")
    return pred, instance / "reference", meta.get("params_used", params)


def score_all(backend_name: str, prepared: list[tuple[Path, Path, Path, dict]], limits: Limits) -> float:
    backend = get_backend(backend_name)
    started = time.perf_counter()
    for task_dir, pred, ref, params in prepared:
        for level in LEVELS:
            argv = [*backend.python_command(), "-m", "scoring.engine", "score", "--task-dir", str(task_dir),
                    "--pred-dir", str(pred), "--ref-dir", str(ref), "--params", json.dumps(params),
                    "--prompt-level", level]
            result = backend.run(argv, pred.parent, [task_dir, ref, *backend.runtime_mounts()], limits)
            last = result.stdout_text.strip().splitlines()[-1] if result.stdout_text.strip() else "{}"
            score = json.loads(last).get("final_score")
            if result.returncode != 0 or score is None:
                raise SystemExit(f"{backend_name}: scoring {task_dir.name} {level} failed: {result.stderr_text[-500:]}")
    return time.perf_counter() - started


def start_cost_ms(samples: int, limits: Limits) -> tuple[float, float]:
    """Median wall time of `true` under bwrap and as a plain subprocess, in milliseconds."""
    bwrap, plain = get_backend("bwrap"), []
    sandboxed = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(samples):
            t0 = time.perf_counter()
            bwrap.run(["/bin/true"], Path(tmp), [], limits)
            sandboxed.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            subprocess.run(["/bin/true"], check=True)
            plain.append((time.perf_counter() - t0) * 1000)
    return statistics.median(sandboxed), statistics.median(plain)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks-dir", type=Path, default=REPO / "tasks")
    parser.add_argument("--repeat", type=int, default=2, help="alternating rounds per backend")
    args = parser.parse_args()
    limits = Limits(wall_clock_seconds=300, cpu_seconds=300, memory_bytes=4 << 30, max_processes=32,
                    max_file_bytes=256 << 20, env=python_runtime_env())
    with tempfile.TemporaryDirectory(prefix="bench-scoring-") as tmp:
        prepared = []
        for index, task_dir in enumerate(discover_task_dirs(args.tasks_dir)):
            pred, ref, params = prepare(task_dir, Path(tmp) / str(index))
            prepared.append((task_dir, pred, ref, params))
        n = len(prepared) * len(LEVELS)
        times: dict[str, list[float]] = {"bwrap": [], "none": []}
        for _ in range(args.repeat):  # alternate so that machine noise hits both backends alike
            for name in ("none", "bwrap"):
                times[name].append(score_all(name, prepared, limits))
    best = {name: min(values) for name, values in times.items()}
    sandboxed_ms, plain_ms = start_cost_ms(30, limits)
    print(f"tasks: {len(prepared)}, scored instances per round: {n} (all tasks x b1..b4)")
    for name in ("bwrap", "none"):
        print(f"{name:>6}: {n / best[name] * 60:8.1f} instances/min  (best of {args.repeat}: {best[name]:.1f} s)")
    print(f"sandbox overhead: {100 * (best['bwrap'] - best['none']) / best['none']:+.1f} %  (target < 10 %)")
    print(f"sandbox start cost: {sandboxed_ms - plain_ms:.1f} ms per instance "
          f"(bwrap /bin/true {sandboxed_ms:.1f} ms vs plain {plain_ms:.1f} ms, median of 30)")


if __name__ == "__main__":
    main()
