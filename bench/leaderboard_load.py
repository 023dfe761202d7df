"""Leaderboard load benchmark: the public board under gunicorn, next to the same server's /healthz.

    .venv/bin/python bench/leaderboard_load.py                       # 1,000 runs x 240 instances
    .venv/bin/python bench/leaderboard_load.py --runs 200 --duration 5 --reseed

Seeds a dedicated PostgreSQL database (default `asibench_bench`, kept between invocations; use
--reseed to rebuild) with published runs of 240 scored results each (60 tasks in 11 domains x
B1-B4), built with bulk_create: submissions, entries, scoring runs, instance scores, and board
rows made by the same snapshot function `run_review_publish` uses. Then serves the Portal with
gunicorn and drives it from a second process: a bounded Python client on loopback with N
keep-alive connections for a fixed time per URL. Prints req/s, p50 and p99 for each URL, and the
board-to-/healthz and JSON-to-/healthz throughput ratios (/healthz is the ceiling: the same server
doing almost nothing but checking the database, broker and storage).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DOMAINS = ("astronomy", "biology", "biostat", "chemistry", "materials", "math", "medicine", "robotics", "physics",
           "geoscience", "neuroscience")
LEVELS = ("b1", "b2", "b3", "b4")
URLS = ("/leaderboard/", "/leaderboard/?domain=chemistry&sort=b3", "/api/v1/leaderboard", "/healthz")


# --- the load client (runs in its own process) --------------------------------------------------

def client_main(base: str, path: str, duration: float, concurrency: int) -> None:
    host, port = base.removeprefix("http://").split(":")
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.perf_counter() + duration

    def worker() -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        mine: list[float] = []
        bad = 0
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            try:
                conn.request("GET", path, headers={"Connection": "keep-alive"})
                response = conn.getresponse()
                response.read()
                if response.status != 200:
                    bad += 1
            except (OSError, http.client.HTTPException):
                bad += 1
                conn.close()
                conn = http.client.HTTPConnection(host, int(port), timeout=30)
                continue
            mine.append(time.perf_counter() - started)
        conn.close()
        with lock:
            latencies.extend(mine)
            errors[0] += bad

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    latencies.sort()
    q = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else latencies * 99
    print(json.dumps({"path": path, "requests": len(latencies), "errors": errors[0], "seconds": elapsed,
                      "rps": len(latencies) / elapsed, "p50_ms": q[49] * 1000, "p99_ms": q[98] * 1000}))


# --- seeding ------------------------------------------------------------------------------------

def ensure_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def seed(runs: int, tasks_per_domain: list[int]) -> None:
    import hashlib
    import random

    from django.utils import timezone

    from leaderboard.models import LeaderboardEntry, ReviewAction, RunReview
    from leaderboard.selectors import board_cache_invalidate
    from leaderboard.services import entry_snapshot
    from portal.accounts.models import User
    from portal.accounts.services import user_make_maintainer
    from portal.submissions.models import Submission, SubmissionEntry
    from scoring.aggregation import ScoredResult, aggregate
    from scoring.models import Dataset, Instance, InstanceScore, ScoringRun, Task

    t0 = time.perf_counter()
    for model in (LeaderboardEntry, ReviewAction, RunReview, InstanceScore, ScoringRun, SubmissionEntry, Submission):
        model.objects.all().delete()
    Instance.objects.all().delete()
    Task.objects.all().delete()
    Dataset.objects.all().delete()
    owner = User.objects.filter(email="bench-owner@example.org").first() or User.objects.create_user(
        email="bench-owner@example.org", password=None)
    maintainer = User.objects.filter(email="bench-maintainer@example.org").first() or User.objects.create_user(
        email="bench-maintainer@example.org", password=None)
    user_make_maintainer(user=maintainer)
    dataset = Dataset.objects.create(name="seed42", seed=42, official=True, accepted_sandbox_modes=["os"])
    tasks = Task.objects.bulk_create(
        Task(id=f"{d}.task_{i}", domain=d, name=f"{d} {i}", version="1", status="final", revision=1,
             source_hash="0" * 64, source_dir="/nonexistent")
        for d, count in zip(DOMAINS, tasks_per_domain, strict=True) for i in range(count))
    instances = Instance.objects.bulk_create(
        Instance(instance_id=f"{t.id}__seed42", dataset=dataset, task=t, task_revision=1, task_source_hash="0" * 64,
                 input_archive="x", input_sha256="0" * 64, input_bytes=1, reference_archive="x",
                 reference_sha256="0" * 64, generator_hash="0" * 64) for t in tasks)
    now = timezone.now()
    rng = random.Random(42)
    provenance = {"agent": {"agent_name": "bench"}, "sandbox": {
        "requested_mode": "os", "effective_mode": "os", "enforcement_status": "fail_closed",
        "verification_status": "docker_container", "image_identity": "sha256:" + "0" * 64}}
    batch = 50  # runs per round trip group: bounded memory, few large INSERTs
    for start in range(0, runs, batch):
        subs = [Submission(owner=owner, dataset=dataset, status="scored", archive=f"bench/{k}.tar.gz",
                           archive_sha256=hashlib.sha256(str(k).encode()).hexdigest(), archive_bytes=1,
                           framework_version="0.2.0", agent=f"agent-{k % 97}", model=f"model-{k}",
                           effort=("low", "medium", "high")[k % 3], sandbox="os", scored_at=now,
                           report={"tasks_covered": len(tasks), "tasks_in_dataset": len(tasks)})
                for k in range(start, min(start + batch, runs))]
        Submission.objects.bulk_create(subs)
        entries = [SubmissionEntry(submission=s, base_name=f"{i.instance_id}__{lv}", instance=i, task_id=i.task_id,
                                   prompt_level=lv, result_status="completed", provenance=provenance,
                                   outputs=[{"path": "out.npy", "member": "m", "sha256": "0" * 64, "bytes": 1}])
                   for s in subs for i in instances for lv in LEVELS]
        SubmissionEntry.objects.bulk_create(entries, batch_size=5000)
        skill = {s.id: rng.uniform(-15, 15) for s in subs}
        base = {"b1": 51.0, "b2": 30.0, "b3": 27.0, "b4": 27.0}
        pct = {e.id: round(max(0.0, min(100.0, base[e.prompt_level] + skill[e.submission_id] + rng.gauss(0, 20))), 3)
               for e in entries}
        by_sub: dict[Any, list[SubmissionEntry]] = {}
        for e in entries:
            by_sub.setdefault(e.submission_id, []).append(e)
        scorings = [ScoringRun(submission=s, number=1, status="complete", finished_at=now, aggregate=aggregate(
            ScoredResult(e.instance_id, e.task_id, e.prompt_level, 1, True, pct[e.id]) for e in by_sub[s.id]))
            for s in subs]
        ScoringRun.objects.bulk_create(scorings)
        InstanceScore.objects.bulk_create(
            (InstanceScore(scoring_run=r, entry=e, outcome="scored", final_score=pct[e.id], max_score=100,
                           percent=pct[e.id], hard_gates_passed=True, engine_version="1.0.0", task_revision=1,
                           reference_sha256="0" * 64, sandbox_backend="docker")
             for r in scorings for e in by_sub[r.submission_id]), batch_size=5000)
        LeaderboardEntry.objects.bulk_create(
            LeaderboardEntry(submission=s, scoring_run=r, dataset=dataset, display_name=f"{s.agent} · {s.model}",
                             owner=owner, agent=s.agent, model=s.model, effort=s.effort, sandbox=s.sandbox,
                             **entry_snapshot(s, r)) for s, r in zip(subs, scorings, strict=True))
        RunReview.objects.bulk_create(RunReview(submission=s, state="published", display_name=s.model,
                                                decided_by=maintainer) for s in subs)
        ReviewAction.objects.bulk_create(ReviewAction(submission=s, actor=maintainer, kind="publish",
                                                      display_name=s.model, scoring_number=1) for s in subs)
        print(f"  seeded {min(start + batch, runs)}/{runs} runs ({time.perf_counter() - t0:.0f}s)", flush=True)
    board_cache_invalidate()
    print(f"seeded {runs} published runs x {len(instances) * 4} results = {InstanceScore.objects.count()} "
          f"instance scores in {time.perf_counter() - t0:.1f}s")


# --- the server and the run ---------------------------------------------------------------------

def wait_up(url: str, timeout: float = 60) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=3).read()
            return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"{url} did not come up")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL",
                                                                 "postgres://postgres@127.0.0.1:5432/asibench_bench"))
    parser.add_argument("--reseed", action="store_true", help="rebuild the data even if it is already there")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of load per URL")
    parser.add_argument("--concurrency", type=int, default=8, help="client connections")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()

    # Production settings, but plain HTTP on loopback: no redirect to https (a TLS proxy's job).
    env = dict(os.environ, DATABASE_URL=args.database_url, DEBUG="0", LOG_LEVEL="WARNING", SECURE_SSL_REDIRECT="0",
               SECRET_KEY="bench-" + "k" * 60, ASIBENCH_VAR_DIR=str(REPO / "var" / "bench"),
               ALLOWED_HOSTS="127.0.0.1,localhost", CELERY_BROKER_URL=os.environ.get(
                   "CELERY_BROKER_URL", "redis://127.0.0.1:6379/13"))
    os.environ.update(env)
    ensure_database(args.database_url)
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    call_command("collectstatic", verbosity=0, interactive=False)
    from leaderboard.models import LeaderboardEntry
    from scoring.models import InstanceScore

    if args.reseed or LeaderboardEntry.objects.count() != args.runs:
        seed(args.runs, [6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5])  # 60 tasks, 240 results per run
    print(f"data: {LeaderboardEntry.objects.count()} published runs, {InstanceScore.objects.count()} instance scores")
    from leaderboard.selectors import board_cache_invalidate

    board_cache_invalidate()
    from django.db import connections

    connections.close_all()

    base = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi:application", "--bind", f"127.0.0.1:{args.port}",
         "--workers", str(args.workers), "--threads", str(args.threads), "--log-level", "warning"],
        cwd=REPO, env=env)
    try:
        wait_up(base + "/healthz")
        import urllib.request

        started = time.perf_counter()
        urllib.request.urlopen(base + "/leaderboard/", timeout=120).read()
        cold = (time.perf_counter() - started) * 1000
        results = {}
        for path in URLS:
            urllib.request.urlopen(base + path, timeout=120).read()  # warm this view in every worker
            out = subprocess.run([sys.executable, __file__, "--client", base, path, str(args.duration),
                                  str(args.concurrency)], capture_output=True, text=True, check=True, env=env)
            results[path] = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        server.terminate()
        server.wait(timeout=30)

    print(f"\ngunicorn {args.workers} workers x {args.threads} threads; client: {args.concurrency} keep-alive "
          f"connections, {args.duration:.0f}s per URL, separate process, loopback; {os.cpu_count()} CPUs shared")
    print(f"cold first /leaderboard/ (after cache invalidation): {cold:.0f} ms")
    print(f"{'URL':42} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}")
    for path, r in results.items():
        print(f"{path:42} {r['rps']:8.1f} {r['p50_ms']:8.1f} {r['p99_ms']:8.1f} {r['errors']:7d}")
    health = results["/healthz"]
    print()
    for label, path in (("board", "/leaderboard/"), ("JSON (first page)", "/api/v1/leaderboard")):
        r = results[path]
        print(f"{label} / healthz throughput ratio: {r['rps'] / health['rps']:.2f} "
              f"(p50 {r['p50_ms']:.1f} vs {health['p50_ms']:.1f} ms; target >= 1.0)")


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--client":
        client_main(sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))
    else:
        main()
