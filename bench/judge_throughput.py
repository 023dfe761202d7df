"""Judge throughput: the worker's judge calls against a local endpoint that takes 300 ms per reply.

    .venv/bin/python bench/judge_throughput.py                  # 13 judge tasks x 4 levels x num_judges 3
    .venv/bin/python bench/judge_throughput.py --cap 4 --cap 16 --latency 0.3

Builds the engine's real requests (an llm_judge with num_judges 3 on a report per task and level),
records them as JudgeCall rows of one scoring run, and has the worker's dispatcher
(`scoring.judge_services.judge_calls_answer`: claims in the database, the in-flight cap, the token
budgets, the SDK client) answer them: once with ASIBENCH_JUDGE_MAX_IN_FLIGHT=1 (serial) and once per
--cap. Prints wall time and calls/s of each, and the speed-up over serial. The database is a fresh
SQLite file under a temp dir unless --database-url names a PostgreSQL one.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def build_requests(work: Path, tasks: int, levels: int, judges: int) -> list[list[dict]]:
    """Per result, the engine's judge requests (what the scoring sandbox hands back)."""
    import yaml

    from scoring.engine import score_instance
    from scoring.engine.judge_calls import requests_expanded

    task_dir = work / "tasks" / "materials" / "bench_judged"
    task_dir.mkdir(parents=True)
    (task_dir / "task_meta.yaml").write_text(yaml.safe_dump({"id": "materials.bench_judged", "name": "bench",
                                                             "version": "1.0", "status": "test",
                                                             "domain": "materials"}))
    (task_dir / "task_eval.yaml").write_text(yaml.safe_dump({"task_id": "materials.bench_judged", "evaluation": {
        "scoring": [{"scorer": "llm_judge", "weight": 30, "config": {
            "pred_file": "report.md", "ref_file": "report_ref.md", "num_judges": judges,
            "model": "google/gemini-3.5-flash", "rubric": "Score 0-10: is the peak where the reference says?"}}]}}))
    ref = work / "ref"
    ref.mkdir()
    (ref / "report_ref.md").write_text("The peak is at 3.0 eV, Gaussian width 0.2 eV.\n")
    per_result = []
    for task in range(tasks):
        for level in range(levels):
            pred = work / f"pred-{task}-{level}"
            pred.mkdir()
            (pred / "report.md").write_text(f"JUDGE-SCRIPT:well:{(task + level) % 11} Task {task}, level b{level + 1}: "
                                            + "the peak sits near 3 eV; the line is Gaussian. " * 40)
            result = score_instance(task_dir, pred, ref, {}, f"b{level + 1}")
            per_result.append(requests_expanded(result["judge_requests"]))
    return per_result


