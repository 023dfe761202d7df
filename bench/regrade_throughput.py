"""Re-grade throughput: stored results of published runs re-graded against a task's fixed revision.

    .venv/bin/python bench/regrade_throughput.py [--results 10000] [--workers 1,2] [--batch 50]

Seeds a dedicated PostgreSQL database (default `asibench_regrade_bench`, rebuilt each time) with the health
fixture task (tests/scoring/health/health_task) loaded with a scorer bug, and `--results / 4` published runs
of it on seed42 (B1-B4 each), every run with its own stored bundle (real tar.gz archives in storage, outputs
with the sha256 intake would have recorded) and its first scoring. Then publishes the fix (a new revision,
generated in the sandbox) and, for each worker count, starts a real Celery worker with that many processes,
calls `regrade_start` as the publication hook does, and waits until every board entry is re-graded, while a
thread reads the public board page the whole time. Prints results per minute per worker count, the board's
read latency during the re-grade (p50/p99/max, failed reads) and checks the outcome (new scores, old scoring
kept). Target: 10,000 results in at most 10 minutes on this machine.

Measured on the 2-core development VM (shared with other work), 50 runs per sandbox: one worker process
10,000 results in 465 s (1,290 results/min, 7.8 min), two in 364 s (1,650 results/min, 6.1 min; 1.28x,
the two cores also run PostgreSQL, the bench and its board reader); the board answered every read
(p50 10 ms; p99 4-6 s: the 2,500-row board rebuilt cold after each re-graded chunk).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "scoring" / "health" / "health_task"
TASK = "demo.health_sum"
INSTANCE = f"{TASK}__seed42"
LEVELS = ("b1", "b2", "b3", "b4")
BUG = ("ref_file: total_ref.npy", "ref_file: count_ref.npy")


def ensure_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def task_root(base: Path, buggy: bool) -> Path:
    target = base / "published" / "demo" / "health_sum"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(FIXTURE, target, ignore=shutil.ignore_patterns("__pycache__"))
    if buggy:
        evaluation = target / "task_eval.yaml"
        evaluation.write_text(evaluation.read_text().replace(*BUG))
    return base / "published"


def bundle(k: int, total: float) -> tuple[bytes, list[dict[str, Any]]]:
    """Run k's stored bundle: one total.npy per level (the right sum, nudged per run so no two runs share
    bytes) and the output records intake would have made of it."""
    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.array([total + k * 1e-9]))
    data = buffer.getvalue()
    out = io.BytesIO()
    records = []
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for level in LEVELS:
            member = f"{INSTANCE}__{level}.outputs/total.npy"
            info = tarfile.TarInfo(f"run-{k}/{member}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            records.append({"path": "total.npy", "member": member, "sha256": hashlib.sha256(data).hexdigest(),
                            "bytes": len(data), "level": level})
    return out.getvalue(), records


def seed(runs: int) -> list[dict[str, Any]]:
    """The published runs; returns each board entry's seeded figures (to reset between worker counts)."""
    import numpy as np
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage
    from django.utils import timezone

    from leaderboard.models import LeaderboardEntry
    from leaderboard.services import entry_snapshot
    from portal.accounts.models import User
    from portal.submissions.models import Submission, SubmissionEntry
    from scoring.aggregation import ScoredResult, aggregate
    from scoring.models import Instance, InstanceScore, ScoringRun
    from scoring.task_storage import reference_extract

    instance = Instance.objects.get(instance_id=INSTANCE)
    with tempfile.TemporaryDirectory() as tmp:
        total = float(np.load(reference_extract(instance, Path(tmp)) / "total_ref.npy")[0])
    owner = User.objects.create_user(email="bench-owner@example.org", password=None)
    now = timezone.now()
    provenance = {"agent": {"agent_name": "bench"}, "sandbox": {
        "requested_mode": "os", "effective_mode": "os", "enforcement_status": "fail_closed",
        "verification_status": "docker_container", "image_identity": "sha256:" + "0" * 64}}
    t0 = time.perf_counter()
    batch = 250
    for start in range(0, runs, batch):
        ks = range(start, min(start + batch, runs))
        stored = {k: bundle(k, total) for k in ks}
        subs = []
        for k in ks:
            name = default_storage.save(f"bench-regrade/run-{k}.tar.gz", ContentFile(stored[k][0]))
            subs.append(Submission(owner=owner, dataset_id="seed42", status="scored", archive=name,
                                   archive_sha256=hashlib.sha256(stored[k][0]).hexdigest(),
                                   archive_bytes=len(stored[k][0]), framework_version="0.2.0", agent="bench",
                                   model=f"model-{k}", effort="high", sandbox="os", scored_at=now))
        Submission.objects.bulk_create(subs)
        entries = [SubmissionEntry(submission=s, base_name=f"{INSTANCE}__{r['level']}", instance=instance,
                                   task_id=TASK, prompt_level=r["level"], result_status="completed",
                                   provenance=provenance, outputs=[{k2: v for k2, v in r.items() if k2 != "level"}])
                   for s, k in zip(subs, ks, strict=True) for r in stored[k][1]]
        SubmissionEntry.objects.bulk_create(entries)
        scorings = [ScoringRun(submission=s, number=1, status="complete", finished_at=now, aggregate=aggregate(
            ScoredResult(INSTANCE, TASK, level, 1, True, 0.0) for level in LEVELS)) for s in subs]
        ScoringRun.objects.bulk_create(scorings)
        by_sub = {s.id: run for s, run in zip(subs, scorings, strict=True)}
        InstanceScore.objects.bulk_create(
            InstanceScore(scoring_run=by_sub[e.submission_id], entry=e, outcome="scored", final_score=0.0,
                          max_score=100, percent=0.0, hard_gates_passed=True, engine_version="1.0.0",
                          task_revision=1, reference_sha256=instance.reference_sha256, sandbox_backend="bwrap")
            for e in entries)
        LeaderboardEntry.objects.bulk_create(
            LeaderboardEntry(submission=s, scoring_run=r, dataset_id="seed42", display_name=f"bench {s.model}",
                             owner=owner, agent=s.agent, model=s.model, effort=s.effort, sandbox=s.sandbox,
                             **entry_snapshot(s, r)) for s, r in zip(subs, scorings, strict=True))
        print(f"  seeded {ks[-1] + 1}/{runs} runs ({time.perf_counter() - t0:.0f} s)", flush=True)
    fields = ("scoring_run_id", "b1", "b2", "b3", "b4", "mean", "intervals", "instances_scored", "task_count",
              "tasks", "domains", "provenance", "scored_at")
    return [{"id": e["id"], **{f: e[f] for f in fields}} for e in LeaderboardEntry.objects.values("id", *fields)]


