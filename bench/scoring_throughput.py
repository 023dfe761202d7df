"""Scoring throughput: a 240-result run (60 instances x b1..b4) as the Celery workers score it.

Generates 60 instances (the catalog's 12 tasks over 5 seeds), solves each with its task's reference
solver (not timed), then scores all 4 levels of every instance, with `--workers` sandboxes in flight
at once (the worker's Celery concurrency, 2 on 2 cores):
  engine alone      score_instance in this process, no subprocess, no sandbox (the floor)
  worker path       one sandbox per (submission, task): every result of the task's instances in one
                    `scoring.engine score-batch` (a forked child per result), through the very
                    function the worker calls (scoring.pipeline.staged_score_in_sandbox); per backend
  per instance      one sandbox per instance (how the worker scored before issue 35), --per-instance
  per result        one sandbox + interpreter per result (how it scored before that), --per-result
Each backend scores one task's group once, untimed, before anything is timed (a warm start, as a running
worker's). Prints wall time, results/min, the ratio to the engine alone (target <= 2.0 for bwrap) and of docker
to bwrap (target <= 2), the load average around each way, and where a result's time goes: sandbox
start, interpreter and imports, scoring, and hand-back (forks, result lines, reading them back, and
whatever the machine's other load took, less what the batch saves by reading the task definition
once where the engine alone reads it per result), in milliseconds of one worker lane per result.

    .venv/bin/python bench/scoring_throughput.py [--instances 60] [--workers 2] [--backends bwrap,docker]
        [--cache DIR]   (keep the solved instances there and reuse them on the next run)
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
from collections.abc import Callable
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
from scoring.pipeline import (  # noqa: E402
    StagedResult,
    _engine_argv,
    _interpret,
    results_score_in_sandbox,
    staged_score_in_sandbox,
)
from scoring.sandbox import SandboxBackend, get_backend  # noqa: E402
from scoring.sandbox.limits import scoring_limits  # noqa: E402

Score = Callable[..., None]


class Prepared:
    """One solved instance: its task, reference, and one pred dir per level in its own workdir (the
    per-instance ways) and in its task's group workdir (the worker path)."""

    def __init__(self, task_dir: Path, root: Path, seed: int, group_work: Path):
        self.task_dir, self.root = task_dir, root
        params = sample_params(load_task(task_dir), seed)
        instance = root / "instance"
        if not (root / "prepared.json").exists():
            self._solve(task_dir, root, params)
        meta = json.loads((instance / "instance_meta.json").read_text())
        self.params = meta.get("params_used", params)
        self.reference = instance / "reference"
        self.workdir = root / "work"
        self.preds = {level: self._stage(self.workdir / f"pred-{level}", root / "outputs") for level in LEVELS}
        self.group_work = group_work
        self.group_preds = {level: self._stage(group_work / f"pred-{root.name}-{level}", root / "outputs")
                            for level in LEVELS}

    def _stage(self, pred: Path, outputs: Path) -> Path:
        if pred.is_dir():
            return pred
        return stage_prediction_dir(self.root / "instance" / "data", outputs, pred)

    @staticmethod
    def _solve(task_dir: Path, root: Path, params: dict) -> None:
        instance = root / "instance"
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run([sys.executable, str(task_dir / "generate_gt.py"), "--output-dir", str(instance),
                        "--params", json.dumps(params)], check=True, capture_output=True)
        workspace = root / "workspace"
        shutil.copytree(instance / "data", workspace / "data")
        before = {p.relative_to(workspace) for p in workspace.rglob("*")}
        subprocess.run([sys.executable, str(task_dir / "solution" / "solve.py"), "--workspace", str(workspace)],
                       check=True, capture_output=True)
        outputs = root / "outputs"
        outputs.mkdir()
        for path in workspace.rglob("*"):
            rel = path.relative_to(workspace)
            if path.is_file() and rel not in before:
                (outputs / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, outputs / rel)
        (root / "prepared.json").write_text("{}")


def check(label: str, task_dir: Path, outcome: dict) -> None:
    if outcome["outcome"] != "scored":
        raise SystemExit(f"{label}: scoring {task_dir.name} failed: {outcome['reason']}")


