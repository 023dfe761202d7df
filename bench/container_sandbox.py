"""Container start cost per scored result: the `docker` backend (podman here, on DOCKER_HOST)
against bwrap.

Two figures: the bare start cost (median wall time of `/bin/true` through each backend,
minus a plain subprocess), and the cost per scored result (real tasks, each solved by its
reference solver, scored at b1..b4 in each backend: one sandbox per result, and one sandbox per
instance running `score-batch` through the very function the worker calls; best of --repeat
alternating rounds, one instance at a time).

    DOCKER_HOST=unix:///run/asibench-podman.sock .venv/bin/python bench/container_sandbox.py [--tasks 4]

Needs the engine and image of scripts/ensure-container-engine.sh (`make test` sets them up).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "bench")]
os.environ.setdefault("DOCKER_HOST", "unix:///run/asibench-podman.sock")

from scoring_throughput import LEVELS, Prepared, per_instance, per_result  # noqa: E402

from scoring.generation import discover_task_dirs  # noqa: E402
from scoring.sandbox import Limits, get_backend, python_runtime_env  # noqa: E402

MODES = {"per result": per_result, "per instance": per_instance}


def start_cost_ms(samples: int, limits: Limits) -> dict[str, float]:
    """Median wall time of `/bin/true` per backend and as a plain subprocess, in milliseconds."""
    backends = {name: get_backend(name) for name in ("bwrap", "docker")}
    times: dict[str, list[float]] = {"bwrap": [], "docker": [], "plain": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(samples):
            for name, backend in backends.items():
                t0 = time.perf_counter()
                result = backend.run(["/bin/true"], Path(tmp), [], limits)
                times[name].append((time.perf_counter() - t0) * 1000)
                if not result.ok:
                    raise SystemExit(f"{name}: /bin/true failed: {result.stderr_text[-300:]}")
            t0 = time.perf_counter()
            subprocess.run(["/bin/true"], check=True)
            times["plain"].append((time.perf_counter() - t0) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks-dir", type=Path, default=REPO / "tasks")
    parser.add_argument("--tasks", type=int, default=4, help="how many catalog tasks to score (first N)")
    parser.add_argument("--repeat", type=int, default=2, help="alternating rounds per backend")
    parser.add_argument("--samples", type=int, default=20, help="/bin/true runs per backend")
    args = parser.parse_args()
    limits = Limits(wall_clock_seconds=300, cpu_seconds=300, memory_bytes=4 << 30, max_processes=32,
                    max_file_bytes=256 << 20, env=python_runtime_env())
    starts = start_cost_ms(args.samples, limits)
    with tempfile.TemporaryDirectory(prefix="bench-containers-") as tmp:
        prepared = [Prepared(task_dir, Path(tmp) / str(index), 42)
                    for index, task_dir in enumerate(discover_task_dirs(args.tasks_dir)[: args.tasks])]
        n = len(prepared) * len(LEVELS)
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.repeat):  # alternate so that machine noise hits both backends alike
            for mode, make in MODES.items():
                for name in ("bwrap", "docker"):
                    score = make(name)
                    started = time.perf_counter()
                    for item in prepared:
                        score(item)
                    times.setdefault((mode, name), []).append(time.perf_counter() - started)
    best = {key: min(values) for key, values in times.items()}
    print(f"start cost (/bin/true, median of {args.samples}): docker {starts['docker']:.0f} ms, "
          f"bwrap {starts['bwrap']:.0f} ms, plain subprocess {starts['plain']:.1f} ms")
    print(f"container start cost over bwrap: {starts['docker'] - starts['bwrap']:+.0f} ms per sandbox run")
    print(f"scored results per round: {n} ({len(prepared)} tasks x b1..b4), one instance at a time")
    for mode in MODES:
        for name in ("bwrap", "docker"):
            print(f"{mode:>12} {name:>6}: {best[(mode, name)] / n * 1000:7.0f} ms per scored result  "
                  f"(best of {args.repeat}: {best[(mode, name)]:.1f} s)")
        extra = best[(mode, "docker")] - best[(mode, "bwrap")]
        print(f"{mode:>12} docker - bwrap: {extra / n * 1000:+.0f} ms per scored result "
              f"({100 * extra / best[(mode, 'bwrap')]:+.0f} %)")


if __name__ == "__main__":
    main()