def reset(seeded: list[dict[str, Any]]) -> None:
    """Back to before the re-grade: the re-grade scorings gone, every entry as seeded."""
    from leaderboard.models import LeaderboardEntry, ModerationEvent
    from leaderboard.selectors import board_cache_invalidate
    from scoring.models import ScoringRun

    rows = {row["id"]: row for row in seeded}
    entries = list(LeaderboardEntry.objects.all())
    for entry in entries:
        for field, value in rows[entry.id].items():
            setattr(entry, field, value)
        entry.regrade = {}
    LeaderboardEntry.objects.bulk_update(entries, [*seeded[0].keys() - {"id"}, "regrade"], batch_size=500)
    ScoringRun.objects.filter(number__gt=1).delete()
    ModerationEvent.objects.all().delete()
    board_cache_invalidate()


def start_worker(processes: int, env: dict[str, str], log: Path) -> subprocess.Popen:
    celery = Path(sys.executable).parent / "celery"
    proc = subprocess.Popen([str(celery), "-A", "config", "worker", "-Q", "celery,proposals", "-c", str(processes),
                             "-n", f"bench-regrade-{processes}@%h", "--loglevel", "INFO"], cwd=REPO, env=env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while "ready." not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the worker did not start; see {log}")
        time.sleep(0.3)
    return proc


def stop_worker(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class BoardReader(threading.Thread):
    """Reads the public board page as a visitor does, twice a second (the board's own cache applies: every
    re-graded chunk retires it, so reads alternate between cold builds and cached pages)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.latencies: list[float] = []
        self.failures = 0
        self.stop = threading.Event()

    def run(self) -> None:
        from django.core.cache import cache
        from django.db import connection
        from django.test import Client

        client = Client()
        cache.clear()
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                ok = client.get("/leaderboard/?dataset=seed42", secure=True).status_code == 200
            except Exception:
                ok = False
            self.latencies.append(time.perf_counter() - started)
            self.failures += not ok
            self.stop.wait(0.5)
        connection.close()


def regrade_once(processes: int, results: int, env: dict[str, str], log_dir: Path) -> dict[str, Any]:
    from leaderboard.models import LeaderboardEntry
    from leaderboard.regrade import regrade_start
    from scoring.models import InstanceScore, Task

    worker = start_worker(processes, env, log_dir / f"worker-{processes}.log")
    reader = BoardReader()
    try:
        reader.start()
        started = time.perf_counter()
        marked = regrade_start(task=Task.objects.get(id=TASK))
        done, last = 0, -1
        while done < len(marked):
            time.sleep(1)
            done = LeaderboardEntry.objects.filter(regrade__state="regraded").count()
            if done != last and done % 250 < 10:
                print(f"    {done}/{len(marked)} runs re-graded ({time.perf_counter() - started:.0f} s)", flush=True)
            last = done
            if worker.poll() is not None:
                raise SystemExit("the worker died")
        seconds = time.perf_counter() - started
    finally:
        reader.stop.set()
        reader.join()
        stop_worker(worker)
    means = set(LeaderboardEntry.objects.values_list("mean", flat=True))
    kept = InstanceScore.objects.filter(scoring_run__number=1).count()
    lat = sorted(reader.latencies)
    return {"workers": processes, "results": results, "seconds": round(seconds, 1),
            "results_per_minute": round(results / seconds * 60), "new_means": sorted(means),
            "old_scores_kept": kept, "board_reads": len(lat), "board_failures": reader.failures,
            "board_p50_ms": round(statistics.median(lat) * 1000),
            "board_p99_ms": round(lat[int(len(lat) * .99)] * 1000),
            "board_max_ms": round(lat[-1] * 1000)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=int, default=10_000)
    parser.add_argument("--workers", default="1,2", help="worker process counts to measure, in turn")
    parser.add_argument("--batch", type=int, default=50, help="runs per sandbox (ASIBENCH_REGRADE_BATCH_RUNS)")
    parser.add_argument("--database-url", default=os.environ.get(
        "REGRADE_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/asibench_regrade_bench"))
    args = parser.parse_args()
    var = Path(tempfile.mkdtemp(prefix="bench-regrade-", dir=REPO / "var"))
    env = dict(os.environ, DATABASE_URL=args.database_url, DEBUG="0", SECRET_KEY="bench-" + "k" * 60,
               ASIBENCH_VAR_DIR=str(var), ALLOWED_HOSTS="testserver,127.0.0.1", LOG_LEVEL="WARNING",
               ASIBENCH_PUBLISHED_TASKS_DIR=str(var / "published"), ASIBENCH_REGRADE_BATCH_RUNS=str(args.batch),
               EMAIL_BACKEND="django.core.mail.backends.dummy.EmailBackend",
               CELERY_BROKER_URL=os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/14"))
    os.environ.update(env)
    ensure_database(args.database_url)
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    from scoring.task_loading import catalog_load

    t0 = time.perf_counter()
    assert not catalog_load(tasks_root=task_root(var, buggy=True), dataset_names=("seed42",)).failures
    seeded = seed(args.results // len(LEVELS))
    assert not catalog_load(tasks_root=task_root(var, buggy=False), dataset_names=("seed42",)).failures
    print(f"seeded {len(seeded)} published runs x 4 = {len(seeded) * 4} stored results, the fix published as "
          f"revision 2, in {time.perf_counter() - t0:.0f} s", flush=True)
    figures = []
    try:
        for processes in [int(w) for w in args.workers.split(",")]:
            reset(seeded)
            print(f"re-grading with {processes} worker process(es), {args.batch} runs per sandbox ...", flush=True)
            figures.append(regrade_once(processes, len(seeded) * 4, env, var))
            print(json.dumps(figures[-1]), flush=True)
    finally:
        from django.db import connections

        connections.close_all()
    for row in figures:
        ok = row["new_means"] == [100.0] and row["old_scores_kept"] == len(seeded) * 4
        at_rate = 10_000 / row["results_per_minute"]
        print(f"workers={row['workers']}: {row['results']} results in {row['seconds']} s = "
              f"{row['results_per_minute']} results/min (10,000 at this rate: {at_rate:.1f} min, target 10 min: "
              f"{'met' if at_rate <= 10 else 'NOT met'}); board read {row['board_reads']} times, "
              f"p50 {row['board_p50_ms']} ms, p99 {row['board_p99_ms']} ms, {row['board_failures']} failed; "
              f"outcome {'checked' if ok else 'WRONG'}")
    if len(figures) == 2:
        print(f"two workers / one worker: {figures[1]['results_per_minute'] / figures[0]['results_per_minute']:.2f}x")
    shutil.rmtree(var, ignore_errors=True)


if __name__ == "__main__":
    main()
