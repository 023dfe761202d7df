"""Scale-out benchmark: results/min with one and with two worker hosts, and board latency while scoring.

    sudo .venv/bin/python bench/scale_out.py [--runs 4]

Builds the many-hosts layout of tests/hosts.py on this machine (network namespaces: a services host
with PostgreSQL, Redis and S3, a web host with gunicorn, two worker hosts with Celery and bwrap),
loads every task of tasks/ into seed42, runs the reference agent on it (B1–B4, not timed) and then,
twice, uploads and confirms `--runs` runs of that bundle through the web host and times them until
every result is scored: first with worker-2 stopped, then with both worker hosts (each Celery
concurrency 2). During both rounds two clients read the board (/leaderboard/) in a loop;
their p50/p95 latency is printed per round. Both "hosts" share this machine's cores, so the second host adds
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


class BoardReaders:
    """Two clients reading the board in a loop while a round scores: latencies and statuses."""

    def __init__(self, url: str):
        self.url, self.latencies, self.statuses = url, [], []  # type: ignore[var-annotated]
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._read) for _ in range(2)]

    def _read(self) -> None:
        session = requests.Session()
        session.trust_env = False
        while not self.stop.is_set():
            t0 = time.monotonic()
            self.statuses.append(session.get(f"{self.url}/leaderboard/", timeout=60).status_code)
            self.latencies.append(time.monotonic() - t0)

    def __enter__(self) -> BoardReaders:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def summary(self) -> str:
        cuts = statistics.quantiles(self.latencies, n=20) if len(self.latencies) >= 2 else self.latencies * 19
        bad = sum(1 for s in self.statuses if s >= 500)
        return (f"board p50 {statistics.median(self.latencies) * 1000:.0f} ms, p95 {cuts[18] * 1000:.0f} ms "
                f"({len(self.latencies)} requests, {bad} 5xx)")


def _round(layout: Layout, bundle: Path, runs: int, tag: str, results_per_run: int) -> tuple[float, float, str]:
    """(results/min, seconds, board summary) of `runs` runs, from the first scoring run's start to the
    last one's end as the database recorded them (the confirming process's own start is not counted)."""
    tokens = layout.users_with_tokens([f"bench-{tag}-{i}@scale.example" for i in range(runs)])
    ids = []
    for token in tokens:
        response = layout.upload(token, bundle)
        response.raise_for_status()
        ids.append(response.json()["submission_id"])
    with BoardReaders(layout.url) as board:
        layout.confirm(ids)
        state = layout.wait_scored(ids, timeout=1800)
    failed = [sid for sid, status in state.items() if status != "scored"]
    if failed:
        raise SystemExit(f"runs failed: {failed}")
    (elapsed,), = layout.sql(
        "SELECT extract(epoch FROM max(finished_at) - min(created_at))::float FROM scoring_scoringrun "
        "WHERE submission_id::text = ANY(%s)", ids)
    return runs * results_per_run / elapsed * 60, elapsed, board.summary()


def measure(layout: Layout, bundle: Path, runs: int, results_per_run: int) -> list[str]:
    """The bench's lines, on a started layout (worker-2 is stopped and started again). The board is
    read by two clients in both rounds, so the rounds differ only in the number of worker hosts."""
    second = layout.workers[1]
    second.stop("worker")
    one_rate, one_s, one_board = _round(layout, bundle, runs, "one", results_per_run)
    layout.start_worker(second)
    two_rate, two_s, two_board = _round(layout, bundle, runs, "two", results_per_run)
    total = runs * results_per_run
    return [
        f"1 worker host : {one_rate:7.0f} results/min  ({total} results in {one_s:.1f} s); during scoring {one_board}",
        f"2 worker hosts: {two_rate:7.0f} results/min  ({total} results in {two_s:.1f} s); during scoring {two_board}",
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