def setup_django(database_url: str | None, var_dir: Path) -> None:
    os.environ.update({"ASIBENCH_VAR_DIR": str(var_dir), "DEBUG": "1", "LOG_LEVEL": "WARNING",
                       "DJANGO_SETTINGS_MODULE": "config.settings"})
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    else:
        os.environ.pop("DATABASE_URL", None)
    sys.path.insert(0, str(REPO))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def scoring_run(results: int):  # noqa: ANN201
    """One submission with `results` entries and its open scoring run (the rows JudgeCall points at)."""
    from django.utils import timezone

    from portal.accounts.models import User
    from portal.submissions.models import Submission, SubmissionEntry
    from scoring.models import Dataset, Instance, ScoringRun, Task

    stamp = f"{time.time_ns()}"
    user = User.objects.create_user(email=f"bench-{stamp}@bench.example", password="x" * 20)
    dataset, _ = Dataset.objects.get_or_create(name="seed42", defaults={"seed": 42, "official": True})
    task, _ = Task.objects.get_or_create(id="materials.bench_judged", defaults={
        "domain": "materials", "name": "bench", "version": "1.0", "status": "final", "source_hash": "0" * 64,
        "source_dir": "-"})
    instance, _ = Instance.objects.get_or_create(instance_id="materials.bench_judged__seed42", defaults={
        "dataset": dataset, "task": task, "task_revision": 1, "task_source_hash": "0" * 64, "input_archive": "-",
        "input_sha256": "0" * 64, "input_bytes": 0, "reference_archive": "-", "reference_sha256": "0" * 64,
        "generator_hash": "0" * 64})
    submission = Submission.objects.create(owner=user, dataset=dataset, status=Submission.Status.SCORING,
                                           archive="-", archive_sha256=stamp.ljust(64, "0")[:64], archive_bytes=0,
                                           confirmed_at=timezone.now())
    entries = SubmissionEntry.objects.bulk_create([
        SubmissionEntry(submission=submission, base_name=f"r{i}", instance=instance, task_id=task.id,
                        prompt_level=f"b{i % 4 + 1}", attempt=i // 4 + 1) for i in range(results)])
    return ScoringRun.objects.create(submission=submission, number=1), entries


def measure(cap: int, per_result: list[list[dict]], endpoint_url: str, work: Path) -> tuple[float, int]:
    from django.conf import settings

    from scoring import judge_services
    from scoring.models import JudgeCall

    settings.JUDGE_MAX_IN_FLIGHT = cap
    run, entries = scoring_run(len(per_result))
    for entry, requests in zip(entries, per_result, strict=True):
        judge_services.judge_requests_record(run=run, entry_id=entry.id, requests=requests)
    staged = {entry.id: (work, work) for entry in entries}
    started = time.perf_counter()
    judge_services.judge_calls_answer(run=run, staged=staged, scratch=work)
    wall = time.perf_counter() - started
    answered = JudgeCall.objects.filter(scoring_run=run, status="answered").count()
    return wall, answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=13)
    parser.add_argument("--levels", type=int, default=4)
    parser.add_argument("--judges", type=int, default=3, help="num_judges")
    parser.add_argument("--latency", type=float, default=0.3, help="seconds the endpoint takes per reply")
    parser.add_argument("--cap", type=int, action="append", help="ASIBENCH_JUDGE_MAX_IN_FLIGHT values (default 8, 16)")
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL"))
    args = parser.parse_args()
    caps = args.cap or [8, 16]

    with tempfile.TemporaryDirectory(prefix="judge-bench-") as tmp:
        work = Path(tmp)
        setup_django(args.database_url, work / "var")
        from tests.judge_endpoint import JudgeEndpoint

        per_result = build_requests(work, args.tasks, args.levels, args.judges)
        calls = sum(len(r) for r in per_result)
        with JudgeEndpoint(latency=args.latency) as endpoint:
            os.environ.update({"BENCH_JUDGE_KEY": "sk-bench"})
            from django.conf import settings

            settings.JUDGE_API_BASE, settings.JUDGE_API_KEY_ENV = endpoint.url + "/v1", "BENCH_JUDGE_KEY"
            settings.JUDGE_API_PROTOCOL = "openai"
            print(f"{args.tasks} tasks x {args.levels} levels x num_judges {args.judges} = {calls} judge calls; "
                  f"endpoint latency {args.latency * 1000:.0f} ms")
            measure(1, per_result[:1], endpoint.url, work)  # warm-up: the SDK's import and first connection
            serial, answered = measure(1, per_result, endpoint.url, work)
            print(f"  serial (cap 1):  {serial:7.2f} s  {calls / serial:6.2f} calls/s  ({answered} answered; "
                  f"latency floor {calls * args.latency:.1f} s)")
            for cap in caps:
                endpoint.max_in_flight = 0
                wall, answered = measure(cap, per_result, endpoint.url, work)
                print(f"  cap {cap:<3}         {wall:7.2f} s  {calls / wall:6.2f} calls/s  ({answered} answered; "
                      f"at most {endpoint.max_in_flight} in flight; {serial / wall:.1f}x serial)")


if __name__ == "__main__":
    main()