def engine_alone(item: Prepared) -> None:
    for level, pred in item.preds.items():
        result = score_instance(item.task_dir, pred, item.reference, item.params, level)
        if result.get("final_score") is None:
            raise SystemExit(f"engine: scoring {item.task_dir.name} {level} failed: {result.get('error')}")


def worker_path(backend: SandboxBackend) -> Score:
    def score(group: list[Prepared]) -> None:
        staged = {index: StagedResult(level, pred, item.reference, item.params)
                  for index, (item, level, pred) in enumerate(
                      (item, level, pred) for item in group for level, pred in item.group_preds.items())}
        for outcome in staged_score_in_sandbox(backend, group[0].task_dir, group[0].group_work, staged).values():
            check("worker path", group[0].task_dir, outcome)
    return score


def per_instance(backend: SandboxBackend) -> Score:
    def score(item: Prepared) -> None:
        staged = {index: (level, pred) for index, (level, pred) in enumerate(item.preds.items())}
        outcomes = results_score_in_sandbox(backend, item.task_dir, item.reference, item.params, item.workdir, staged)
        for outcome in outcomes.values():
            check("per instance", item.task_dir, outcome)
    return score


def per_result(backend: SandboxBackend) -> Score:
    def score(item: Prepared) -> None:
        for level, pred in item.preds.items():
            result = backend.run(_engine_argv(backend, item.task_dir, pred, item.reference, item.params, level),
                                 item.workdir, [item.task_dir, item.reference.parent, *backend.runtime_mounts()],
                                 scoring_limits(settings))
            check("per result", item.task_dir, _interpret(result.stdout_text))
    return score


def timed(score: Score, units: list, workers: int, processes: bool = False) -> float:
    started = time.perf_counter()
    # The sandboxed ways wait on child processes, so threads suffice; the engine alone computes in
    # Python and needs processes (forked, so each pays its own imports once, like a worker).
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) if processes \
        else ThreadPoolExecutor(workers)
    with pool:
        list(pool.map(score, units))
    return time.perf_counter() - started


def _median_ms(run: Callable[[], None], samples: int) -> float:
    times = []
    for _ in range(samples):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def start_cost_ms(backend: SandboxBackend, samples: int) -> float:
    """Median wall time of `true` in the sandbox less that of a plain subprocess, in milliseconds."""
    with tempfile.TemporaryDirectory() as tmp:
        sandboxed = _median_ms(lambda: backend.run(["/bin/true"], Path(tmp), [], scoring_limits(settings)), samples)
    return sandboxed - _median_ms(lambda: subprocess.run(["/bin/true"], check=True), samples)


def imports_ms(backend: SandboxBackend, group: list[Prepared], samples: int) -> float:
    """Median wall time of the batch engine's start in this group's sandbox (interpreter, engine, the
    task's preloaded modules), less the sandbox's own start (`true` in it)."""
    item = group[0]
    mounts = [item.task_dir, *backend.runtime_mounts()]
    code = ("import sys; from pathlib import Path; import scoring.engine.cli; "
            "from scoring.engine.preload import preload_task_imports; preload_task_imports(Path(sys.argv[1]))")
    limits = scoring_limits(settings)
    engine = _median_ms(lambda: backend.run([*backend.python_command(), "-c", code, str(item.task_dir)],
                                            item.group_work, mounts, limits), samples)
    bare = _median_ms(lambda: backend.run(["/bin/true"], item.group_work, mounts, limits), samples)
    return engine - bare


