"""What the whole-run limit poll of the bwrap backend costs (run as root, as the workers do).

    .venv/bin/python bench/sandbox_watch.py --runs 10

Prints (a) the time of one poll (sum the resident memory and tmpfs of a process tree, size the
workdir), measured on the host's whole tree from PID 1 (far more than one sandbox holds), and
(b) the wall time of a short sandboxed Python run with the poll and without, median of --runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scoring.sandbox import Limits, python_runtime_env, python_runtime_mounts  # noqa: E402
from scoring.sandbox import bwrap as bwrap_module  # noqa: E402

CODE = "import time, numpy; a = numpy.ones(10**6); time.sleep(1.0); print(a.sum())"


def median_run(backend: bwrap_module.BwrapBackend, runs: int, limits: Limits) -> float:
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            result = backend.run([sys.executable, "-c", CODE], Path(tmp), python_runtime_mounts(), limits)
            times.append(time.perf_counter() - started)
            assert result.ok, result.stderr_text
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: the poll applies to the per-run uids only root can use")
    limits = Limits(wall_clock_seconds=60, cpu_seconds=60, memory_bytes=2 << 30, max_processes=32,
                    max_scratch_bytes=256 << 20, env=python_runtime_env())
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(200):
            Path(tmp, f"f{i}").write_bytes(b"x" * 4096)
        check = bwrap_module._whole_run_watch([1], Path(tmp), limits)  # the whole host's process tree
        assert check is not None
        started = time.perf_counter()
        for _ in range(100):
            check()
        per_poll = (time.perf_counter() - started) / 100
    processes = len(bwrap_module._process_tree(1))
    print(f"one poll: {per_poll * 1e3:.2f} ms over a tree of {processes} processes and 200 files in the workdir, "
          f"{per_poll / processes * 1e3:.2f} ms per process (a sandbox holds a handful; polled every 0.2 s)")

    backend = bwrap_module.BwrapBackend()
    with_poll = median_run(backend, args.runs, limits)
    original = bwrap_module._whole_run_watch
    bwrap_module._whole_run_watch = lambda *a, **k: None  # type: ignore[assignment]
    try:
        without_poll = median_run(backend, args.runs, limits)
    finally:
        bwrap_module._whole_run_watch = original
    print(f"sandboxed 1 s numpy run, median of {args.runs}: {with_poll:.3f} s with the poll, "
          f"{without_poll:.3f} s without ({(with_poll - without_poll) * 1e3:+.0f} ms)")


if __name__ == "__main__":
    main()
