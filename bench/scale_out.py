"""Scale-out benchmark: results/min with one and with two worker hosts, and board latency while scoring.

    sudo .venv/bin/python bench/scale_out.py [--runs 4]

Builds the many-hosts layout of tests/hosts.py on this machine (network namespaces: a services host
with PostgreSQL, Redis and S3, a web host with gunicorn, two worker hosts with Celery and bwrap),
loads every task of tasks/ into seed42, runs the reference agent on it (B1–B4, not timed) and then,
twice, uploads and confirms `--runs` runs of that bundle through the web host and times them until
every result is scored: first with worker-2 stopped, then with both worker hosts (each Celery
concurrency 2). During the second round two clients read the board (/leaderboard/) in a loop;
their p50/p95 latency is printed. Both "hosts" share this machine's cores, so the second host adds
parallelism only as far as the cores allow: the figure shows the work spreads, not a 2x speed-up.
Needs root (ip netns). Leaves nothing behind.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.hosts import Layout  # noqa: E402
from tests.support import REFERENCE_AGENT, agent_results, bundle_of  # noqa: E402

RESULTS_PER_BUNDLE_LEVELS = 4


def _round(layout: Layout, bundle: Path, runs: int, tag: str, results_per_run: int) -> tuple[float, float]:
    """(results/min, seconds) of `runs` runs from confirmation until every one ended."""
    tokens = layout.users_with_tokens([f"bench-{tag}-{i}@scale.example" for i in range(runs)])
    ids = []
    for token in tokens:
        response = layout.upload(token, bundle)
        response.raise_for_status()
        ids.append(response.json()["submission_id"])
    started = time.monotonic()
    layout.confirm(ids)
    state = layout.wait_scored(ids, timeout=1800)
    elapsed = time.monotonic() - started
    failed = [sid for sid, status in state.items() if status != "scored"]
    if failed:
        raise SystemExit(f"runs failed: {failed}")
    return runs * results_per_run / elapsed * 60, elapsed


def measure(layout: Layout, bundle: Path, runs: int, results_per_run: int) -> list[str]:
    """The bench's lines, on a started layout (worker-2 is stopped and started again)."""
    second = layout.workers[1]
    second.stop("worker")
    one_rate, one_s = _round(layout, bundle, runs, "one", results_per_run)
    layout.start_worker(second)
    latencies: list[float] = []
    statuses: list[int] = []
    stop = threading.Event()

    def read_board() -> None:
        session = requests.Session()
        session.trust_env = False
        while not stop.is_set():
            t0 = time.monotonic()
            statuses.append(session.get(f"{layout.url}/leaderboard/", timeout=60).status_code)
            latencies.append(time.monotonic() - t0)

    readers = [threading.Thread(target=read_board) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        two_rate, two_s = _round(layout, bundle, runs, "two", results_per_run)
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    cuts = statistics.quantiles(latencies, n=20) if len(latencies) >= 2 else latencies * 19
    bad = sum(1 for s in statuses if s >= 500)
    total = runs * results_per_run
    return [
        f"1 worker host : {one_rate:7.0f} results/min  ({total} results in {one_s:.1f} s)",
        f"2 worker hosts: {two_rate:7.0f} results/min  ({total} results in {two_s:.1f} s)",
        f"board during scoring: p50 {statistics.median(latencies) * 1000:.0f} ms, p95 {cuts[18] * 1000:.0f} ms "
        f"({len(latencies)} requests, {bad} 5xx)",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="runs per round (each every task x B1-B4)")
    args = parser.parse_args()
    layout = Layout()
    try:
        layout.start()
        with tempfile.TemporaryDirectory(prefix="asb-bench-") as tmp:
            instances = layout.pull_instances(Path(tmp) / "instances")
            tasks = len(list(instances.iterdir()))
            results = agent_results(instances, Path(tmp) / "reference", REFERENCE_AGENT)
            bundle = bundle_of(results, Path(tmp) / "bundles" / "reference.tar.gz")
            for line in measure(layout, bundle, args.runs, tasks * RESULTS_PER_BUNDLE_LEVELS):
                print(line, flush=True)
    finally:
        layout.stop()
        layout.cleanup()


if __name__ == "__main__":
    main()