def prepare(args: argparse.Namespace, root: Path) -> list[Prepared]:
    task_dirs = discover_task_dirs(args.tasks_dir)
    slots = [(task_dirs[i % len(task_dirs)], 42 + i // len(task_dirs)) for i in range(args.instances)]
    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        return list(pool.map(lambda s: Prepared(s[1][0], root / str(s[0]), s[1][1],
                                                root / f"group-{s[1][0].name}" / "work"), enumerate(slots)))


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks-dir", type=Path, default=REPO / "tasks")
    parser.add_argument("--instances", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2, help="sandboxes scoring at once (Celery concurrency)")
    parser.add_argument("--backends", default="bwrap,docker", help="comma-separated; docker needs the engine")
    parser.add_argument("--per-instance", action="store_true", help="also the one-sandbox-per-instance way")
    parser.add_argument("--per-result", action="store_true", help="also the slow one-sandbox-per-result way")
    parser.add_argument("--cache", type=Path, default=None, help="keep the solved instances here and reuse them")
    args = parser.parse_args()
    backends = [get_backend(name) for name in args.backends.split(",") if name]
    with tempfile.TemporaryDirectory(prefix="bench-scoring-") as tmp:
        root = args.cache or Path(tmp)
        # Pred dirs are staged afresh each run; the solved instances are kept.
        for stale in root.glob("*/work"):
            shutil.rmtree(stale)
        started = time.perf_counter()
        prepared = prepare(args, root)
        groups: dict[Path, list[Prepared]] = {}
        for item in prepared:
            groups.setdefault(item.task_dir, []).append(item)
        n = len(prepared) * len(LEVELS)
        print(f"{len(prepared)} instances of {len(groups)} tasks x {len(LEVELS)} levels = {n} results "
              f"(prepared in {time.perf_counter() - started:.0f} s); {args.workers} at once on "
              f"{os.cpu_count()} CPUs; {load()} (shared machine: expect noise)")
        ways: list[tuple[str, Score, list, bool]] = [("engine alone", engine_alone, prepared, True)]
        for backend in backends:
            ways.append((f"worker path ({backend.name})", worker_path(backend), list(groups.values()), False))
            if args.per_instance:
                ways.append((f"per instance ({backend.name})", per_instance(backend), prepared, False))
            if args.per_result:
                ways.append((f"per result ({backend.name})", per_result(backend), prepared, False))
        # Untimed, once per backend: a running worker has started sandboxes before; the first container of
        # a freshly built image reads its layers from disk (up to 0.5 s more on that one run).
        for backend in backends:
            worker_path(backend)(list(groups.values())[0])
        times = {}
        for label, score, units, processes in ways:
            times[label] = timed(score, units, args.workers, processes=processes)
            print(f"  {label:<26} {times[label]:7.1f} s  {n / times[label] * 60:8.1f} results/min  "
                  f"x{times[label] / times['engine alone']:.2f} the engine alone   ({load()})", flush=True)
        lane_ms = {label: seconds * args.workers * 1000 / n for label, seconds in times.items()}
        floor = lane_ms["engine alone"]
        print(f"where a result's time goes (ms of one worker lane per result; {len(groups)} sandboxes "
              f"for {n} results):")
        for backend in backends:
            start = start_cost_ms(backend, 10)
            imports = statistics.mean(imports_ms(backend, group, 3) for group in groups.values())
            per_sandbox = len(groups) / n
            total = lane_ms[f"worker path ({backend.name})"]
            handback = total - floor - (start + imports) * per_sandbox
            print(f"  {backend.name:<7} total {total:6.1f} = sandbox start {start * per_sandbox:5.1f} "
                  f"({start:.0f} ms each) + interpreter and imports {imports * per_sandbox:5.1f} ({imports:.0f} ms "
                  f"each) + scoring {floor:5.1f} + hand-back {handback:5.1f}")
        print(f"  ({load()})")
    bwrap_ratio = times.get("worker path (bwrap)", 0) / times["engine alone"]
    if "worker path (bwrap)" in times:
        print(f"target: worker path (bwrap) <= 2.0x the engine alone: x{bwrap_ratio:.2f} -> "
              f"{'met' if bwrap_ratio <= 2.0 else 'NOT met'}")
    if "worker path (docker)" in times and "worker path (bwrap)" in times:
        docker_ratio = times["worker path (docker)"] / times["worker path (bwrap)"]
        print(f"target: worker path (docker) <= 2x the bwrap backend: x{docker_ratio:.2f} -> "
              f"{'met' if docker_ratio <= 2.0 else 'NOT met'}")


if __name__ == "__main__":
    main()
