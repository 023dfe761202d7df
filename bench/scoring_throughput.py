"""Scoring throughput: a 240-result run (60 instances x b1..b4) as the Celery workers score it.

Generates 60 instances (the catalog's tasks over several seeds), solves each with its task's
reference solver (not timed), then scores all 4 levels of every instance three ways, with
`--workers` instances in flight at once (the worker's Celery concurrency, 2 on 2 cores):
  engine alone   score_instance in this process, no subprocess, no sandbox (the floor)
  per result     one bwrap sandbox + interpreter per result (how scoring worked before)
  per instance   one bwrap sandbox per instance running `scoring.engine score-batch`, through the
                 very function the worker calls (scoring.pipeline.results_score_in_sandbox)
Prints wall time, results/min and the per-result overhead against the engine alone, plus the
sandbox's own start cost. Target: the per-instance run under 60 s on 2 cores.

    .venv/bin/python bench/scoring_throughput.py [--instances 60] [--workers 2] [--backend bwrap]
"""

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("ASIBENCH_VAR_DIR", tempfile.mkdtemp(prefix="bench-scoring-var-"))

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from contracts import PROMPT_LEVELS as LEVELS  # noqa: E402
from scoring.engine import load_task, sample_params, score_instance, stage_prediction_dir  # noqa: E402
from scoring.generation import discover_task_dirs  # noqa: E402
from scoring.pipeline import _engine_argv, _interpret, results_score_in_sandbox  # noqa: E402
from scoring.sandbox import get_backend  # noqa: E402
from scoring.sandbox.limits import scoring_limits  # noqa: E402


class Prepared:
    """One solved instance: its task, reference and one pred dir per level (all in `workdir`)."""

    def __init__(self, task_dir: Path, root: Path, seed: int):
        self.task_dir = task_dir
        params = sample_params(load_task(task_dir), seed)
        instance = root / "instance"
        subprocess.run([sys.executable, str(task_dir / "generate_gt.py"), "--output-dir", str(instance),
                        "--params", json.dumps(params)], check=True, capture_output=True)
        meta = json.loads((instance / "instance_meta.json").read_text())
        self.params = meta.get("params_used", params)
        self.reference = instance / "reference"
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
        self.workdir = root / "work"
        self.preds = {level: stage_prediction_dir(instance / "data", outputs, self.workdir / f"pred-{level}")
                      for level in LEVELS}


def check(label: str, item: Prepared, outcome: dict) -> None:
    if outcome["outcome"] != "scored":
        raise SystemExit(f"{label}: scoring {item.task_dir.name} failed: {outcome['reason']}")


def engine_alone(item: Prepared) -> None:
    for level, pred in item.preds.items():
        result = score_instance(item.task_dir, pred, item.reference, item.params, level)
        if result.get("final_score") is None:
            raise SystemExit(f"engine: scoring {item.task_dir.name} {level} failed: {result.get('error')}")


def per_result(backend_name: str):  # noqa: ANN201
    backend = get_backend(backend_name)

    def score(item: Prepared) -> None:
        for level, pred in item.preds.items():
            result = backend.run(_engine_argv(backend, item.task_dir, pred, item.reference, item.params, level),
                                 item.workdir, [item.task_dir, item.reference.parent, *backend.runtime_mounts()],
                                 scoring_limits(settings))
            check("per result", item, _interpret(result.stdout_text))
    return score


def per_instance(backend_name: str):  # noqa: ANN201
    backend = get_backend(backend_name)

    def score(item: Prepared) -> None:
        staged = {index: (level, pred) for index, (level, pred) in enumerate(item.preds.items())}
        outcomes = results_score_in_sandbox(backend, item.task_dir, item.reference, item.params, item.workdir, staged)
        for outcome in outcomes.values():
            check("per instance", item, outcome)
    return score


def timed(score, prepared: list[Prepared], workers: int, processes: bool = False) -> float:  # noqa: ANN001
    started = time.perf_counter()
    # The sandboxed ways wait on child processes, so threads suffice; the engine alone computes in
    # Python and needs processes (forked, so each pays its own imports once, like a worker).
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) if processes \
        else ThreadPoolExecutor(workers)
    with pool:
        list(pool.map(score, prepared))
    return time.perf_counter() - started


def start_cost_ms(backend_name: str, samples: int) -> tuple[float, float]:
    """Median wall time of `true` in the sandbox and as a plain subprocess, in milliseconds."""
    backend, sandboxed, plain = get_backend(backend_name), [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(samples):
            t0 = time.perf_counter()
            backend.run(["/bin/true"], Path(tmp), [], scoring_limits(settings))
            sandboxed.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            subprocess.run(["/bin/true"], check=True)
            plain.append((time.perf_counter() - t0) * 1000)
    return statistics.median(sandboxed), statistics.median(plain)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks-dir", type=Path, default=REPO / "tasks")
    parser.add_argument("--instances", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2, help="instances scored at once (Celery concurrency)")
    parser.add_argument("--backend", default="bwrap")
    parser.add_argument("--skip-per-result", action="store_true", help="skip the slow one-sandbox-per-result way")
    args = parser.parse_args()
    task_dirs = discover_task_dirs(args.tasks_dir)
    with tempfile.TemporaryDirectory(prefix="bench-scoring-") as tmp:
        started = time.perf_counter()
        slots = [(task_dirs[i % len(task_dirs)], 42 + i // len(task_dirs)) for i in range(args.instances)]
        with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            prepared = list(pool.map(lambda s: Prepared(s[1][0], Path(tmp) / str(s[0]), s[1][1]), enumerate(slots)))
        n = len(prepared) * len(LEVELS)
        print(f"{len(prepared)} instances of {len(task_dirs)} tasks x {len(LEVELS)} levels = {n} results "
              f"(prepared in {time.perf_counter() - started:.0f} s); {args.workers} at once on "
              f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} (shared machine: expect noise)")
        ways = [("engine alone", engine_alone),
                (f"per instance ({args.backend})", per_instance(args.backend))]
        if not args.skip_per_result:
            ways.append((f"per result ({args.backend})", per_result(args.backend)))
        times = {}
        for label, score in ways:
            times[label] = timed(score, prepared, args.workers, processes=label == "engine alone")
    floor = times["engine alone"]
    for label, seconds in times.items():
        overhead = (seconds - floor) / n * args.workers * 1000
        print(f"  {label:<26} {seconds:7.1f} s  {n / seconds * 60:8.1f} results/min"
              + ("" if label == "engine alone" else f"  overhead {overhead:+7.1f} ms per result "
                 f"({100 * (seconds - floor) / floor:+.0f} % over the engine alone)"))
    target = times[f"per instance ({args.backend})"]
    print(f"target: {n} results in under 60 s on 2 cores: {target:.1f} s -> {'met' if target < 60 else 'NOT met'}")
    sandboxed_ms, plain_ms = start_cost_ms(args.backend, 20)
    print(f"sandbox start cost: {sandboxed_ms - plain_ms:.1f} ms ({args.backend} /bin/true {sandboxed_ms:.1f} ms "
          f"vs plain {plain_ms:.1f} ms, median of 20)")


if __name__ == "__main__":
    main()
